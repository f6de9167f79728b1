package receiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

func TestMain(m *testing.M) { chtest.Main(m) }

// env is a receiver with a real writer on a fresh database of the test engine.
type env struct {
	r      *Receiver
	conn   clickhouse.Conn
	tables schema.Config
}

// newEnv uses short timeouts and flush intervals, for tests.
func newEnv(t testing.TB, change func(*Config), conn ...clickhouse.Conn) *env {
	t.Helper()
	wcfg := writer.DefaultConfig()
	wcfg.FlushInterval = 50 * time.Millisecond
	wcfg.RetryInitial, wcfg.RetryMax = 20*time.Millisecond, 100*time.Millisecond
	cfg := DefaultConfig()
	cfg.RequestTimeout = 3 * time.Second
	if change != nil {
		change(&cfg)
	}
	return newEnvWith(t, cfg, wcfg, conn...)
}

// newEnvWith builds an env from receiver and writer configs (listeners on
// free ports).
func newEnvWith(t testing.TB, cfg Config, wcfg writer.Config, conn ...clickhouse.Conn) *env {
	t.Helper()
	var c clickhouse.Conn
	if len(conn) > 0 {
		c = conn[0]
	}
	return newEnvTraced(t, cfg, wcfg, c)
}

// newEnvTraced is newEnvWith with a connection (nil: the engine's, samples
// as Native blocks) and tracing options for the receiver and the writer.
func newEnvTraced(t testing.TB, cfg Config, wcfg writer.Config, conn clickhouse.Conn, opts ...selftrace.Option) *env {
	t.Helper()
	direct := chtest.Get(t).Open(t)
	var b [5]byte
	_, _ = rand.Read(b[:])
	tables := schema.DefaultConfig()
	tables.Database = "recv_" + hex.EncodeToString(b[:])
	tables.Retention = schema.Retention{}
	m, err := schema.NewMigrator(tables, direct)
	require.NoError(t, err)
	_, err = m.Migrate(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Exec(context.Background(), "DROP DATABASE IF EXISTS "+tables.Database) })

	// Samples go as Native blocks over HTTP, as in production; a test that
	// passes its own connection writes everything through it.
	writeConn, native := direct, writer.NativeInserter(nil)
	if n := chtest.Get(t).NativeInserter(t); n != nil {
		native = n
	}
	if conn != nil {
		writeConn, native = conn, nil
	}
	reg := prometheus.NewRegistry()
	log := slog.New(slog.DiscardHandler)
	w, err := writer.New(wcfg, tables, writeConn, native, log, reg, opts...)
	require.NoError(t, err)
	cfg.GRPCListenAddress, cfg.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	r, err := New(cfg, w, func(ctx context.Context) error { return direct.Ping(ctx) }, log, reg, opts...)
	require.NoError(t, err)
	r.Start()
	t.Cleanup(func() {
		r.Stop()
		_ = w.Close(context.Background())
	})
	return &env{r: r, conn: direct, tables: tables}
}

var start = time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)

// generated returns a small eBPF-shaped request and its total CPU time.
func generated(seed uint64) (*collectorpb.ExportProfilesServiceRequest, int64) {
	cfg := profilegen.DefaultConfig()
	cfg.Seed, cfg.Stacks, cfg.Pods, cfg.SamplesPerSecond = seed, 500, 4, 100
	g := profilegen.New(cfg)
	return g.Report(start), int64(g.Events()) * 50_000_000
}

func (e *env) stored(t *testing.T) (int64, string) {
	t.Helper()
	var total int64
	var tenants []string
	require.NoError(t, e.conn.QueryRow(context.Background(), "SELECT sum(Value), groupUniqArray(TenantId) FROM "+e.tables.Qualified(schema.Samples)).
		Scan(&total, &tenants))
	return total, strings.Join(tenants, ",")
}

func (e *env) grpcClient(t *testing.T) collectorpb.ProfilesServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(e.r.GRPCAddress(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return collectorpb.NewProfilesServiceClient(cc)
}

type httpAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) post(t *testing.T, body []byte, header map[string]string) httpAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+e.r.HTTPAddress()+ProfilesPath, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentProtobuf)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return httpAnswer{status: resp.StatusCode, header: resp.Header, body: raw}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}

func TestGRPCExportLandsExactly(t *testing.T) {
	e := newEnv(t, nil)
	req, want := generated(1)
	resp, err := e.grpcClient(t).Export(context.Background(), req, grpc.UseCompressor("gzip"))
	require.NoError(t, err)
	require.Nil(t, resp.GetPartialSuccess())
	got, _ := e.stored(t)
	require.Equal(t, want, got, "acknowledged rows are committed and sum to the input")
}

