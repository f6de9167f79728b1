package pprofconv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/flamehouse/flamehouse/internal/pproftest"
	"github.com/flamehouse/flamehouse/pkg/pprofconv"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// TestConvertLinksSelftraceSamples: the CPU samples of work done in
// selftrace.Do under a recording span carry its pprof labels, which
// pprofconv turns into a link to the span.
func TestConvertLinksSelftraceSamples(t *testing.T) {
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder())).Tracer("test")
	ctx, span := tracer.Start(context.Background(), "work")
	sc := span.SpanContext()
	p := pproftest.CPUProfile(t, func() {
		selftrace.Do(ctx, func(context.Context) { pproftest.Spin(300 * time.Millisecond) })
	})
	span.End()

	// pprofconv turns the labels into links to the span.
	req, err := pprofconv.Convert(p, pprofconv.Options{ResourceAttributes: []string{"service.name", "test"}})
	require.NoError(t, err)
	links := req.GetDictionary().GetLinkTable()
	require.Len(t, links, 2, "the sentinel and the span's link")
	require.Equal(t, sc.TraceID().String(), trace.TraceID(links[1].GetTraceId()).String())
	require.Equal(t, sc.SpanID().String(), trace.SpanID(links[1].GetSpanId()).String())
}
