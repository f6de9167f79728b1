// Package tracetable writes spans into ClickHouse in the layout of the
// OpenTelemetry Collector ClickHouse exporter's otel_traces table, next to
// Flamehouse's profiles, so that the exporter, Grafana's ClickHouse plugin
// and Flamehouse's Trace and Spans queries read and write the same table.
//
//   - Table renders and creates the spans table, its trace id lookup table
//     and the materialized view that fills it, column for column as the
//     Collector's exporter (v0.161) creates them.
//   - Exporter is an sdktrace.SpanExporter (for selftrace.NewProvider) that
//     batch-inserts spans into that table through a clickhouse-go
//     connection, each column filled as the exporter fills it (hex ids, kind
//     and status names, attributes as strings, events and links nested).
package tracetable
