package receiver

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// tracerScope is the instrumentation scope of the receiver's spans.
const tracerScope = "github.com/flamehouse/flamehouse/pkg/ingest/receiver"

// Span names: the HTTP route, the gRPC method (as OpenTelemetry's
// conventions name server spans).
var (
	httpSpanName = "POST " + ProfilesPath
	grpcSpanName = strings.TrimPrefix(exportMethod, "/")
)

// startSpan starts an export request's server span; ctx holds the
// sender's trace context, if it sent one. The span covers decoding,
// validation, conversion and the wait for the commit; export adds what the
// request held.
func (r *Receiver) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return r.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// endSpan ends an export's span, with status Error when it failed.
func endSpan(span trace.Span, eerr *exportError) {
	if eerr == nil {
		selftrace.Finish(span, nil)
		return
	}
	span.SetAttributes(attribute.String("flamehouse.ingest.outcome", eerr.reason))
	selftrace.Finish(span, errors.New(eerr.msg))
}

// annotate records what a converted request held on the request's span.
func annotate(ctx context.Context, tenant string, profiles, rejected int, events int64) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.Int("flamehouse.ingest.profiles", profiles),
		attribute.Int("flamehouse.ingest.rejected_profiles", rejected),
		attribute.Int64("flamehouse.ingest.samples", events),
	)
	if tenant != "" {
		span.SetAttributes(attribute.String("flamehouse.tenant", tenant))
	}
}
