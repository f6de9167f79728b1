// Package selfprofile profiles the running flamehouse process with the Go
// runtime's profilers and sends the profiles, converted to OTLP, to
// Flamehouse's own OTLP endpoint: a fresh installation has real flame
// graphs of a real service right away, taken through the real ingest path.
//
// CPU profiling is continuous: one window of Interval after another, each
// window's profile sent while the next one runs, with a heap profile at
// start and after every window. With a tracer provider (package selftrace)
// every profile it sends is a trace of its own: the conversion and the
// export under a client span, which the ingest continues. That work runs
// inside the next CPU window, so the next CPU profile holds its samples,
// labelled with their spans and stored linked to them.
package selfprofile

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"runtime/pprof"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/flamehouse/flamehouse/pkg/otlphttp"
	"github.com/flamehouse/flamehouse/pkg/pprofconv"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
	"github.com/flamehouse/flamehouse/pkg/selftrace/tracetable"
)

// Config configures self-profiling and self-tracing.
type Config struct {
	// Enabled sends profiles of this process to its own ingest endpoint.
	Enabled bool `yaml:"enabled"`
	// Interval is the length of each CPU profile; profiles run back to
	// back, and each is sent, with a heap profile, when it ends. Default 15s.
	Interval time.Duration `yaml:"interval"`
	// ServiceName is the service.name of the profiles and spans. Default
	// "flamehouse".
	ServiceName string `yaml:"service_name"`
	// Traces traces this process's own work (self-profiling, ingest,
	// writes, the embedded engine's requests) and writes the spans into
	// TracesTable, when self-profiling is enabled. Default true.
	Traces bool `yaml:"traces"`
	// TracesTable is the spans table, in schema.database, in the layout of
	// the Collector ClickHouse exporter's table. Default "otel_traces".
	TracesTable string `yaml:"traces_table"`
	// TracesOTLPEndpoint is the base URL of an OTLP/HTTP endpoint (a
	// Tempo's or a Collector's receiver, e.g. http://127.0.0.1:4318) that
	// also receives the self-tracing spans, POSTed to <url>/v1/traces; they
	// carry pyroscope.profile.id for Grafana's trace to profiles. Default
	// "": the spans go into TracesTable only.
	TracesOTLPEndpoint string `yaml:"traces_otlp_endpoint"`
}

// DefaultConfig returns the defaults (enabled, with traces).
func DefaultConfig() Config {
	return Config{Enabled: true, Interval: 15 * time.Second, ServiceName: "flamehouse", Traces: true, TracesTable: tracetable.DefaultTable}
}

// RegisterFlags binds the config to flags with the given prefix.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.BoolVar(&c.Enabled, prefix+"enabled", c.Enabled, "profile this process and ingest the profiles (demo data)")
	f.DurationVar(&c.Interval, prefix+"interval", c.Interval, "length of each CPU profile; profiles run back to back and are sent as each ends")
	f.StringVar(&c.ServiceName, prefix+"service-name", c.ServiceName, "service.name of the self-profiles and self-traces")
	f.BoolVar(&c.Traces, prefix+"traces", c.Traces, "trace this process's own work into the traces table (with self-profiling)")
	f.StringVar(&c.TracesTable, prefix+"traces-table", c.TracesTable, "table of the self-traces, in schema.database (the Collector exporter's layout)")
	f.StringVar(&c.TracesOTLPEndpoint, prefix+"traces-otlp-endpoint", c.TracesOTLPEndpoint,
		"base URL of an OTLP/HTTP endpoint (Tempo, a Collector) that also receives the self-traces at <url>/v1/traces; empty: off")
}

// TracesEnabled reports whether self-tracing runs: it comes with
// self-profiling.
func (c *Config) TracesEnabled() bool { return c.Enabled && c.Traces }