func TestHTTPProtobufGzipExportLandsExactly(t *testing.T) {
	e := newEnv(t, nil)
	req, want := generated(2)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(marshal(t, req))
	require.NoError(t, zw.Close())
	a := e.post(t, zipped.Bytes(), map[string]string{"Content-Encoding": "gzip"})
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	require.Equal(t, contentProtobuf, a.header.Get("Content-Type"))
	var resp collectorpb.ExportProfilesServiceResponse
	require.NoError(t, proto.Unmarshal(a.body, &resp))
	got, _ := e.stored(t)
	require.Equal(t, want, got)
}

// otlpJSON renders a request as OTLP/JSON: protojson with ids in hex.
func otlpJSON(t *testing.T, req *collectorpb.ExportProfilesServiceRequest) []byte {
	t.Helper()
	raw, err := protojson.Marshal(req)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	dict, _ := doc["dictionary"].(map[string]any)
	links, _ := dict["linkTable"].([]any)
	for _, l := range links {
		link, _ := l.(map[string]any)
		for _, k := range []string{"traceId", "spanId"} {
			if v, ok := link[k].(string); ok {
				b, err := base64.StdEncoding.DecodeString(v)
				require.NoError(t, err)
				link[k] = hex.EncodeToString(b)
			}
		}
	}
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	return out
}

func TestHTTPJSONExportKeepsHexTraceIDs(t *testing.T) {
	e := newEnv(t, nil)
	req, want := generated(3)
	var trace, span string
	for _, l := range req.Dictionary.LinkTable[1:] {
		trace, span = hex.EncodeToString(l.TraceId), hex.EncodeToString(l.SpanId)
		break
	}
	require.NotEmpty(t, trace, "the generated report has trace links")
	body := otlpJSON(t, req)
	require.Contains(t, string(body), trace, "the body carries hex ids, as OTLP/JSON does")
	a := e.post(t, body, map[string]string{"Content-Type": contentJSON})
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	require.True(t, strings.HasPrefix(a.header.Get("Content-Type"), contentJSON), a.header.Get("Content-Type"))
	got, _ := e.stored(t)
	require.Equal(t, want, got)
	var n uint64
	require.NoError(t, e.conn.QueryRow(context.Background(), "SELECT count() FROM "+e.tables.Qualified(schema.Samples)+
		" WHERE TraceId = ? AND SpanId = ?", trace, span).Scan(&n))
	require.Positive(t, n)
}

func TestPartialSuccessKeepsTheGoodProfiles(t *testing.T) {
	e := newEnv(t, nil)
	req, _ := generated(4)
	profiles := req.ResourceProfiles[1].ScopeProfiles[0].Profiles
	profiles[0].Samples[0].StackIndex = 1 << 20 // out of range
	var want int64
	for i, rp := range req.ResourceProfiles {
		if i == 1 {
			continue
		}
		for _, s := range rp.ScopeProfiles[0].Profiles[0].Samples {
			want += int64(len(s.TimestampsUnixNano)) * 50_000_000
		}
	}
	resp, err := e.grpcClient(t).Export(context.Background(), req)
	require.NoError(t, err)
	ps := resp.GetPartialSuccess()
	require.Equal(t, int64(1), ps.GetRejectedProfiles())
	require.Contains(t, ps.GetErrorMessage(), "resource_profiles[1].scope_profiles[0].profiles[0]")
	require.Contains(t, ps.GetErrorMessage(), "stack_index 1048576 is out of range")
	got, _ := e.stored(t)
	require.Equal(t, want, got, "the other profiles are stored in full")
}

