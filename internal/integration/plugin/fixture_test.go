package plugin

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/dskit/services"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/pkg/ingest"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

func TestMain(m *testing.M) { chtest.Main(m) }

// fixture is a migrated database fed by the real ingest service, and a
// datasource on it.
type fixture struct {
	ds     *plugin.Datasource
	ingest *ingest.Ingester
	tables schema.Config
}

func newFixture(t testing.TB, profiles map[string]any) *fixture {
	t.Helper()
	conn, tables := plugintest.Migrated(t)
	return newFixtureOn(t, conn, tables, profiles)
}

// newFixtureOn is newFixture on a migrated database of the caller's.
func newFixtureOn(t testing.TB, conn clickhouse.Conn, tables schema.Config, profiles map[string]any) *fixture {
	t.Helper()
	srv := chtest.Get(t)

	cfg := ingest.DefaultConfig()
	cfg.Receiver.GRPCListenAddress, cfg.Receiver.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Writer.FlushInterval = 20 * time.Millisecond
	native := srv.NativeInserter(t)
	in, err := ingest.New(cfg, tables, conn, native, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	require.NoError(t, services.StartAndAwaitRunning(context.Background(), in))
	t.Cleanup(func() { _ = services.StopAndAwaitTerminated(context.Background(), in) })

	return &fixture{ds: plugintest.OnDatabase(t, tables.Database, profiles), ingest: in, tables: tables}
}

// send exports a request over OTLP/HTTP; it returns once the rows are
// committed.
func (f *fixture) send(t testing.TB, req *collectorpb.ExportProfilesServiceRequest) {
	t.Helper()
	body, err := proto.Marshal(req)
	require.NoError(t, err)
	resp, err := http.Post("http://"+f.ingest.HTTPAddress()+"/v1development/profiles", "application/x-protobuf", bytes.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// query runs one query through QueryData.
func (f *fixture) query(t testing.TB, q map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	return plugintest.Query(t, f.ds, q, from, to)
}
