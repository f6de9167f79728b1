package selftrace_test

import (
	"context"
	"errors"
	"net"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/flamehouse/flamehouse/internal/pproftest"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// burn keeps a CPU busy for d.
func burn(d time.Duration) uint64 {
	var x uint64 = 1
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 10000 {
			x = x*6364136223846793005 + uint64(i)
		}
	}
	return x
}

// Distinct callers of burn, so that a sample's stack says whose work it is.
//
//go:noinline
func burnInSpan(d time.Duration) uint64 { return burn(d) }

//go:noinline
func burnInChild(d time.Duration) uint64 { return burn(d) }

//go:noinline
func burnAfter(d time.Duration) uint64 { return burn(d) }

//go:noinline
func burnInWrappedLoop(d time.Duration) uint64 { return burn(d) }

//go:noinline
func burnInPlainLoop(d time.Duration) uint64 { return burn(d) }

var sink uint64

// spanLabels maps each burnX function (by name suffix) to the span_id
// labels of the samples taken in it ("" for a sample without one), with
// the samples' count.
func spanLabels(p *profile.Profile) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, s := range p.Sample {
		fn := ""
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if name := line.Function.Name; fn == "" && strings.Contains(name, ".burn") && !strings.HasSuffix(name, ".burn") {
					fn = name[strings.LastIndex(name, ".")+1:]
				}
			}
		}
		if fn == "" {
			continue
		}
		label := ""
		if v := s.Label[selftrace.SpanIDLabel]; len(v) > 0 {
			label = v[0]
		}
		if out[fn] == nil {
			out[fn] = map[string]int{}
		}
		out[fn][label]++
	}
	return out
}

func recordingTracer() trace.Tracer {
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder())).Tracer("test")
}

func TestDoLabelsTheSpansCPUSamples(t *testing.T) {
	tracer := recordingTracer()
	ctx, span := tracer.Start(context.Background(), "work")
	sc := span.SpanContext()
	p := pproftest.CPUProfile(t, func() {
		selftrace.Do(ctx, func(ctx context.Context) {
			require.Equal(t, sc.TraceID().String(), labelOf(ctx, selftrace.TraceIDLabel))
			require.Equal(t, sc.SpanID().String(), labelOf(ctx, selftrace.SpanIDLabel))
			sink += burnInSpan(300 * time.Millisecond)
			done := make(chan struct{}) // a goroutine started inside inherits the labels
			go func() { sink += burnInChild(200 * time.Millisecond); close(done) }()
			<-done
		})
		sink += burnAfter(200 * time.Millisecond) // after Do: no labels
	})
	span.End()
	id := sc.SpanID().String()
	got := spanLabels(p)
	require.Equal(t, map[string]int{id: got["burnInSpan"][id]}, got["burnInSpan"], "every sample of the span's work is labelled")
	require.Positive(t, got["burnInSpan"][id])
	require.Equal(t, map[string]int{id: got["burnInChild"][id]}, got["burnInChild"], "a goroutine started inside inherits the labels")
	require.Positive(t, got["burnInChild"][id])
	require.Equal(t, map[string]int{"": got["burnAfter"][""]}, got["burnAfter"], "work after Do is not labelled")
	require.Positive(t, got["burnAfter"][""])
	for _, s := range p.Sample {
		if v := s.Label[selftrace.SpanIDLabel]; len(v) > 0 {
			require.Equal(t, []string{sc.TraceID().String()}, s.Label[selftrace.TraceIDLabel])
		}
	}
}

func labelOf(ctx context.Context, key string) string {
	v, _ := pprof.Label(ctx, key)
	return v
}

func TestDoSetsNoLabelsWithoutARecordingSpan(t *testing.T) {
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	notSampledTracer := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("test")
	_, notSampled := notSampledTracer.Start(context.Background(), "dropped")
	for name, ctx := range map[string]context.Context{
		"no span":     context.Background(),
		"remote span": trace.ContextWithRemoteSpanContext(context.Background(), remote),
		// Tracing off: the no-op provider's span carries the incoming context.
		"no-op provider": func() context.Context {
			ctx, _ := noop.NewTracerProvider().Tracer("test").Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "x")
			return ctx
		}(),
		"span not sampled": trace.ContextWithSpan(context.Background(), notSampled),
	} {
		t.Run(name, func(t *testing.T) {
			ran := false
			selftrace.Do(ctx, func(ctx context.Context) {
				ran = true
				require.Empty(t, labelOf(ctx, selftrace.TraceIDLabel))
				require.Empty(t, labelOf(ctx, selftrace.SpanIDLabel))
			})
			require.True(t, ran)
		})
	}
}

// TestDialWithoutLabels: a goroutine started after the wrapped dial, as
// net/http starts a connection's read and write loops, carries no labels,
// while one started from a labelled goroutine without it does.
func TestDialWithoutLabels(t *testing.T) {
	tracer := recordingTracer()
	ctx, span := tracer.Start(context.Background(), "request")
	defer span.End()
	errDialed := errors.New("dialed")
	loopDone := make(chan struct{})
	// connLoop dials nothing but starts a busy "read loop" the way net/http
	// does after dialing.
	connLoop := func(work func(time.Duration) uint64) selftrace.DialFunc {
		return func(context.Context, string, string) (net.Conn, error) {
			go func() { sink += work(250 * time.Millisecond); loopDone <- struct{}{} }()
			return nil, errDialed
		}
	}
	p := pproftest.CPUProfile(t, func() {
		selftrace.Do(ctx, func(ctx context.Context) {
			for _, dial := range []selftrace.DialFunc{selftrace.DialWithoutLabels(connLoop(burnInWrappedLoop)), connLoop(burnInPlainLoop)} {
				go func() { _, _ = dial(ctx, "tcp", "127.0.0.1:1") }() // net/http dials on a goroutine of its own
				<-loopDone
			}
		})
	})
	id := span.SpanContext().SpanID().String()
	got := spanLabels(p)
	require.Equal(t, map[string]int{"": got["burnInWrappedLoop"][""]}, got["burnInWrappedLoop"], "the loop started after the wrapped dial has no labels")
	require.Positive(t, got["burnInWrappedLoop"][""])
	require.Equal(t, map[string]int{id: got["burnInPlainLoop"][id]}, got["burnInPlainLoop"], "the loop started after a plain dial inherits the span's")
	require.Positive(t, got["burnInPlainLoop"][id])
}

// TestDoMarksTheSpanForProfiles: a span whose work ran under Do carries
// pyroscope.profile.id = its span id, which Grafana's trace view needs to
// offer its profiles; a span that never ran under Do does not.
func TestDoMarksTheSpanForProfiles(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	ctx, worked := tracer.Start(context.Background(), "worked")
	selftrace.Do(ctx, func(ctx context.Context) {
		_, child := tracer.Start(ctx, "child without Do")
		child.End()
	})
	selftrace.Do(ctx, func(context.Context) {}) // a second Do: still one attribute
	worked.End()
	ended := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		ended[s.Name()] = s
	}
	require.Len(t, ended, 2)
	attrs := func(name string) map[string][]string {
		out := map[string][]string{}
		for _, kv := range ended[name].Attributes() {
			out[string(kv.Key)] = append(out[string(kv.Key)], kv.Value.String())
		}
		return out
	}
	require.Equal(t, []string{worked.SpanContext().SpanID().String()}, attrs("worked")[selftrace.ProfileIDAttribute])
	require.NotContains(t, attrs("child without Do"), selftrace.ProfileIDAttribute)
}
