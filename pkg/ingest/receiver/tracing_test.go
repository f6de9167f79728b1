package receiver

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
	"github.com/flamehouse/flamehouse/pkg/selftrace/tracetable"
)

// tracedEnv is an env whose receiver, writer and the engine's HTTP server
// trace into an otel_traces of their own, through the real exporter.
type tracedEnv struct {
	*env
	tracer trace.Tracer
	traces string // the database of otel_traces
}

func newTracedEnv(t *testing.T, wcfg writer.Config) *tracedEnv {
	t.Helper()
	srv := chtest.Get(t)
	if srv.HTTP == nil {
		t.Skip("needs the embedded engine's HTTP server (FLAMEHOUSE_CLICKHOUSE_URL is set)")
	}
	conn := srv.Open(t)
	table := tracetable.Table{Database: srv.NewDatabase(t), Name: tracetable.DefaultTable}
	require.NoError(t, table.Create(context.Background(), conn))
	exp, err := tracetable.NewExporter(conn, table)
	require.NoError(t, err)
	tp := selftrace.NewProvider(selftrace.ResourceAttributes("flamehouse-test"), 100*time.Millisecond, exp)
	srv.HTTP.SetTracerProvider(tp)
	t.Cleanup(func() {
		srv.HTTP.SetTracerProvider(nil)
		_ = tp.Shutdown(context.Background())
	})
	cfg := DefaultConfig()
	cfg.RequestTimeout = 5 * time.Second
	e := newEnvTraced(t, cfg, wcfg, nil, selftrace.WithTracerProvider(tp))
	return &tracedEnv{env: e, tracer: tp.Tracer("sender"), traces: table.Database}
}

// span is a row of otel_traces.
type span struct {
	name, kind, id, parent, status string
	links                          []string
}

