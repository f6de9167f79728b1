// Package plugin holds the integration tests of the Grafana datasource
// (pkg/plugin) (its _test files): profiles go into ClickHouse through the
// real ingest service, a Collector distribution with the flamehouse
// exporter or the contrib ClickHouse exporter (internal/otelcoltest), and
// the datasource's answers (flame graphs, tables, series, diffs, pprof
// files, traces and spans, symbols, tenants, provisioned datasources and
// alert rules) are checked against what was sent and against independent
// oracles (go tool pprof, llvm-symbolizer). The datasource's own tests,
// which need only it and the embedded engine, are pkg/plugin's; its shared
// test support is internal/plugintest.
package plugin
