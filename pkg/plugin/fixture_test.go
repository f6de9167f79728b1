package plugin_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
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

func newFixture(t testing.TB, profiles map[string]any) *fixture {
	t.Helper()
	conn, tables := plugintest.Migrated(t)
	return newFixtureOn(t, conn, tables, profiles)
}

// newFixtureOn is newFixture on a migrated database of the caller's.
func newFixtureOn(t testing.TB, conn clickhouse.Conn, tables schema.Config, profiles map[string]any) *fixture {
	t.Helper()
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

// query runs one query through QueryData.
func (f *fixture) query(t testing.TB, q map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	return plugintest.Query(t, f.ds, q, from, to)
}
