package plugin_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/pkg/ingest/pipeline"
	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// fixture is a migrated database, a datasource on it, and what the ingest
// writes with (pkg/ingest/pipeline, pkg/ingest/writer) into it: rows as
// the ingest stores them, without its service and endpoints. The tests
// that send through the ingest service, Collectors or Pyroscope are
// internal/integration's.
type fixture struct {
	ds     *plugin.Datasource
	tables schema.Config
	export *pipeline.Pipeline
}

// newFixture is a fixture on a database that migrate creates
// (plugintest.Migrated, plugintest.MigratedTenancy), with the keys of
// profiles over the datasource's profiles settings.
func newFixture(t testing.TB, migrate func(testing.TB) (clickhouse.Conn, schema.Config), profiles map[string]any) *fixture {
	t.Helper()
	conn, tables := migrate(t)
	cfg := writer.DefaultConfig()
	cfg.FlushInterval = 20 * time.Millisecond
	w, err := writer.New(cfg, tables, conn, chtest.Get(t).NativeInserter(t), slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	opts := pipeline.Options{CPUSamplesAsTime: receiver.DefaultConfig().CPUSamplesAsTime}
	return &fixture{ds: plugintest.OnDatabase(t, tables.Database, profiles), tables: tables, export: pipeline.New(w, opts, nil)}
}

// send writes a request as the ingest does; it returns once the rows are
// committed.
func (f *fixture) send(t testing.TB, req *collectorpb.ExportProfilesServiceRequest) {
	t.Helper()
	body, err := proto.Marshal(req)
	require.NoError(t, err)
	out, err := f.export.Export(context.Background(), pipeline.Request{Payload: body})
	require.NoError(t, err)
	require.Empty(t, out.Rejected)
}
