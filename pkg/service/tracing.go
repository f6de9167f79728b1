package service

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/flamehouse/flamehouse/pkg/selftrace"
	"github.com/flamehouse/flamehouse/pkg/selftrace/tracetable"
)

// tracesTable is where self-tracing writes: the configured table in the
// profiles database, kept as long as raw samples, whose spans it links.
func (c *Config) tracesTable() tracetable.Table {
	return tracetable.Table{Database: c.Schema.Database, Name: c.SelfProfile.TracesTable, TTL: c.Schema.Retention.Samples}
}

// startTracing starts self-tracing when it is on: the tracer provider
// that writes the spans into the traces table (created here) and, with
// selfprofile.traces_otlp_endpoint, sends them over OTLP too. In cluster
// mode the table stays out: the exporter's tables would need the
// Replicated and Distributed layout that our schema gives its own tables,
// which we do not create for them; an OTLP endpoint still gets the spans.
func (s *Service) startTracing(ctx context.Context) error {
	if !s.cfg.SelfProfile.TracesEnabled() {
		return nil
	}
	var exps []sdktrace.SpanExporter
	var dests []any
	if s.cfg.Schema.Cluster != "" {
		s.log.Info("self-tracing writes no table in cluster mode (schema.cluster is set): create the traces table on the cluster "+
			"(for example with the Collector's ClickHouse exporter) and send traces there", "table", s.cfg.SelfProfile.TracesTable)
	} else {
		table := s.cfg.tracesTable()
		if err := table.Create(ctx, s.conn); err != nil {
			return fmt.Errorf("create the self-tracing table: %w", err)
		}
		exp, err := tracetable.NewExporter(s.conn, table)
		if err != nil {
			return fmt.Errorf("start self-tracing: %w", err)
		}
		exps, dests = append(exps, exp), append(dests, "table", s.cfg.Schema.Database+"."+table.Name)
	}
	if endpoint := s.cfg.SelfProfile.TracesOTLPEndpoint; endpoint != "" {
		exp, err := newOTLPExporter(ctx, endpoint)
		if err != nil {
			return fmt.Errorf("start self-tracing: %w", err)
		}
		exps, dests = append(exps, exp), append(dests, "otlp", selftrace.OTLPTracesURL(endpoint))
	}
	if len(exps) == 0 {
		return nil
	}
	// The SDK reports failed exports (say, an existing table of another
	// layout, or an OTLP endpoint that is down) to the global error
	// handler: into the service's log.
	log := s.log
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("self-tracing: spans not written", "error", err) }))
	tp := selftrace.NewProvider(selftrace.ResourceAttributes(s.cfg.SelfProfile.ServiceName), selftrace.DefaultBatchTimeout, exps...)
	s.tracer = tp
	if s.http != nil {
		s.http.SetTracerProvider(tp)
	}
	s.log.Info("self-tracing", append(dests, "service", s.cfg.SelfProfile.ServiceName)...)
	return nil
}

// tracingOptions give the ingest and the profiler the tracer provider.
func (s *Service) tracingOptions() []selftrace.Option {
	if s.tracer == nil {
		return nil
	}
	return []selftrace.Option{selftrace.WithTracerProvider(s.tracer)}
}

// stopTracing writes the spans that ended and stops tracing. It runs
// after everything traced has stopped and before the connection closes.
func (s *Service) stopTracing(ctx context.Context) error {
	if s.tracer == nil {
		return nil
	}
	if s.http != nil {
		s.http.SetTracerProvider(nil)
	}
	tp := s.tracer
	s.tracer = nil
	if err := tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("write the last spans: %w", err)
	}
	return nil
}

// newOTLPExporter returns an exporter that sends spans over OTLP/HTTP
// (protobuf, gzip) to the endpoint's base URL + selftrace.OTLPTracesPath,
// e.g. a Tempo's or a Collector's receiver at http://127.0.0.1:4318. The
// SDK's exporter retries a failed export for up to a minute (not a refused
// connection), then reports it to the OpenTelemetry error handler; nothing
// blocks the traced work. It lives here, not in pkg/selftrace, so that the
// Collector exporter module, which links pkg/selftrace through the ingest,
// does not link an OTLP trace client it never uses.
func newOTLPExporter(ctx context.Context, base string) (sdktrace.SpanExporter, error) {
	if err := selftrace.ValidateOTLPEndpoint(base); err != nil {
		return nil, fmt.Errorf("OTLP traces endpoint %q: %w", base, err)
	}
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(selftrace.OTLPTracesURL(base)),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	if err != nil {
		return nil, fmt.Errorf("OTLP traces exporter to %q: %w", base, err)
	}
	return exp, nil
}
