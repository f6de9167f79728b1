package service

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

// TestIngestOffServesEngineAndSchemaOnly: with ingest.enabled=false the
// main job is the embedded engine and the schema, the ClickHouse of a
// Collector-only install (docs/topologies.md): no OTLP endpoints, no
// self-profiling, no self-tracing (no traces table), and it says so.
func TestIngestOffServesEngineAndSchemaOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	cfg := localConfig(t)
	cfg.Ingest.Enabled = false
	ctx := context.Background()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	defer func() { require.NoError(t, svc.Stop(ctx)) }()

	grpcAddr, httpAddr := svc.IngestAddresses()
	require.Empty(t, grpcAddr+httpAddr, "no OTLP endpoints")
	require.Nil(t, svc.tracer, "no self-tracing")
	require.Nil(t, svc.stopProfiling, "no self-profiling")
	require.NotEmpty(t, svc.HTTPAddress(), "the engine's HTTP interface serves")
	require.Equal(t, schema.LatestVersion(), svc.Migration.Version)
	var printed strings.Builder
	svc.Describe(&printed)
	require.Contains(t, printed.String(), "OTLP ingest is off")
	require.NotContains(t, printed.String(), "OTLP profiles:")
	require.NotContains(t, printed.String(), "Demo")

	var tables uint64
	require.NoError(t, svc.Conn().QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = 'otel' AND name LIKE 'otel_traces%'").Scan(&tables))
	require.Zero(t, tables)
}
