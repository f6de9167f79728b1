package chembed_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

// Each safety test fails when the rule it covers is removed: the statement
// it sends would otherwise succeed, or the limit would not bite.

// embedded starts an extra HTTP server on the shared engine with a changed
// configuration and returns its base URL.
func embedded(t *testing.T, change func(*chembed.Config)) string {
	t.Helper()
	srv := chtest.Get(t)
	if srv.Engine == nil {
		t.Skip("safety rules belong to the embedded server; " + chtest.URLEnv + " names an external one")
	}
	cfg := srv.Engine.Config()
	cfg.ListenAddress = "127.0.0.1:0"
	if change != nil {
		change(&cfg)
	}
	s, err := chembed.NewServer(srv.Engine, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return "http://" + ln.Addr().String() + "/"
}

type answer struct {
	status int
	code   string
	body   string
}

func send(t *testing.T, method, rawURL string, body io.Reader, header http.Header) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, rawURL, body)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, code: resp.Header.Get("X-ClickHouse-Exception-Code"), body: string(b)}
}

func post(t *testing.T, base, sql string) answer {
	t.Helper()
	return send(t, http.MethodPost, base, strings.NewReader(sql), nil)
}

func requireRefused(t *testing.T, a answer, status int, code string) {
	t.Helper()
	require.Equal(t, status, a.status, "body: %s", a.body)
	require.Equal(t, code, a.code, "body: %s", a.body)
	require.Contains(t, a.body, "Code: "+code+".")
}

func TestSafetyRequiresPasswordOffLoopback(t *testing.T) {
	cfg := chembed.DefaultConfig()
	cfg.DataDir = t.TempDir()
	host, _, err := net.SplitHostPort(cfg.ListenAddress)
	require.NoError(t, err)
	require.True(t, net.ParseIP(host).IsLoopback(), "the default listen address is loopback")
	require.NoError(t, cfg.Validate())

	cfg.ListenAddress = "0.0.0.0:8123"
	require.ErrorContains(t, cfg.Validate(), "password is required")
	cfg.Password = "x"
	require.NoError(t, cfg.Validate())
}

