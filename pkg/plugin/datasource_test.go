package plugin_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

func TestMain(m *testing.M) { chtest.Main(m) }

func TestCheckHealthWithSchema(t *testing.T) {
	srv := chtest.Get(t)
	_, cfg := plugintest.Migrated(t)
	db := cfg.Database

	ds := plugintest.Instance(t, plugintest.EmbeddedSettings(t, db), map[string]string{"password": srv.Options.Auth.Password})
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
	require.Contains(t, res.Message, db)
}

func TestCheckHealthNamesMissingTables(t *testing.T) {
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	ds := plugintest.Instance(t, plugintest.EmbeddedSettings(t, db), map[string]string{"password": srv.Options.Auth.Password})
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusError, res.Status)
	require.Contains(t, res.Message, "otel_profile_samples")
	require.Contains(t, res.Message, "flamehouse migrate")
}

func TestCheckHealthNamesMissingColumns(t *testing.T) {
	srv := chtest.Get(t)
	conn, cfg := plugintest.Migrated(t)
	db := cfg.Database
	require.NoError(t, conn.Exec(context.Background(), "ALTER TABLE "+cfg.Qualified(schema.Frames)+" DROP COLUMN SystemName"))

	ds := plugintest.Instance(t, plugintest.EmbeddedSettings(t, db), map[string]string{"password": srv.Options.Auth.Password})
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
	ds := plugintest.Instance(t, map[string]any{"host": "127.0.0.1", "port": port, "protocol": "http", "dialTimeout": "2"}, nil)
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusError, res.Status)
	require.Contains(t, res.Message, "Cannot reach ClickHouse at 127.0.0.1:"+strconv.Itoa(port))
}

func TestCheckHealthReportsBadSettings(t *testing.T) {
	ds := plugintest.Instance(t, map[string]any{"port": 70000, "profiles": map[string]any{"database": "x; DROP"}}, nil)
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusError, res.Status)
	require.Contains(t, res.Message, "host")
	require.Contains(t, res.Message, "port 70000")
	require.Contains(t, res.Message, "database")
}

func TestQueryDataReportsBrokenSettingsAndUnreachableServersPerQuery(t *testing.T) {
	ds := plugintest.Instance(t, map[string]any{}, nil)
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
	ds = plugintest.Instance(t, map[string]any{"host": "127.0.0.1", "port": port, "protocol": "http", "dialTimeout": "1"}, nil)
	now := time.Now()
	resp, err = ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", JSON: []byte(`{"profileTypeId":"` + plugintest.CPUType + `"}`), TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now},
	}}})
	require.NoError(t, err)
	require.Error(t, resp.Responses["A"].Error)
	require.Equal(t, backend.ErrorSourceDownstream, resp.Responses["A"].ErrorSource)
	require.Contains(t, resp.Responses["A"].Error.Error(), "ClickHouse")
}

func TestSettingsDefaultsAndPorts(t *testing.T) {
	st, err := plugin.LoadSettings(backend.DataSourceInstanceSettings{
		JSONData:                []byte(`{"host":"ch","secure":true}`),
		DecryptedSecureJSONData: map[string]string{"password": "pw"},
	})
	require.NoError(t, err)
	cc := st.ClientConfig()
	require.Equal(t, "ch:9440", cc.Address)
	require.Equal(t, "native", cc.Protocol)
	require.Equal(t, "pw", cc.Password.Value())
	require.Equal(t, "otel", st.Profiles.Database)
	require.Equal(t, 8443, plugin.DefaultPort("http", true))
	require.Equal(t, 8123, plugin.DefaultPort("http", false))

	_, err = plugin.LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{"host":"ch","dialTimeout":"soon"}`)})
	require.ErrorContains(t, err, "dial timeout")

	st, err = plugin.LoadSettings(backend.DataSourceInstanceSettings{
		JSONData: []byte(`{"host":"ch","protocol":"http","path":"/ch","httpHeaders":[{"name":"X-Team","value":"perf"},{"name":"X-Key","secure":true}],` +
			`"customSettings":[{"setting":"max_threads","value":"2"}]}`),
		DecryptedSecureJSONData: map[string]string{"secureHttpHeaders.X-Key": "k3y"},
	})
	require.NoError(t, err)
	cc = st.ClientConfig()
	opts, err := cc.Options()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"X-Team": "perf", "X-Key": "k3y"}, opts.HttpHeaders)
	require.Equal(t, "/ch", opts.HttpUrlPath)
	require.Equal(t, "2", opts.Settings["max_threads"])

	_, err = plugin.LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{"host":"ch","tlsAuth":true,"tlsAuthWithCACert":true,` +
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
			st, err := plugin.LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{"host":"ch","profiles":` + tt.profiles + `}`)})
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

// TestQueriesCarryLimitsAndLogComment reads back, in ClickHouse, the
// settings the datasource's queries carry.
func TestQueriesCarryLimitsAndLogComment(t *testing.T) {
	settings := plugintest.EmbeddedSettings(t, "default")
	settings["queryTimeout"] = "42"
	ds := plugintest.Instance(t, settings, nil)
	conn, err := ds.Connection()
	require.NoError(t, err)
	ctx := ds.QueryContext(context.Background(), &backend.User{Login: "alice"}, "dash-1", "7", "")
	var comment, overflow string
	var timeout float64
	var rows uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT getSetting('log_comment'), toFloat64(getSetting('max_execution_time')), "+
		"toUInt64(getSetting('max_result_rows')), toString(getSetting('result_overflow_mode'))").Scan(&comment, &timeout, &rows, &overflow))
	require.Equal(t, "flamehouse grafana_user:alice grafana_dashboard:dash-1 grafana_panel:7", comment)
	require.InDelta(t, 42, timeout, 0.001)
	require.Equal(t, uint64(plugin.MaxResultRows), rows)
	require.Equal(t, "throw", overflow)
}
