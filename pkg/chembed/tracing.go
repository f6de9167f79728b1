package chembed

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// tracerScope is the instrumentation scope of the server's spans.
const tracerScope = "github.com/flamehouse/flamehouse/pkg/chembed"

// tracerRef holds the server's tracer (atomic.Pointer needs one type).
type tracerRef struct{ trace.Tracer }

// SetTracerProvider makes the server trace the requests that carry a W3C
// traceparent header: a server span per request that continues the
// caller's trace, with the request's goroutine labelled with the span for
// the CPU profiler while the engine works (selftrace.Do). Requests without
// a traceparent are not traced, so that the span exporter's own inserts do
// not trace themselves. nil stops tracing. It may be called while serving.
func (s *Server) SetTracerProvider(tp trace.TracerProvider) {
	if tp == nil {
		s.tracer.Store(nil)
		return
	}
	s.tracer.Store(&tracerRef{tp.Tracer(tracerScope)})
}

// startSpan starts the span of a request that carries a traceparent, and
// returns the request with it; ok is false when the request is not traced.
func (s *Server) startSpan(r *http.Request) (_ *http.Request, span trace.Span, ok bool) {
	ref := s.tracer.Load()
	if ref == nil || r.Header.Get("traceparent") == "" {
		return r, nil, false
	}
	ctx := selftrace.ExtractHTTP(r.Context(), r.Header)
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return r, nil, false
	}
	ctx, span = ref.Start(ctx, "clickhouse", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("db.system.name", "clickhouse")))
	return r.WithContext(ctx), span, true
}

// maxQueryText bounds the statement text a span records.
const maxQueryText = 1024

// describeSpan names the span of ctx after the statement it runs: the verb
// and, for an INSERT, its table ("INSERT otel.otel_profile_samples").
func describeSpan(ctx context.Context, database string, cmd *command) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	op := strings.ToUpper(cmd.stmt.Verb)
	text := cmd.sql
	name := op
	if ins := cmd.stmt.Insert; ins != nil {
		text = ins.Head
		if table := insertTable(ins.Head); table != "" {
			name += " " + table
		}
	}
	if len(text) > maxQueryText {
		text = text[:maxQueryText]
	}
	span.SetName(name)
	span.SetAttributes(attribute.String("db.operation.name", op), attribute.String("db.query.text", text))
	if database != "" {
		span.SetAttributes(attribute.String("db.namespace", database))
	}
}

// insertTable is the table of "INSERT INTO t (cols)" without quotes, or "".
func insertTable(head string) string {
	fields := strings.Fields(head)
	if len(fields) < 3 || !strings.EqualFold(fields[0], "insert") || !strings.EqualFold(fields[1], "into") {
		return ""
	}
	table := fields[2]
	if strings.EqualFold(table, "table") && len(fields) > 3 { // INSERT INTO TABLE t
		table = fields[3]
	}
	table, _, _ = strings.Cut(table, "(")
	return strings.NewReplacer("`", "", `"`, "").Replace(table)
}
