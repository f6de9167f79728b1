// Package ebpfagent holds the integration test of the real OpenTelemetry
// eBPF profiler against Flamehouse (its _test files): the agent, through a
// recording proxy, into the ingest and into the Collector distribution
// with the flamehouse exporter, with workloads of known CPU splits.
package ebpfagent
