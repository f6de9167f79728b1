package selftrace

import (
	"context"
	"net"
	"runtime/pprof"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The pprof label keys that name the span a goroutine works for, as
// lower-case hex: 32 digits for the trace id, 16 for the span id. pprof
// files whose samples carry both (`flamehouse import`, the self-profiler)
// are stored with the samples linked to that span.
const (
	TraceIDLabel = "trace_id"
	SpanIDLabel  = "span_id"
)

// ProfileIDAttribute is the span attribute that Grafana's trace view reads
// to offer a span's profiles (its trace to profiles link and the embedded
// span flame graph): the span's own id in lower-case hex, as the Pyroscope
// SDKs' span profiling set it. Do sets it on the spans whose work carries
// the labels above, so traces sent elsewhere (Tempo) link to the samples
// the profiler takes in them.
const ProfileIDAttribute = "pyroscope.profile.id"

// Labels returns the pprof labels of a span: trace_id and span_id. ok is
// false for an invalid span context.
func Labels(sc trace.SpanContext) (labels pprof.LabelSet, ok bool) {
	if !sc.IsValid() {
		return pprof.LabelSet{}, false
	}
	return pprof.Labels(TraceIDLabel, sc.TraceID().String(), SpanIDLabel, sc.SpanID().String()), true
}

// Do runs f with ctx. When ctx holds a recording span, the calling
// goroutine carries that span's pprof labels while f runs, and goes back to
// the labels of ctx after: CPU profile samples taken on it meanwhile, in Go
// code or in C code it calls, name the span. The span gets the
// ProfileIDAttribute: it may have samples (whether the profiler caught any
// is known only when the profile arrives). Goroutines that f starts
// inherit the labels (see DialWithoutLabels for connections). Without a
// recording span (tracing off, or a span not sampled) f runs as it is and
// no label is set.
func Do(ctx context.Context, f func(context.Context)) {
	span := trace.SpanFromContext(ctx)
	labels, ok := Labels(span.SpanContext())
	if !ok || !span.IsRecording() {
		f(ctx)
		return
	}
	span.SetAttributes(attribute.String(ProfileIDAttribute, span.SpanContext().SpanID().String()))
	pprof.Do(ctx, labels, f)
}

// DialFunc dials a network address, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// DialWithoutLabels wraps an HTTP transport's dial function so that the
// goroutine that dials drops its pprof labels first. net/http dials on a
// goroutine started from the requesting goroutine, which inherits its
// labels, and starts the connection's long-lived read and write goroutines
// from there: without this, a keep-alive connection first opened under a
// span would charge its CPU time to that span for as long as it lives.
// (Only for transports that dial on a goroutine of their own, as net/http
// does: a client that dials on the caller's goroutine would lose the
// caller's labels for the rest of its span.)
func DialWithoutLabels(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		pprof.SetGoroutineLabels(context.Background())
		return dial(ctx, network, addr)
	}
}
