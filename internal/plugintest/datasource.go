// Package plugintest is the test support of the Grafana datasource
// (pkg/plugin) shared by its own tests, the integration tests under
// internal/integration and the benchmarks beside Grafana Pyroscope:
// datasources on the tests' ClickHouse (internal/chtest) created the way
// Grafana creates them, migrated databases, queries through QueryData,
// readers of the frames the datasource answers with, and oracles written
// independently of the datasource. It uses pkg/plugin's exported API only
// and starts no ingest: the tests that load data through the ingest
// service keep their fixture beside them.
package plugintest

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// Instance creates the datasource the way Grafana does, from JSON settings.
func Instance(t testing.TB, jsonData map[string]any, secure map[string]string) *plugin.Datasource {
	t.Helper()
	raw, err := json.Marshal(jsonData)
	require.NoError(t, err)
	inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{JSONData: raw, DecryptedSecureJSONData: secure})
	require.NoError(t, err)
	ds, ok := inst.(*plugin.Datasource)
	require.True(t, ok)
	t.Cleanup(ds.Dispose)
	return ds
}

// EmbeddedSettings points a datasource at the test server. Its answer
// cache is off: tests and benchmarks that query a closed range again after
// adding rows, or time repeated queries, read ClickHouse every time unless
// they turn the cache on (pkg/plugin's cache_test.go).
func EmbeddedSettings(t testing.TB, database string) map[string]any {
	t.Helper()
	srv := chtest.Get(t)
	host, port, err := net.SplitHostPort(srv.Addr)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	protocol := "http"
	if srv.External && srv.Options.Protocol.String() == "native" {
		protocol = "native"
	}
	return map[string]any{
		"host": host, "port": p, "protocol": protocol, "username": srv.Options.Auth.Username,
		"profiles": map[string]any{"database": database, "cache": "off"},
	}
}

// Migrated creates a database with the Flamehouse schema (no retention).
func Migrated(t testing.TB) (clickhouse.Conn, schema.Config) {
	t.Helper()
	return MigratedInto(t, chtest.Get(t).NewDatabase(t))
}

// MigratedTenancy is Migrated on one of the engine's databases with
// tenant row policies (chtest.NewTenancyDatabase).
func MigratedTenancy(t testing.TB) (clickhouse.Conn, schema.Config) {
	t.Helper()
	return MigratedInto(t, chtest.Get(t).NewTenancyDatabase(t))
}

// MigratedInto applies the Flamehouse schema (no retention) to a database.
func MigratedInto(t testing.TB, database string) (clickhouse.Conn, schema.Config) {
	t.Helper()
	conn := chtest.Get(t).Open(t)
	cfg := schema.DefaultConfig()
	cfg.Database = database
	cfg.Retention = schema.Retention{}
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	_, err = m.Migrate(context.Background())
	require.NoError(t, err)
	return conn, cfg
}

// OTelSettings points a datasource at the exporter's table in database.
func OTelSettings(t testing.TB, database, table string) map[string]any {
	t.Helper()
	settings := EmbeddedSettings(t, database)
	p := settings["profiles"].(map[string]any) // built by EmbeddedSettings
	p["schema"], p["otelTable"] = "otel", table
	return settings
}

// Query runs one query through QueryData, as Grafana does without a
// dashboard, and returns its response.
func Query(t testing.TB, ds *plugin.Datasource, q map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", JSON: raw, TimeRange: backend.TimeRange{From: from, To: to}, Interval: time.Minute,
	}}})
	require.NoError(t, err)
	return resp.Responses["A"]
}

// OnDatabase is a datasource on a database of the tests' server: its
// settings are EmbeddedSettings' with the keys of profiles set over its
// profiles settings.
func OnDatabase(t testing.TB, database string, profiles map[string]any) *plugin.Datasource {
	t.Helper()
	settings := EmbeddedSettings(t, database)
	p := settings["profiles"].(map[string]any) // built by EmbeddedSettings
	for k, v := range profiles {
		p[k] = v
	}
	return Instance(t, settings, nil)
}