// Validate reports every problem at once; nothing is checked when
// self-profiling is off.
func (c *Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	var err error
	if c.Interval < time.Second {
		err = errors.Join(err, fmt.Errorf("interval must be at least 1s, got %s", c.Interval))
	}
	if c.ServiceName == "" {
		err = errors.Join(err, errors.New("service_name must not be empty"))
	}
	if c.Traces && !schema.IsIdentifier(c.TracesTable) {
		err = errors.Join(err, fmt.Errorf("traces_table must be a plain identifier (letters, digits, underscore; not starting with a digit), got %q",
			c.TracesTable))
	}
	if c.Traces && c.TracesOTLPEndpoint != "" {
		if verr := selftrace.ValidateOTLPEndpoint(c.TracesOTLPEndpoint); verr != nil {
			err = errors.Join(err, fmt.Errorf("traces_otlp_endpoint %q: %w", c.TracesOTLPEndpoint, verr))
		}
	}
	return err
}

// tracerScope is the instrumentation scope of the profiler's spans.
const tracerScope = "github.com/flamehouse/flamehouse/pkg/selfprofile"

// Profiler sends the process's CPU and heap profiles.
type Profiler struct {
	cfg    Config
	client *otlphttp.Client
	log    *slog.Logger
	attrs  []string
	tracer trace.Tracer
}

// New returns a profiler that sends to an OTLP/HTTP base URL. With
// selftrace.WithTracerProvider each profile sent is traced.
func New(cfg Config, baseURL, authorization string, log *slog.Logger, opts ...selftrace.Option) *Profiler {
	return &Profiler{
		cfg: cfg, client: otlphttp.New(baseURL, authorization), log: log,
		attrs: selftrace.ResourceAttributes(cfg.ServiceName), tracer: selftrace.Tracer(tracerScope, opts...),
	}
}

// Run profiles until ctx ends: CPU profiles back to back, each sent with a
// heap profile while the next one runs, and a heap profile at once. The CPU
// window that is running when ctx ends is dropped.
func (p *Profiler) Run(ctx context.Context) {
	window := p.startCPU()
	p.sendHeap(ctx) // inside the first window, which thus samples its work
	ticker := time.NewTicker(p.cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			if window != nil {
				pprof.StopCPUProfile()
			}
			return
		case <-ticker.C:
		}
		finished := window
		if finished != nil {
			pprof.StopCPUProfile()
		}
		window = p.startCPU()
		if finished != nil {
			p.send(ctx, "cpu", finished.Bytes())
		}
		p.sendHeap(ctx)
	}
}

// startCPU starts a CPU profile window, or returns nil when another CPU
// profile is running (someone reading /debug/pprof/profile): the window is
// skipped.
func (p *Profiler) startCPU() *bytes.Buffer {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		p.log.Debug("self-profiling: no CPU profile this window", "error", err)
		return nil
	}
	return &buf
}

func (p *Profiler) sendHeap(ctx context.Context) {
	var heap bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&heap, 0); err != nil {
		p.log.Debug("self-profiling: no heap profile", "error", err)
		return
	}
	p.send(ctx, "heap", heap.Bytes())
}

// send converts and exports one profile under a root client span, its
// CPU time labelled with the span.
func (p *Profiler) send(ctx context.Context, kind string, raw []byte) {
	ctx, span := p.tracer.Start(ctx, "export "+kind+" profile", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("flamehouse.profile.kind", kind), attribute.Int("flamehouse.profile.bytes", len(raw))))
	var err error
	selftrace.Do(ctx, func(ctx context.Context) { err = p.export(ctx, span, raw) })
	selftrace.Finish(span, err)
	if err != nil {
		p.log.Warn("self-profiling: "+kind+" profile not sent", "error", err)
	}
}

func (p *Profiler) export(ctx context.Context, span trace.Span, raw []byte) error {
	prof, err := profile.ParseData(raw)
	if err != nil {
		return fmt.Errorf("parse own profile: %w", err)
	}
	span.SetAttributes(attribute.Int("flamehouse.profile.samples", len(prof.Sample)))
	req, err := pprofconv.Convert(prof, pprofconv.Options{ResourceAttributes: p.attrs, ScopeName: "flamehouse/selfprofile"})
	if err != nil {
		p.log.Debug("self-profiling: nothing to send", "error", err)
		return nil
	}
	sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	resp, err := p.client.Export(sendCtx, req)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if ps := resp.GetPartialSuccess(); ps.GetRejectedProfiles() > 0 {
		return fmt.Errorf("%d profiles rejected: %s", ps.GetRejectedProfiles(), ps.GetErrorMessage())
	}
	return nil
}
