package selftrace

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// DefaultBatchTimeout is how long a finished span waits at most before it
// is written: short, so that a demo's spans show up within seconds.
const DefaultBatchTimeout = 2 * time.Second

// ResourceAttributes describes this process (key, value pairs), for its
// spans and its self-profiles alike, so that both carry the same resource.
func ResourceAttributes(serviceName string) []string {
	host, _ := os.Hostname()
	pid := strconv.Itoa(os.Getpid())
	return []string{
		"service.name", serviceName, "service.instance.id", host + "/" + pid, "host.name", host,
		"process.pid", pid, "process.runtime.name", "go", "telemetry.sdk.language", "go",
	}
}

// NewProvider returns a tracer provider that samples every trace it starts
// (and follows the sampling decision of a remote parent), describes spans
// with the resource attributes (key, value pairs) and hands every span to
// each exporter in batches, at most batchTimeout (DefaultBatchTimeout when
// 0) after it ends. Each exporter has a batcher of its own, so a slow one
// (a remote OTLP endpoint) does not hold back the others. Shutdown writes
// what is pending; call it before the exporters' connections close.
func NewProvider(resourceAttrs []string, batchTimeout time.Duration, exps ...sdktrace.SpanExporter) *sdktrace.TracerProvider {
	if batchTimeout <= 0 {
		batchTimeout = DefaultBatchTimeout
	}
	attrs := make([]attribute.KeyValue, 0, len(resourceAttrs)/2)
	for i := 0; i+1 < len(resourceAttrs); i += 2 {
		attrs = append(attrs, attribute.String(resourceAttrs[i], resourceAttrs[i+1]))
	}
	opts := make([]sdktrace.TracerProviderOption, 0, len(exps)+2)
	for _, exp := range exps {
		opts = append(opts, sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(batchTimeout)))
	}
	opts = append(opts,
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
	)
	return sdktrace.NewTracerProvider(opts...)
}

// Options are what instrumented packages take from their callers.
type Options struct {
	// TracerProvider makes their spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// Option sets an Option of an instrumented package's constructor.
type Option func(*Options)

// WithTracerProvider traces with tp (nil: the global provider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *Options) { o.TracerProvider = tp }
}

// Tracer returns the tracer that the options give an instrumentation scope
// (a package path).
func Tracer(scope string, opts ...Option) trace.Tracer {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(scope)
}

// Finish ends a span, with status Error and the error recorded when err is
// not nil.
func Finish(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// propagator reads and writes W3C traceparent and tracestate, whatever
// global propagator is installed.
var propagator = propagation.TraceContext{}

// ExtractHTTP returns ctx with the remote span context of an HTTP request's
// traceparent header, or ctx itself when the header is absent or invalid.
func ExtractHTTP(ctx context.Context, h http.Header) context.Context {
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// InjectHTTP sets traceparent (and tracestate) on an outgoing request from
// the span in ctx; without a valid span it sets nothing.
func InjectHTTP(ctx context.Context, h http.Header) {
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// ExtractGRPC is ExtractHTTP for the metadata of an incoming gRPC call.
func ExtractGRPC(ctx context.Context, md metadata.MD) context.Context {
	return propagator.Extract(ctx, metadataCarrier(md))
}

// metadataCarrier reads gRPC metadata as a propagation carrier.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
