package receiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// symbolsEnv is a receiver serving the symbols endpoint over a fresh
// database of the test engine.
type symbolsEnv struct {
	*env
	base string
}

func newSymbolsEnv(t *testing.T, change func(*Config), maxBytes int64) *symbolsEnv {
	t.Helper()
	direct := chtest.Get(t).Open(t)
	var b [5]byte
	_, _ = rand.Read(b[:])
	tables := schema.DefaultConfig()
	tables.Database = "recvsym_" + hex.EncodeToString(b[:])
	tables.Retention = schema.Retention{}
	m, err := schema.NewMigrator(tables, direct)
	require.NoError(t, err)
	_, err = m.Migrate(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Exec(context.Background(), "DROP DATABASE IF EXISTS "+tables.Database) })

	var native writer.NativeInserter
	var symNative symbols.NativeInserter
	if n := chtest.Get(t).NativeInserter(t); n != nil {
		native, symNative = n, n
	}
	reg := prometheus.NewRegistry()
	log := slog.New(slog.DiscardHandler)
	wcfg := writer.DefaultConfig()
	wcfg.FlushInterval = 50 * time.Millisecond
	w, err := writer.New(wcfg, tables, direct, native, log, reg)
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.RequestTimeout = 5 * time.Second
	if change != nil {
		change(&cfg)
	}
	cfg.GRPCListenAddress, cfg.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	r, err := New(cfg, w, func(ctx context.Context) error { return direct.Ping(ctx) }, log, reg)
	require.NoError(t, err)
	r.HandleSymbols(symbols.NewStore(tables, direct, symNative), SymbolsOptions{MaxBytes: maxBytes, Timeout: time.Minute, TempDir: t.TempDir()})
	r.Start()
	t.Cleanup(func() {
		r.Stop()
		_ = w.Close(context.Background())
	})
	return &symbolsEnv{env: &env{r: r, conn: direct, tables: tables}, base: "http://" + r.HTTPAddress()}
}

type uploadAnswer struct {
	status int
	body   map[string]any
}

func (e *symbolsEnv) put(t *testing.T, buildID, auth string, body io.Reader, headers ...string) uploadAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, e.base+SymbolsPathPrefix+buildID, body)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := uploadAnswer{status: resp.StatusCode}
	require.NoError(t, json.Unmarshal(raw, &out.body), "answer %s", raw)
	return out
}

// storedBuildIDs lists the build ids stored per tenant.
func (e *symbolsEnv) storedBuildIDs(t *testing.T) map[string][]string {
	t.Helper()
	rows, err := e.conn.Query(t.Context(), "SELECT TenantId, groupArray(BuildId) FROM "+e.tables.Qualified(schema.Executables)+" GROUP BY TenantId")
	require.NoError(t, err)
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var tenant string
		var ids []string
		require.NoError(t, rows.Scan(&tenant, &ids))
		out[tenant] = ids
	}
	require.NoError(t, rows.Err())
	var n uint64
	require.NoError(t, e.conn.QueryRow(t.Context(), "SELECT count() FROM "+e.tables.Qualified(schema.Symbols)).Scan(&n))
	if len(out) == 0 {
		require.Zero(t, n, "no ranges without an executable row")
	}
	return out
}

