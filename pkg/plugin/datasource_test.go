package plugin

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
	"github.com/flamehouse/flamehouse/pkg/schema"
)

func TestMain(m *testing.M) { chtest.Main(m) }

// instance creates the datasource the way Grafana does, from JSON settings.
func instance(t testing.TB, jsonData map[string]any, secure map[string]string) *Datasource {
	t.Helper()
	raw, err := json.Marshal(jsonData)
	require.NoError(t, err)
	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{JSONData: raw, DecryptedSecureJSONData: secure})
	require.NoError(t, err)
	ds, ok := inst.(*Datasource)
	require.True(t, ok)
	t.Cleanup(ds.Dispose)
	return ds
}

// embeddedSettings points a datasource at the test server. Its answer
// cache is off: tests and benchmarks that query a closed range again after
// adding rows, or time repeated queries, read ClickHouse every time unless
// they turn the cache on (cache_test.go).
func embeddedSettings(t testing.TB, database string) map[string]any {
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

// migrated creates a database with the Flamehouse schema (no retention).
func migrated(t testing.TB) (clickhouse.Conn, schema.Config) {
	t.Helper()
	return migratedInto(t, chtest.Get(t).NewDatabase(t))
}

// migratedInto applies the Flamehouse schema (no retention) to a database.
func migratedInto(t testing.TB, database string) (clickhouse.Conn, schema.Config) {
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

func TestCheckHealthWithSchema(t *testing.T) {
	srv := chtest.Get(t)
	_, cfg := migrated(t)
	db := cfg.Database

	ds := instance(t, embeddedSettings(t, db), map[string]string{"password": srv.Options.Auth.Password})
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
	require.Contains(t, res.Message, db)
}

func TestCheckHealthNamesMissingTables(t *testing.T) {
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	ds := instance(t, embeddedSettings(t, db), map[string]string{"password": srv.Options.Auth.Password})
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusError, res.Status)
	require.Contains(t, res.Message, "otel_profile_samples")
	require.Contains(t, res.Message, "flamehouse migrate")
}

func TestCheckHealthNamesMissingColumns(t *testing.T) {
	srv := chtest.Get(t)
	conn, cfg := migrated(t)
	db := cfg.Database
	require.NoError(t, conn.Exec(context.Background(), "ALTER TABLE "+cfg.Qualified(schema.Frames)+" DROP COLUMN SystemName"))

	ds := instance(t, embeddedSettings(t, db), map[string]string{"password": srv.Options.Auth.Password})
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusError, res.Status)
	require.Contains(t, res.Message, "otel_profile_frames.SystemName")
	require.Contains(t, res.Message, "flamehouse migrate")
}

func TestCheckHealthUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close()) // nothing listens there now
	ds := instance(t, map[string]any{"host": "127.0.0.1", "port": port, "protocol": "http", "dialTimeout": "2"}, nil)
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusError, res.Status)
	require.Contains(t, res.Message, "Cannot reach ClickHouse at 127.0.0.1:"+strconv.Itoa(port))
}

func TestCheckHealthReportsBadSettings(t *testing.T) {
	ds := instance(t, map[string]any{"port": 70000, "profiles": map[string]any{"database": "x; DROP"}}, nil)
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusError, res.Status)
	require.Contains(t, res.Message, "host")
	require.Contains(t, res.Message, "port 70000")
	require.Contains(t, res.Message, "database")
}

