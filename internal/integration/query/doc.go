// Package query holds the ClickHouse-backed tests of pkg/query's Engine
// (its _test files): a fresh database migrated by pkg/schema on the embedded
// engine (internal/chtest), a small generated workload of two tenants
// written through the ingest's own path (pkg/ingest/pipeline and the
// writer), and the engine's flame graphs, tables and time series checked
// against an oracle computed from the workload itself (internal/querytest):
// label filters, ranges the planner splits into raw, minute and hour
// segments, and tenant isolation.
package query