// stillServes checks that the receiver answers OTLP exports and /ready.
func (e *symbolsEnv) stillServes(t *testing.T, auth string) {
	t.Helper()
	req, _ := generated(7)
	payload, err := proto.Marshal(req)
	require.NoError(t, err)
	hreq, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.base+ProfilesPath, bytes.NewReader(payload))
	require.NoError(t, err)
	hreq.Header.Set("Content-Type", contentProtobuf)
	if auth != "" {
		hreq.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(hreq)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ready, err := http.Get(e.base + "/ready")
	require.NoError(t, err)
	_ = ready.Body.Close()
	require.Equal(t, http.StatusOK, ready.StatusCode)
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// TestSymbolsUploadWithAuth: uploads are authenticated as OTLP exports
// are and stored for the credential's tenant only; every bad request gets
// its status and a message, stores nothing, and the service keeps
// serving.
func TestSymbolsUploadWithAuth(t *testing.T) {
	nativebin.Require(t, "gcc", "objcopy")
	e := newSymbolsEnv(t, func(c *Config) {
		c.Auth.Enabled = true
		c.Auth.Tokens = []TokenCredential{{Token: secret.String("token-a"), Tenant: "team-a"}, {Token: secret.String("token-b"), Tenant: "team-b"}}
	}, 4<<20)
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	good := fileBytes(t, bin.Path)
	noID := fileBytes(t, nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, NoBuildID: true}).Path)
	strippedNoSyms := fileBytes(t, nativebin.Stripped(t, bin).Path)
	otherID := strings.Repeat("ab", 20)

	for _, tc := range []struct {
		name    string
		buildID string
		auth    string
		body    []byte
		headers []string
		status  int
		message string
	}{
		{"no-credentials", bin.BuildID, "", good, nil, http.StatusUnauthorized, "credentials"},
		{"wrong-token", bin.BuildID, "Bearer nope", good, nil, http.StatusUnauthorized, "credentials"},
		{"not-elf", bin.BuildID, "Bearer token-a", []byte("#!/bin/sh\necho hi\n"), nil, http.StatusUnprocessableEntity, "not an ELF file"},
		{"truncated", bin.BuildID, "Bearer token-a", good[:len(good)/2], nil, http.StatusUnprocessableEntity, "truncated"},
		{"no-build-id", otherID, "Bearer token-a", noID, nil, http.StatusUnprocessableEntity, "no build id"},
		{"mismatch", otherID, "Bearer token-a", good, nil, http.StatusBadRequest, "build id mismatch"},
		{"no-symbols", bin.BuildID, "Bearer token-a", strippedNoSyms, nil, http.StatusUnprocessableEntity, "no symbols"},
		{"empty", bin.BuildID, "Bearer token-a", nil, nil, http.StatusBadRequest, "empty"},
		{"bad-build-id", "a%20b", "Bearer token-a", good, nil, http.StatusBadRequest, "character"},
		{"no-build-id-in-path", "", "Bearer token-a", good, nil, http.StatusBadRequest, "build id"},
		{"over-the-limit", bin.BuildID, "Bearer token-a", make([]byte, 4<<20+1), nil, http.StatusRequestEntityTooLarge, "limit"},
		{
			"gzip-bomb-over-the-limit", bin.BuildID, "Bearer token-a", gzipped(t, make([]byte, 5<<20)),
			[]string{"Content-Encoding", "gzip"},
			http.StatusRequestEntityTooLarge, "limit",
		},
		{"bad-gzip", bin.BuildID, "Bearer token-a", good, []string{"Content-Encoding", "gzip"}, http.StatusBadRequest, "gzip"},
		{"bad-encoding", bin.BuildID, "Bearer token-a", good, []string{"Content-Encoding", "br"}, http.StatusUnsupportedMediaType, "Content-Encoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ans := e.put(t, tc.buildID, tc.auth, bytes.NewReader(tc.body), tc.headers...)
			require.Equal(t, tc.status, ans.status, "%v", ans.body)
			require.Contains(t, ans.body["error"], tc.message)
		})
	}
	t.Run("nothing-stored", func(t *testing.T) {
		require.Empty(t, e.storedBuildIDs(t))
	})
	t.Run("counted", func(t *testing.T) {
		got := map[string]float64{}
		for _, o := range []string{"unauthenticated", "unprocessable", "bad_request", "too_large", "content_encoding"} {
			var m dto.Metric
			require.NoError(t, e.r.metrics.requests.WithLabelValues("symbols", o).Write(&m))
			got[o] = m.GetCounter().GetValue()
		}
		require.Equal(t, map[string]float64{"unauthenticated": 2, "unprocessable": 4, "bad_request": 5, "too_large": 2, "content_encoding": 1}, got)
	})
	t.Run("method", func(t *testing.T) {
		resp, err := http.Post(e.base+SymbolsPathPrefix+bin.BuildID, "application/octet-stream", bytes.NewReader(good))
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		require.Equal(t, http.MethodPut, resp.Header.Get("Allow"))
	})
	e.stillServes(t, "Bearer token-a")

	t.Run("stored-per-tenant", func(t *testing.T) {
		ans := e.put(t, strings.ToUpper(bin.BuildID)+"?file_name=prog", "Bearer token-a", bytes.NewReader(good))
		require.Equal(t, http.StatusOK, ans.status, "%v", ans.body)
		require.Equal(t, bin.BuildID, ans.body["build_id"])
		require.Equal(t, "prog", ans.body["file_name"])
		require.Equal(t, true, ans.body["dwarf"])
		require.Equal(t, true, ans.body["symtab"])
		require.Positive(t, ans.body["ranges"])
		// The same file gzip-compressed, for the other tenant.
		ans = e.put(t, bin.BuildID, "Bearer token-b", bytes.NewReader(gzipped(t, good)), "Content-Encoding", "gzip")
		require.Equal(t, http.StatusOK, ans.status, "%v", ans.body)
		require.Equal(t, bin.BuildID, ans.body["file_name"], "named by its build id without file_name")
		stored := e.storedBuildIDs(t)
		require.Equal(t, map[string][]string{"team-a": {bin.BuildID}, "team-b": {bin.BuildID}}, stored)
		var ranges uint64
		require.NoError(t, e.conn.QueryRow(t.Context(), "SELECT count() FROM "+e.tables.Qualified(schema.Symbols)+
			" WHERE TenantId = 'team-a'").Scan(&ranges))
		require.InDelta(t, ans.body["ranges"], float64(ranges), 0)
	})
	e.stillServes(t, "Bearer token-b")
}

// TestSymbolsUploadWithoutAuth stores for the default tenant.
func TestSymbolsUploadWithoutAuth(t *testing.T) {
	nativebin.Require(t, "gcc")
	e := newSymbolsEnv(t, func(c *Config) { c.DefaultTenant = "local" }, symbols.DefaultUploadMaxBytes)
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	ans := e.put(t, bin.BuildID, "", bytes.NewReader(fileBytes(t, bin.Path)))
	require.Equal(t, http.StatusOK, ans.status, "%v", ans.body)
	require.Equal(t, map[string][]string{"local": {bin.BuildID}}, e.storedBuildIDs(t))
	e.stillServes(t, "")
}

// TestUploadLimitCheck: the declared size is checked before a byte is
// read; the default limit refuses a 2 GB file.
func TestUploadLimitCheck(t *testing.T) {
	for _, tc := range []struct {
		length, limit int64
		fits          bool
	}{
		{2 << 30, symbols.DefaultUploadMaxBytes, false},
		{symbols.DefaultUploadMaxBytes, symbols.DefaultUploadMaxBytes, true},
		{symbols.DefaultUploadMaxBytes + 1, symbols.DefaultUploadMaxBytes, false},
		{-1, symbols.DefaultUploadMaxBytes, true}, // not declared: counted while reading
		{100, 99, false},
	} {
		ok, serr := uploadFits(tc.length, tc.limit)
		require.Equal(t, tc.fits, ok, "%d of %d", tc.length, tc.limit)
		if !ok {
			require.Equal(t, http.StatusRequestEntityTooLarge, serr.status)
			require.Contains(t, serr.msg, "symbols.upload.max_bytes")
		}
	}
	require.Equal(t, 1<<30, symbols.DefaultUploadMaxBytes)
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}