func TestQueryDataReportsBrokenSettingsAndUnreachableServersPerQuery(t *testing.T) {
	ds := instance(t, map[string]any{}, nil)
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A"}, {RefID: "B"}}})
	require.NoError(t, err)
	require.Len(t, resp.Responses, 2)
	for _, r := range resp.Responses {
		require.Equal(t, backend.StatusBadRequest, r.Status)
		require.Equal(t, backend.ErrorSourceDownstream, r.ErrorSource)
		require.ErrorContains(t, r.Error, "host")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port // a TCP listener
	require.NoError(t, ln.Close())        // nothing listens there now
	ds = instance(t, map[string]any{"host": "127.0.0.1", "port": port, "protocol": "http", "dialTimeout": "1"}, nil)
	now := time.Now()
	resp, err = ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", JSON: []byte(`{"profileTypeId":"` + cpuType + `"}`), TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now},
	}}})
	require.NoError(t, err)
	require.Error(t, resp.Responses["A"].Error)
	require.Equal(t, backend.ErrorSourceDownstream, resp.Responses["A"].ErrorSource)
	require.Contains(t, resp.Responses["A"].Error.Error(), "ClickHouse")
}

func TestSettingsDefaultsAndPorts(t *testing.T) {
	st, err := LoadSettings(backend.DataSourceInstanceSettings{
		JSONData:                []byte(`{"host":"ch","secure":true}`),
		DecryptedSecureJSONData: map[string]string{"password": "pw"},
	})
	require.NoError(t, err)
	cc := st.clientConfig()
	require.Equal(t, "ch:9440", cc.Address)
	require.Equal(t, "native", cc.Protocol)
	require.Equal(t, "pw", cc.Password.Value())
	require.Equal(t, "otel", st.Profiles.Database)
	require.Equal(t, 8443, defaultPort("http", true))
	require.Equal(t, 8123, defaultPort("http", false))

	_, err = LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{"host":"ch","dialTimeout":"soon"}`)})
	require.ErrorContains(t, err, "dial timeout")

	st, err = LoadSettings(backend.DataSourceInstanceSettings{
		JSONData: []byte(`{"host":"ch","protocol":"http","path":"/ch","httpHeaders":[{"name":"X-Team","value":"perf"},{"name":"X-Key","secure":true}],` +
			`"customSettings":[{"setting":"max_threads","value":"2"}]}`),
		DecryptedSecureJSONData: map[string]string{"secureHttpHeaders.X-Key": "k3y"},
	})
	require.NoError(t, err)
	cc = st.clientConfig()
	opts, err := cc.Options()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"X-Team": "perf", "X-Key": "k3y"}, opts.HttpHeaders)
	require.Equal(t, "/ch", opts.HttpUrlPath)
	require.Equal(t, "2", opts.Settings["max_threads"])

	_, err = LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{"host":"ch","tlsAuth":true,"tlsAuthWithCACert":true,` +
		`"customSettings":[{"setting":"max threads; DROP","value":"1"}],"httpHeaders":[{"name":"a:b"}],"profiles":{"defaultMaxNodes":-1,"defaultProfileType":"cpu"}}`)})
	for _, part := range []string{"client certificate", "CA certificate", "custom setting", "HTTP header", "max nodes", "default profile type"} {
		require.ErrorContains(t, err, part)
	}
}

func TestTracesSettings(t *testing.T) {
	tests := []struct {
		name     string
		profiles string
		database string
		table    string
		errs     []string
	}{
		{name: "defaults: next to the profiles", profiles: `{"database":"obs"}`, database: "obs", table: "otel_traces"},
		{name: "default database", profiles: `{}`, database: "otel", table: "otel_traces"},
		{name: "set", profiles: `{"tracesDatabase":"traces","tracesTable":"spans","metricsDatasourceUid":"prom"}`, database: "traces", table: "spans"},
		{
			name: "not identifiers", profiles: `{"tracesDatabase":"a.b","tracesTable":"x; DROP"}`,
			errs: []string{`traces database "a.b"`, `traces table "x; DROP"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{"host":"ch","profiles":` + tt.profiles + `}`)})
			if len(tt.errs) > 0 {
				for _, e := range tt.errs {
					require.ErrorContains(t, err, e, "every problem at once")
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{tt.database, tt.table}, []string{st.Profiles.TracesDatabase, st.Profiles.TracesTable})
		})
	}
}