func TestInvalidRequestsAreRefusedClearly(t *testing.T) {
	e := newEnv(t, nil)
	client := e.grpcClient(t)
	req, _ := generated(5)

	// Every profile invalid: InvalidArgument / 400, nothing stored.
	bad := proto.Clone(req).(*collectorpb.ExportProfilesServiceRequest)
	for _, rp := range bad.ResourceProfiles {
		rp.ScopeProfiles[0].Profiles[0].SampleType = nil
	}
	_, err := client.Export(context.Background(), bad)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "sample_type has no type")

	// An older schema version's payload.
	old := proto.Clone(req).(*collectorpb.ExportProfilesServiceRequest)
	old.Dictionary.StackTable[1].ProtoReflect().SetUnknown([]byte{0x18, 0x01})
	a := e.post(t, marshal(t, old), nil)
	require.Equal(t, http.StatusBadRequest, a.status)
	var st spb.Status
	require.NoError(t, proto.Unmarshal(a.body, &st))
	require.Contains(t, st.GetMessage(), "older, renumbered schema")

	// Version header.
	a = e.post(t, marshal(t, req), map[string]string{versionHeader: "2"})
	require.Equal(t, http.StatusBadRequest, a.status)
	require.NoError(t, proto.Unmarshal(a.body, &st))
	require.Contains(t, st.GetMessage(), `unsupported OTLP-Profiles-Development-Version "2"`)
	_, err = client.Export(metadata.AppendToOutgoingContext(context.Background(), versionMetadata, "7"), req)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	a = e.post(t, marshal(t, req), map[string]string{versionHeader: "1"})
	require.Equal(t, http.StatusOK, a.status, "version 1 is this schema")

	// Not protobuf, not JSON; not OTLP at all.
	a = e.post(t, []byte("hello"), map[string]string{"Content-Type": "text/plain"})
	require.Equal(t, http.StatusUnsupportedMediaType, a.status)
	// No Content-Type: OTLP/HTTP requires one; a valid protobuf body is not guessed at.
	a = e.post(t, marshal(t, req), map[string]string{"Content-Type": ""})
	require.Equal(t, http.StatusUnsupportedMediaType, a.status)
	require.NoError(t, proto.Unmarshal(a.body, &st))
	require.Contains(t, st.GetMessage(), "no Content-Type: OTLP/HTTP requires application/x-protobuf or application/json")
	// A corrupt gzip body: 400 over HTTP, InvalidArgument (not Internal) over gRPC.
	a = e.post(t, []byte("not gzip at all"), map[string]string{"Content-Encoding": "gzip"})
	require.Equal(t, http.StatusBadRequest, a.status)
	require.NoError(t, proto.Unmarshal(a.body, &st))
	require.Contains(t, st.GetMessage(), "invalid gzip body")
	code, msg := rawGRPCExport(t, e.r.GRPCAddress(), []byte("not gzip at all"))
	require.Equal(t, codes.InvalidArgument, code, msg)
	require.Contains(t, msg, "invalid gzip body")
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, err = zw.Write(marshal(t, req))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	code, msg = rawGRPCExport(t, e.r.GRPCAddress(), zipped.Bytes()[:zipped.Len()-9])
	require.Equal(t, codes.InvalidArgument, code, "a truncated gzip stream: %s", msg)
	// The same frame, whole, is taken: the raw call itself is sound.
	code, msg = rawGRPCExport(t, e.r.GRPCAddress(), zipped.Bytes())
	require.Equal(t, codes.OK, code, msg)
	a = e.post(t, []byte(`{"resourceProfiles": [], "futureField": 1}`), map[string]string{"Content-Type": contentJSON})
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Contains(t, string(a.body), "futureField")

	total, _ := e.stored(t)
	_, want := generated(5)
	require.Equal(t, 2*want, total, "only the valid version-1 request and the whole gzip call stored rows")
}

func TestRequestSizeLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxRequestBytes = 10_000 })
	req, _ := generated(6)
	a := e.post(t, marshal(t, req), nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	_, err := e.grpcClient(t).Export(context.Background(), req)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	// A gzip body small on the wire but larger than the limit once
	// decompressed (a gzip bomb in small) is refused without inflating it all.
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, err = zw.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.Less(t, zipped.Len(), 10_000)
	code, msg := rawGRPCExport(t, e.r.GRPCAddress(), zipped.Bytes())
	require.Equal(t, codes.ResourceExhausted, code, msg)
}

func TestAuthMapsCredentialsToTenants(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Auth = AuthConfig{
			Enabled: true,
			Tokens:  []TokenCredential{{Token: secret.String("tok-a"), Tenant: "team-a"}},
			Basic:   []BasicCredential{{Username: "b", Password: secret.String("pw-b"), Tenant: "team-b"}},
		}
	})
	req, want := generated(7)
	body := marshal(t, req)
	require.Equal(t, http.StatusUnauthorized, e.post(t, body, nil).status)
	require.Equal(t, http.StatusUnauthorized, e.post(t, body, map[string]string{"Authorization": "Bearer wrong"}).status)
	_, err := e.grpcClient(t).Export(context.Background(), req)
	require.Equal(t, codes.Unauthenticated, status.Code(err))

	a := e.post(t, body, map[string]string{"Authorization": "Bearer tok-a"})
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("b:pw-b")))
	_, err = e.grpcClient(t).Export(ctx, req)
	require.NoError(t, err)
	got, tenants := e.stored(t)
	require.Equal(t, 2*want, got)
	require.ElementsMatch(t, []string{"team-a", "team-b"}, strings.Split(tenants, ","))
}