// spansOf waits until the trace has spans of each name and returns them
// (spans are written as they end, children first).
func (e *tracedEnv) spansOf(t *testing.T, traceID string, names ...string) []span {
	t.Helper()
	var out []span
	require.Eventually(t, func() bool {
		rows, err := e.conn.Query(context.Background(), "SELECT SpanName, SpanKind, SpanId, ParentSpanId, StatusCode, Links.SpanId FROM "+
			e.traces+".otel_traces WHERE TraceId = ? ORDER BY Timestamp", traceID)
		require.NoError(t, err)
		defer rows.Close()
		out = out[:0]
		for rows.Next() {
			var s span
			require.NoError(t, rows.Scan(&s.name, &s.kind, &s.id, &s.parent, &s.status, &s.links))
			out = append(out, s)
		}
		for _, name := range names {
			if len(byName(out, name)) == 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "spans %q of trace %s", names, traceID)
	return out
}

func byName(spans []span, name string) []span {
	var out []span
	for _, s := range spans {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestExportRequestsAreTraced: an export continues the sender's trace with
// a server span (HTTP and gRPC), the write of its rows is a child of it,
// and each insert the write sends to the embedded engine is a child of the
// write; a failed export's span has status Error.
func TestExportRequestsAreTraced(t *testing.T) {
	wcfg := writer.DefaultConfig()
	wcfg.FlushInterval = 50 * time.Millisecond
	e := newTracedEnv(t, wcfg)
	req, _ := generated(11)
	body, err := proto.Marshal(req)
	require.NoError(t, err)

	check := func(t *testing.T, sender trace.Span, serverName string) {
		t.Helper()
		traceID := sender.SpanContext().TraceID().String()
		spans := e.spansOf(t, traceID, serverName, "write profiles", "INSERT "+e.tables.Database+".otel_profile_samples")
		server := byName(spans, serverName)
		require.Len(t, server, 1, "%+v", spans)
		require.Equal(t, "Server", server[0].kind)
		require.Equal(t, sender.SpanContext().SpanID().String(), server[0].parent, "continues the sender's trace")
		require.Equal(t, "Unset", server[0].status)
		write := byName(spans, "write profiles")
		require.Len(t, write, 1, "%+v", spans)
		require.Equal(t, server[0].id, write[0].parent)
		inserts := 0
		for _, s := range spans {
			if strings.HasPrefix(s.name, "INSERT ") {
				inserts++
				require.Equal(t, write[0].id, s.parent, "%+v", s)
				require.Equal(t, "Server", s.kind)
			}
		}
		require.Positive(t, inserts)
	}

	t.Run("http", func(t *testing.T) {
		ctx, sender := e.tracer.Start(context.Background(), "send", trace.WithSpanKind(trace.SpanKindClient))
		header := http.Header{}
		selftrace.InjectHTTP(ctx, header)
		sender.End()
		require.Equal(t, http.StatusOK, e.post(t, body, map[string]string{"traceparent": header.Get("traceparent")}).status)
		check(t, sender, "POST /v1development/profiles")
	})
	t.Run("grpc", func(t *testing.T) {
		ctx, sender := e.tracer.Start(context.Background(), "send", trace.WithSpanKind(trace.SpanKindClient))
		header := http.Header{}
		selftrace.InjectHTTP(ctx, header)
		sender.End()
		ctx = metadata.AppendToOutgoingContext(context.Background(), "traceparent", header.Get("traceparent"))
		_, err := e.grpcClient(t).Export(ctx, req)
		require.NoError(t, err)
		check(t, sender, "opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export")
	})
	t.Run("failure", func(t *testing.T) {
		ctx, sender := e.tracer.Start(context.Background(), "send")
		header := http.Header{}
		selftrace.InjectHTTP(ctx, header)
		sender.End()
		require.Equal(t, http.StatusBadRequest, e.post(t, []byte("not a request"), map[string]string{"traceparent": header.Get("traceparent")}).status)
		spans := e.spansOf(t, sender.SpanContext().TraceID().String(), "POST /v1development/profiles")
		server := byName(spans, "POST /v1development/profiles")
		require.Len(t, server, 1, "%+v", spans)
		require.Equal(t, "Error", server[0].status)
		require.Empty(t, byName(spans, "write profiles"), "nothing was written")
	})
	t.Run("untraced senders start a trace", func(t *testing.T) {
		require.Equal(t, http.StatusOK, e.post(t, body, nil).status)
		var traceID string
		require.Eventually(t, func() bool {
			return e.conn.QueryRow(context.Background(), "SELECT TraceId FROM "+e.traces+
				".otel_traces WHERE SpanName = 'POST /v1development/profiles' AND ParentSpanId = '' LIMIT 1").Scan(&traceID) == nil
		}, 30*time.Second, 100*time.Millisecond)
		e.spansOf(t, traceID, "write profiles")
	})
	// The exporter's own inserts carry no traceparent: the engine does not
	// trace them (which would trace itself without end).
	var own uint64
	require.NoError(t, e.conn.QueryRow(context.Background(), "SELECT count() FROM "+e.traces+".otel_traces WHERE SpanName LIKE '%otel_traces%'").Scan(&own))
	require.Zero(t, own)
}

// TestWriteOfSeveralRequestsLinksThem: requests written together give one
// write span, the child of one request's span, linked to the other's.
func TestWriteOfSeveralRequestsLinksThem(t *testing.T) {
	wcfg := writer.DefaultConfig()
	wcfg.FlushInterval = 2 * time.Second // both requests wait for the same write
	e := newTracedEnv(t, wcfg)
	ctx, sender := e.tracer.Start(context.Background(), "send both")
	header := http.Header{}
	selftrace.InjectHTTP(ctx, header)
	sender.End()
	var wg sync.WaitGroup
	for seed := range uint64(2) {
		req, _ := generated(20 + seed)
		body, err := proto.Marshal(req)
		require.NoError(t, err)
		wg.Go(func() {
			require.Equal(t, http.StatusOK, e.post(t, body, map[string]string{"traceparent": header.Get("traceparent")}).status)
		})
	}
	wg.Wait()
	spans := e.spansOf(t, sender.SpanContext().TraceID().String(), "write profiles")
	servers := byName(spans, "POST /v1development/profiles")
	require.Len(t, servers, 2, "%+v", spans)
	write := byName(spans, "write profiles")
	require.Len(t, write, 1, "one write for both: %+v", spans)
	ids := []string{servers[0].id, servers[1].id}
	require.Contains(t, ids, write[0].parent)
	other := ids[0]
	if other == write[0].parent {
		other = ids[1]
	}
	require.Equal(t, []string{other}, write[0].links, "linked to the request it is not the child of")
}
