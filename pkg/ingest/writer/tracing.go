package writer

import (
	"context"
	"errors"

	"github.com/ClickHouse/clickhouse-go/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// tracerScope is the instrumentation scope of the writer's spans.
const tracerScope = "github.com/flamehouse/flamehouse/pkg/ingest/writer"

// errAllExpired ends a write whose requests all gave up before it.
var errAllExpired = errors.New("every request of the write gave up waiting")

// startSpan starts the span of a write of a group of requests: a child of
// the first request with a sampled span, linked to the others' spans (a
// write carries several requests). A group without a sampled request is
// not traced, nor is any group when tracing is off: ok is false and ctx
// holds no span. ctx also carries the span
// for clickhouse-go, which sends it to a server over the native protocol;
// the Native-format inserter sends it as traceparent.
func (w *Writer) startSpan(ps []*pending) (_ context.Context, _ trace.Span, ok bool) {
	parent := -1
	for i, p := range ps {
		if trace.SpanContextFromContext(p.ctx).IsSampled() {
			parent = i
			break
		}
	}
	if parent < 0 {
		return context.Background(), trace.SpanFromContext(context.Background()), false
	}
	var links []trace.Link
	rows := 0
	for i, p := range ps {
		rows += len(p.batch.Samples)
		if sc := trace.SpanContextFromContext(p.ctx); i != parent && sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	ctx := trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(ps[parent].ctx))
	ctx, span := w.tracer.Start(ctx, "write profiles", trace.WithLinks(links...), trace.WithAttributes(
		attribute.Int("flamehouse.ingest.requests", len(ps)), attribute.Int("flamehouse.ingest.sample_rows", rows),
	))
	if !span.IsRecording() { // tracing off: nothing to propagate either
		return context.Background(), span, false
	}
	return clickhouse.Context(ctx, clickhouse.WithSpan(span.SpanContext())), span, true
}
