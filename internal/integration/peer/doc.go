// Package peer holds BenchmarkPeer (its _test files): the same
// eBPF-shaped workloads loaded into Flamehouse's ingest, its Collector
// exporter, the contrib ClickHouse exporter's otel_profiles and a real
// Grafana Pyroscope (../shared/pyroscope, a separate process), their
// answers checked to agree, and bytes on disk, throughput, heap and flame
// graph latency printed side by side (docs/performance.md); with it
// BenchmarkDensity, which reads where the bytes of Flamehouse's tables go,
// and the tests of the benchmark's own oracles (pprofTop, the answers
// check). The datasource's query benchmarks are pkg/plugin's.
package peer
