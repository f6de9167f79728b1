// Package schema defines Flamehouse's ClickHouse tables and applies them as
// versioned, idempotent migrations.
//
// The layout keeps the table that grows with every sample narrow and moves
// everything that repeats into deduplicated tables:
//
//   - profile_samples: one row per (second, series, stack, trace link,
//     sample attributes) with the summed value, integer StackId and SeriesId,
//     hex TraceId/SpanId with bloom filters, and LowCardinality copies of the
//     service.* and k8s.* attributes used for filtering;
//   - profile_samples_1m and profile_samples_1h: rollups by stack and series,
//     filled by materialized views, for long time ranges;
//   - profile_stacks, profile_frames: StackId -> frame ids -> names, files,
//     lines, mappings, build ids and addresses, written once per day seen;
//   - profile_series: SeriesId -> resource attributes map, with materialized
//     LowCardinality columns;
//   - profile_catalog, profile_sample_labels: what existed in which hour, for
//     the query editor's profile types, services, label names and values;
//     the ingest writes them with the samples.
//
// Names follow the OpenTelemetry Collector exporter's tables (otel_ prefix,
// CamelCase columns). In cluster mode every table becomes a
// Replicated*MergeTree "<name>_local" with a Distributed "<name>" over it.
package schema
