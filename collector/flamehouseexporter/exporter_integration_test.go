package flamehouseexporter

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/flamehouse/flamehouse/collector/flamehouseexporter/internal/metadata"
	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// engineConfig points the exporter at the tests' ClickHouse (the embedded
// engine over HTTP, or FLAMEHOUSE_CLICKHOUSE_URL) and a database that does
// not exist yet, without a sending queue, so that ConsumeProfiles returns
// the push's outcome.
func engineConfig(t *testing.T) (*Config, clickhouse.Conn) {
	t.Helper()
	srv := chtest.Get(t)
	scheme := "http"
	if srv.Options.Protocol != clickhouse.HTTP {
		scheme = "tcp"
	}
	cfg := createDefaultConfig()
	cfg.Endpoint = (&url.URL{Scheme: scheme, Host: srv.Addr}).String()
	cfg.Username, cfg.Password = srv.Options.Auth.Username, configopaque.String(srv.Options.Auth.Password)
	cfg.Database = srv.NewDatabase(t) + "_fhexp"
	cfg.Writer.FlushInterval = 50 * time.Millisecond
	cfg.QueueSettings = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.BackOffConfig.Enabled = false
	conn := srv.Open(t)
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+cfg.Database) })
	return cfg, conn
}

// TestWritesFlamehouseTables runs the exporter as the Collector creates it
// against the real engine: start applies the migrations to a new database,
// a push's rows are committed when ConsumeProfiles returns, a push with an
// invalid profile writes the rest and fails permanently, a request pushed
// again under its content token is stored once, and the exporter's
// metrics count rows, events and rejections.
func TestWritesFlamehouseTables(t *testing.T) {
	cfg, conn := engineConfig(t)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	f := NewFactory().(xexporter.Factory) // checked in TestFactory
	exp, err := f.CreateProfiles(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = exp.Shutdown(context.Background())
		}
	})
	tables := cfg.tables()
	m, err := schema.NewMigrator(tables, conn)
	require.NoError(t, err)
	version, err := m.Version(context.Background())
	require.NoError(t, err)
	require.Equal(t, schema.LatestVersion(), version, "create_schema applied the migrations")

	ctx := context.Background()
	good, partial := newReport(t, 5), newReport(t, 6, 2)
	require.NoError(t, exp.ConsumeProfiles(ctx, good.pd))
	requireStored(t, conn, tables, good.cpu, "a push is committed when ConsumeProfiles returns")

	err = exp.ConsumeProfiles(ctx, partial.pd)
	require.True(t, consumererror.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "resource_profiles[2].scope_profiles[0].profiles[0]: samples[0]: stack_index 99999 is out of range")
	requireStored(t, conn, tables, good.cpu+partial.cpu, "the valid profiles of the push are stored")

	require.NoError(t, exp.Shutdown(ctx))
	stopped = true

	requireSum(t, tel, "otelcol_exporter_flamehouse_written_samples", good.events+partial.events)
	requireSum(t, tel, "otelcol_exporter_flamehouse_received_profiles", 6)
	requireSum(t, tel, "otelcol_exporter_flamehouse_rejected_profiles", 1)
	var rows int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT toInt64(count()) FROM "+tables.Qualified(schema.Samples)).Scan(&rows))
	requireSum(t, tel, "otelcol_exporter_flamehouse_written_rows", rows)
}

// TestRedeliveryStoredOnce: with a persistent queue (tokens) a request
// pushed again, as a replay after a crash pushes it, is stored once.
func TestRedeliveryStoredOnce(t *testing.T) {
	cfg, conn := engineConfig(t)
	set := exportertest.NewNopSettings(metadata.Type)
	e, err := newExporter(cfg, set)
	require.NoError(t, err)
	e.tokens = true
	require.NoError(t, e.start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, e.shutdown(context.Background())) })
	r := newReport(t, 7)
	for range 3 {
		require.NoError(t, e.push(context.Background(), r.pd))
	}
	requireStored(t, conn, cfg.tables(), r.cpu, "three deliveries of one request, stored once")
}

func requireStored(t *testing.T, conn clickhouse.Conn, tables schema.Config, want int64, msg string) {
	t.Helper()
	var got int64
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT toInt64(sum(Value)) FROM "+tables.Qualified(schema.Samples)+
		" WHERE ProfileType = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds'").Scan(&got))
	require.Equal(t, want, got, msg)
	for _, rollup := range []string{schema.SamplesMinute, schema.SamplesHour, schema.ServiceMinute, schema.ServiceHour} {
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT toInt64(sum(Value)) FROM "+tables.Qualified(rollup)+
			" WHERE ProfileType = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds'").Scan(&got))
		require.Equal(t, want, got, "%s: %s", rollup, msg)
	}
}

// requireSum checks a counter's total over its attribute sets.
func requireSum(t *testing.T, tel *componenttest.Telemetry, name string, want int64) {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err, name)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum", name)
	var got int64
	for _, dp := range sum.DataPoints {
		got += dp.Value
	}
	require.Equal(t, want, got, name)
}
