package chclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// NativeInserter sends inserts whose data is already encoded in
// ClickHouse's Native format, over ClickHouse's HTTP interface. The ingest
// writer encodes its hottest insert itself (see package writer); this is
// the transport for it. It works against the embedded engine and any
// ClickHouse server's HTTP port. An insert made under a span carries its
// W3C traceparent, so the engine's span continues the writer's trace.
type NativeInserter struct {
	endpoint string
	user     string
	password string
	client   *http.Client
}

// ErrNotHTTP is returned for a server not reached over HTTP: Native-format
// inserts travel over ClickHouse's HTTP interface.
var ErrNotHTTP = errors.New("native-format inserts need protocol http")

// NewNativeInserter returns an inserter for the config's server, which
// must be reached over HTTP.
func NewNativeInserter(c Config) (*NativeInserter, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Protocol != ProtocolHTTP {
		return nil, ErrNotHTTP
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = c.MaxOpenConns
	transport.MaxConnsPerHost = c.MaxOpenConns
	// Connections outlive the span that opened them: their goroutines must
	// not carry its pprof labels.
	transport.DialContext = selftrace.DialWithoutLabels(transport.DialContext)
	scheme := "http"
	if c.Secure {
		tlsCfg, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		transport.TLSClientConfig = tlsCfg
		scheme = "https"
	}
	if c.DialTimeout > 0 {
		transport.TLSHandshakeTimeout = c.DialTimeout
	}
	return &NativeInserter{
		endpoint: scheme + "://" + c.Address + "/",
		user:     c.Username,
		password: c.Password.Value(),
		client:   &http.Client{Transport: transport},
	}, nil
}

// Exception is an error ClickHouse answered with.
type Exception struct {
	// Code is ClickHouse's error code (0 when the server sent none).
	Code int
	// Status is the HTTP status.
	Status int
	// Message is the server's text.
	Message string
}

func (e *Exception) Error() string {
	return fmt.Sprintf("clickhouse: HTTP %d, code %d: %s", e.Status, e.Code, e.Message)
}

// Insert runs `<insert> FORMAT Native` (insert is "INSERT INTO t (cols)")
// with data as the Native-format body, and the given settings. It returns
// once ClickHouse has committed the data, or with an error.
func (n *NativeInserter) Insert(ctx context.Context, insert string, settings map[string]string, data []byte) error {
	q := url.Values{"query": {insert + " FORMAT Native"}}
	for k, v := range settings {
		q.Set(k, v)
	}
	if dl, ok := ctx.Deadline(); ok {
		// Let the server give up too, as clickhouse-go does.
		if secs := int64(time.Until(dl).Seconds()); secs > 0 {
			q.Set("max_execution_time", strconv.FormatInt(secs+1, 10))
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.endpoint+"?"+q.Encode(), bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("build insert request: %w", err)
	}
	req.SetBasicAuth(n.user, n.password)
	req.Header.Set("Content-Type", "application/octet-stream")
	selftrace.InjectHTTP(ctx, req.Header)
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("send insert: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("read insert answer: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	code, _ := strconv.Atoi(resp.Header.Get("X-ClickHouse-Exception-Code"))
	return &Exception{Code: code, Status: resp.StatusCode, Message: strings.TrimSpace(string(body))}
}

// Close releases idle connections.
func (n *NativeInserter) Close() {
	n.client.CloseIdleConnections()
}
