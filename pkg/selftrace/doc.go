// Package selftrace traces Flamehouse's own work with the OpenTelemetry Go
// SDK: the tracer provider, the propagation of trace context, and the pprof
// labels that tie the CPU profiler's samples to spans. It imports nothing of
// Flamehouse's, so that every package on the ingest and query paths
// (chclient, chembed, the writer, the receiver) may use it; where the
// spans go is up to the exporters the provider is built with: package
// tracetable writes them into ClickHouse, next to the profiles, in the
// layout of the OpenTelemetry Collector ClickHouse exporter's otel_traces
// table. With self-profiling (package selfprofile) it makes the demo of
// `flamehouse run` complete: traces of the process's own ingest work whose
// spans link to CPU flame graphs of the same process.
//
// The pieces:
//
//   - ValidateOTLPEndpoint and OTLPTracesURL describe an OTLP/HTTP traces
//     endpoint (a Tempo's) that the same spans may go to as well; the
//     service builds that exporter.
//   - NewProvider builds the tracer provider: each exporter gets batches of
//     spans at most BatchTimeout old, the process's resource
//     (ResourceAttributes, the same as the self-profiles').
//   - Do runs a unit of work with the pprof labels trace_id and span_id of
//     the span in its context (TraceIDLabel, SpanIDLabel), so that the Go CPU
//     profiler tags the samples it takes on that goroutine, in Go or in C
//     code called from it, with the span. Package pprofconv turns such
//     labels into OTLP links, which the ingest stores as the samples'
//     TraceId and SpanId. The span gets ProfileIDAttribute
//     (pyroscope.profile.id), which Grafana's trace view reads to offer its
//     flame graph.
//   - Extract and inject the W3C trace context of HTTP and gRPC requests, and
//     DialWithoutLabels keeps net/http connection goroutines from inheriting
//     the labels of the span that happened to dial them.
//
// Instrumented packages take a trace.TracerProvider through WithTracerProvider
// (otel.GetTracerProvider() when none is given). Without a recording
// provider every span is a no-op and Do sets no labels.
package selftrace