func TestSafetyAuthentication(t *testing.T) {
	base := embedded(t, func(c *chembed.Config) {
		c.User = "flame"
		c.Password = secret.String("s3cret")
	})
	requireRefused(t, post(t, base, "SELECT 1"), http.StatusUnauthorized, "194")
	requireRefused(t, send(t, http.MethodPost, base, strings.NewReader("SELECT 1"),
		http.Header{"X-Clickhouse-User": {"flame"}, "X-Clickhouse-Key": {"wrong"}}), http.StatusForbidden, "516")
	requireRefused(t, send(t, http.MethodPost, base, strings.NewReader("SELECT 1"),
		http.Header{"X-Clickhouse-User": {"other"}, "X-Clickhouse-Key": {"s3cret"}}), http.StatusForbidden, "516")

	ok := send(t, http.MethodPost, base, strings.NewReader("SELECT 1"),
		http.Header{"X-Clickhouse-User": {"flame"}, "X-Clickhouse-Key": {"s3cret"}})
	require.Equal(t, http.StatusOK, ok.status, ok.body)
	ok = send(t, http.MethodPost, base+"?user=flame&password=s3cret", strings.NewReader("SELECT 1"), nil)
	require.Equal(t, http.StatusOK, ok.status, ok.body)

	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := clickhouse.Open(&clickhouse.Options{
		Protocol: clickhouse.HTTP, Addr: []string{u.Host},
		Auth: clickhouse.Auth{Username: "flame", Password: "s3cret"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.Ping(context.Background()), "basic auth from clickhouse-go")
}

func TestSafetyRejectsMultiStatements(t *testing.T) {
	base := embedded(t, nil)
	db := chtest.Get(t).NewDatabase(t)
	requireRefused(t, post(t, base, "SELECT 1; CREATE TABLE "+db+".sneaky (a UInt8) ENGINE = Memory"), http.StatusBadRequest, "62")
	exists := post(t, base, "EXISTS TABLE "+db+".sneaky")
	require.Equal(t, "0\n", exists.body, "the second statement must not have run")
}

func TestSafetyRejectsHostAccess(t *testing.T) {
	base := embedded(t, nil)
	dir := t.TempDir()
	outfile := filepath.Join(dir, "out.tsv")
	for _, sql := range []string{
		"SELECT * FROM file('/etc/hostname', 'LineAsString')",
		"SELECT file('/etc/hostname')",
		"SELECT * FROM `file`/* */ ('/etc/hostname', 'LineAsString')",
		"SELECT * FROM url('http://127.0.0.1:1/', 'CSV', 'a String')",
		"SELECT * FROM remote('127.0.0.1:1', system.one)",
		"SELECT 1 INTO OUTFILE '" + outfile + "'",
		"INSERT INTO FUNCTION file('" + outfile + "', 'TSV', 'a UInt8') VALUES (1)",
		"CREATE TABLE default.f (a String) ENGINE = File(TSV)",
		"CREATE DATABASE fs ENGINE = Filesystem('/etc')",
		"SYSTEM SHUTDOWN",
	} {
		t.Run(sql, func(t *testing.T) {
			requireRefused(t, post(t, base, sql), http.StatusForbidden, "497")
		})
	}
	_, err := os.Stat(outfile)
	require.True(t, os.IsNotExist(err), "nothing was written to the host")
	require.Equal(t, "1\n", post(t, base, "SELECT 1").body, "the engine is still up after SYSTEM SHUTDOWN was refused")
}

func TestSafetyResetsSessionBetweenRequests(t *testing.T) {
	base := embedded(t, nil)
	db := chtest.Get(t).NewDatabase(t)
	conns := chtest.Get(t).Engine.Config().Connections
	check := func(t *testing.T) {
		t.Helper()
		// Enough requests to visit every pooled connection.
		for range 2 * conns {
			a := post(t, base, "SELECT getSetting('max_threads') = 1, getSetting('log_comment'), currentDatabase()")
			require.Equal(t, "0\t\tdefault\n", a.body)
		}
	}
	require.Equal(t, "1\n", send(t, http.MethodPost, base+"?max_threads=1&log_comment=leak",
		strings.NewReader("SELECT getSetting('max_threads') = 1"), nil).body)
	check(t)
	for range conns {
		require.Equal(t, http.StatusOK, post(t, base, "SET max_threads = 1, log_comment = 'leak'").status)
		require.Equal(t, http.StatusOK, post(t, base, "USE "+db).status)
	}
	check(t)
}

func TestSafetyBoundsRequestBody(t *testing.T) {
	base := embedded(t, func(c *chembed.Config) { c.MaxBodyBytes = 4096 })
	db := chtest.Get(t).NewDatabase(t)
	require.Equal(t, http.StatusOK, post(t, base, "CREATE TABLE "+db+".b (s String) ENGINE = MergeTree ORDER BY s").status)
	data := strings.Repeat(strings.Repeat("x", 99)+"\n", 100) // 10,000 bytes
	a := send(t, http.MethodPost, base+"?query="+url.QueryEscape("INSERT INTO "+db+".b FORMAT TSV"), strings.NewReader(data), nil)
	requireRefused(t, a, http.StatusRequestEntityTooLarge, "229")
	require.Equal(t, "0\n", post(t, base, "SELECT count() FROM "+db+".b").body, "nothing of the refused body was inserted")
}

func TestSafetyBoundsSpool(t *testing.T) {
	base := embedded(t, func(c *chembed.Config) { c.MaxSpoolBytes = 1024 })
	db := chtest.Get(t).NewDatabase(t)
	require.Equal(t, http.StatusOK, post(t, base, "CREATE TABLE "+db+".s (s String) ENGINE = MergeTree ORDER BY s").status)
	insert := base + "?query=" + url.QueryEscape("INSERT INTO "+db+".s FORMAT TSV")
	a := send(t, http.MethodPost, insert, strings.NewReader(strings.Repeat("y\n", 5000)), nil)
	requireRefused(t, a, http.StatusServiceUnavailable, "243")
	a = send(t, http.MethodPost, insert, strings.NewReader("small\n"), nil)
	require.Equal(t, http.StatusOK, a.status, "the quota is returned after a refusal: %s", a.body)
	require.Equal(t, "1\n", post(t, base, "SELECT count() FROM "+db+".s").body)
}

func TestSafetyBoundsQueryText(t *testing.T) {
	base := embedded(t, func(c *chembed.Config) { c.MaxQueryBytes = 1024 })
	requireRefused(t, post(t, base, "SELECT '"+strings.Repeat("q", 2048)+"'"), http.StatusRequestEntityTooLarge, "229")
	require.Equal(t, http.StatusOK, post(t, base, "SELECT 1").status)
}

func TestSafetyBoundsExecutionTime(t *testing.T) {
	base := embedded(t, func(c *chembed.Config) { c.MaxExecutionTime = time.Second })
	slow := "SELECT count() FROM numbers_mt(100000000000)"
	start := time.Now()
	requireRefused(t, post(t, base, slow), http.StatusRequestTimeout, "159")
	require.Less(t, time.Since(start), 20*time.Second)
	// A client cannot lift the cap, neither by URL setting nor from SQL.
	requireRefused(t, send(t, http.MethodPost, base+"?max_execution_time=3600", strings.NewReader(slow), nil), http.StatusRequestTimeout, "159")
	requireRefused(t, post(t, base, slow+" SETTINGS max_execution_time = 3600"), http.StatusForbidden, "497")
}

func TestSafetyPoolQueueTimeout(t *testing.T) {
	base := embedded(t, func(c *chembed.Config) { c.QueueTimeout = 200 * time.Millisecond })
	conns := chtest.Get(t).Engine.Config().Connections
	var wg sync.WaitGroup
	results := make([]answer, conns)
	for i := range conns {
		wg.Go(func() { results[i] = post(t, base, "SELECT sleep(2)") })
	}
	time.Sleep(500 * time.Millisecond) // let the sleeps occupy every connection
	start := time.Now()
	requireRefused(t, post(t, base, "SELECT 1"), http.StatusServiceUnavailable, "202")
	waited := time.Since(start)
	require.GreaterOrEqual(t, waited, 200*time.Millisecond)
	require.Less(t, waited, 1500*time.Millisecond, "refused after the queue timeout, not after the busy queries")
	wg.Wait()
	for _, r := range results {
		require.Equal(t, http.StatusOK, r.status, r.body)
	}
}

func TestSafetyGetIsReadOnly(t *testing.T) {
	base := embedded(t, nil)
	db := chtest.Get(t).NewDatabase(t)
	a := send(t, http.MethodGet, base+"?query="+url.QueryEscape("CREATE TABLE "+db+".g (a UInt8) ENGINE = Memory"), nil, nil)
	requireRefused(t, a, http.StatusInternalServerError, "164")
	a = send(t, http.MethodGet, base+"?query="+url.QueryEscape("SELECT 40 + 2"), nil, nil)
	require.Equal(t, "42\n", a.body)
	a = send(t, http.MethodPost, base+"?readonly=1", strings.NewReader("CREATE TABLE "+db+".g (a UInt8) ENGINE = Memory"), nil)
	require.Equal(t, "164", a.code)
}

func TestSafetyShutdownDrainsRunningRequests(t *testing.T) {
	srv := chtest.Get(t)
	if srv.Engine == nil {
		t.Skip("drain behaviour belongs to the embedded server")
	}
	s, err := chembed.NewServer(srv.Engine, srv.Engine.Config(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()
	base := "http://" + ln.Addr().String() + "/"

	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Post(base, "text/plain", strings.NewReader("SELECT sleep(1), 'finished'"))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{body: string(b), err: err}
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, s.Shutdown(context.Background()))
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, "0\tfinished\n", r.body, "the in-flight query completed during shutdown")
	resp, err := http.Post(base, "text/plain", strings.NewReader("SELECT 1"))
	if err == nil {
		_ = resp.Body.Close()
	}
	require.Error(t, err, "no new requests after shutdown")
}

func TestErrorCodesMatchEngine(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	for code, name := range chembed.StatusTableNames() {
		var got string
		require.NoError(t, conn.QueryRow(context.Background(), fmt.Sprintf("SELECT errorCodeToName(%d)", code)).Scan(&got))
		require.Equal(t, name, got, "code %d", code)
	}
}
