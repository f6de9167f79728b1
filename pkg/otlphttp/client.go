// Package otlphttp sends OTLP profiles export requests over OTLP/HTTP
// (protobuf, gzip) and reads the answer, partial success included. A
// request made under a span carries its W3C traceparent.
package otlphttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// Client posts export requests to one endpoint.
type Client struct {
	// Endpoint is the full URL, e.g. http://127.0.0.1:4318/v1development/profiles.
	Endpoint string
	// Authorization, when set, is sent as the Authorization header.
	Authorization string
	HTTP          *http.Client
}

// New returns a client for an OTLP/HTTP base URL (the profiles path is
// added unless the URL already ends with it).
func New(baseURL, authorization string) *Client {
	endpoint := strings.TrimRight(baseURL, "/")
	if !strings.HasSuffix(endpoint, "/v1development/profiles") {
		endpoint += "/v1development/profiles"
	}
	transport := http.DefaultTransport.(*http.Transport).Clone() // net/http's default is an *http.Transport
	transport.DialContext = selftrace.DialWithoutLabels((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	return &Client{Endpoint: endpoint, Authorization: authorization, HTTP: &http.Client{Timeout: 60 * time.Second, Transport: transport}}
}

// StatusError is a non-200 answer.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Message) }

// Export sends a request and returns the server's response.
func (c *Client) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	raw, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint, &body)
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("Content-Encoding", "gzip")
	hreq.Header.Set("OTLP-Profiles-Development-Version", "1")
	if c.Authorization != "" {
		hreq.Header.Set("Authorization", c.Authorization)
	}
	selftrace.InjectHTTP(ctx, hreq.Header)
	resp, err := c.HTTP.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("post to %s: %w", c.Endpoint, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var st spb.Status
		msg := strings.TrimSpace(string(answer))
		if proto.Unmarshal(answer, &st) == nil && st.GetMessage() != "" {
			msg = st.GetMessage()
		}
		return nil, &StatusError{Code: resp.StatusCode, Message: msg}
	}
	var out collectorpb.ExportProfilesServiceResponse
	if err := proto.Unmarshal(answer, &out); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	return &out, nil
}