func TestRateLimitIsRetryable(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Limits = Limits{SamplesPerSecond: 1, Burst: 600}
		c.Tenants = map[string]Limits{"tiny": {SamplesPerSecond: 1, Burst: 10}}
		c.Auth = AuthConfig{Enabled: true, Tokens: []TokenCredential{{Token: "big", Tenant: "big"}, {Token: "tiny", Tenant: "tiny"}}}
	})
	req, want := generated(8) // 500 events
	body := marshal(t, req)
	big := map[string]string{"Authorization": "Bearer big"}
	require.Equal(t, http.StatusOK, e.post(t, body, big).status, "the first request fits in the burst")
	a := e.post(t, body, big)
	require.Equal(t, http.StatusTooManyRequests, a.status, "the bucket is empty now")
	require.NotEmpty(t, a.header.Get("Retry-After"))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer big")
	_, err := e.grpcClient(t).Export(ctx, req)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))

	a = e.post(t, body, map[string]string{"Authorization": "Bearer tiny"})
	require.Equal(t, http.StatusTooManyRequests, a.status, "a per-tenant override applies")
	require.Contains(t, string(a.body), "more than tenant")
	total, _ := e.stored(t)
	require.Equal(t, want, total, "only the accepted request is stored")
}

func TestClickHouseDownIsRetryableAndStoresNothing(t *testing.T) {
	dead, err := clickhouse.Open(&clickhouse.Options{Protocol: clickhouse.HTTP, Addr: []string{"127.0.0.1:1"}, DialTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dead.Close() })
	e := newEnv(t, func(c *Config) { c.RequestTimeout = 800 * time.Millisecond }, dead)
	req, _ := generated(9)
	a := e.post(t, marshal(t, req), nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status, string(a.body))
	require.NotEmpty(t, a.header.Get("Retry-After"))
	_, err = e.grpcClient(t).Export(context.Background(), req)
	require.Equal(t, codes.Unavailable, status.Code(err))
}

func TestOperationalEndpoints(t *testing.T) {
	e := newEnv(t, nil)
	req, _ := generated(10)
	_, err := e.grpcClient(t).Export(context.Background(), req)
	require.NoError(t, err)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + e.r.HTTPAddress() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/ready")
	require.Equal(t, http.StatusOK, code, body)
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, m := range []string{
		"flamehouse_ingest_received_profiles_total", "flamehouse_ingest_written_rows_total",
		"flamehouse_ingest_batch_write_seconds", "flamehouse_ingest_queue_samples", "flamehouse_ingest_requests_total",
	} {
		require.Contains(t, body, m)
	}
	code, _ = get("/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
}

func TestStopDrainsRequestsInFlight(t *testing.T) {
	e := newEnv(t, nil)
	req, want := generated(11)
	client := e.grpcClient(t)
	done := make(chan error, 1)
	go func() {
		_, err := client.Export(context.Background(), req)
		done <- err
	}()
	time.Sleep(30 * time.Millisecond) // the request is in flight, waiting for its flush
	e.r.Stop()
	require.NoError(t, <-done)
	got, _ := e.stored(t)
	require.Equal(t, want, got)
}

// rawGRPCExport sends one Export call as raw HTTP/2 frames (prior
// knowledge, no TLS), its message marked gzip-compressed and sent as the
// bytes given: a corrupt gzip stream cannot be sent with a gRPC client,
// whose compressors are process-wide and shared with the server under
// test. It returns the call's status from the trailers.
func rawGRPCExport(t *testing.T, addr string, gzipped []byte) (codes.Code, string) {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	frame := make([]byte, 5, 5+len(gzipped))
	frame[0] = 1 // compressed
	binary.BigEndian.PutUint32(frame[1:], uint32(len(gzipped)))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+exportMethod, bytes.NewReader(append(frame, gzipped...)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	req.Header.Set("Grpc-Encoding", "gzip")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	code, err := strconv.Atoi(resp.Trailer.Get("Grpc-Status") + resp.Header.Get("Grpc-Status"))
	require.NoError(t, err, "grpc-status in %v %v", resp.Header, resp.Trailer)
	return codes.Code(code), resp.Trailer.Get("Grpc-Message") + resp.Header.Get("Grpc-Message")
}
