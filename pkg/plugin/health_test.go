package plugin_test

import (
	"context"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// TestCheckHealthDetectsSchemas checks that the health check says which
// schema's tables the database has, for either setting.
func TestCheckHealthDetectsSchemas(t *testing.T) {
	tests := []struct {
		name       string
		flamehouse bool     // migrate Flamehouse's tables
		exporter   []string // nil: no exporter table; else the columns left out of it
		schema     string
		ok         bool
		says       []string
	}{
		{
			"flamehouse tables, exporter table too", true,
			[]string{},
			"flamehouse", true,
			[]string{"Flamehouse tables found", `exporter's profiles table "otel_profiles" is there too`},
		},
		{
			"only the exporter table, flamehouse schema", false,
			[]string{},
			"flamehouse", false,
			[]string{"otel_profile_samples", `It has the OpenTelemetry Collector exporter's profiles table "otel_profiles"`, `"OpenTelemetry Collector exporter"`},
		},
		{
			"exporter table, otel schema", false,
			[]string{},
			"otel", true,
			[]string{`reading the OpenTelemetry Collector exporter's profiles table "otel_profiles"`},
		},
		{
			"both, otel schema", true,
			[]string{},
			"otel", true,
			[]string{`reading the OpenTelemetry Collector exporter's profiles table`, "Flamehouse's tables are there too"},
		},
		{
			"exporter table lacks columns", false,
			[]string{"StackHash", "TimestampsUnixNano"},
			"otel", false,
			[]string{"otel_profiles.StackHash, otel_profiles.TimestampsUnixNano", "v0.161.0"},
		},
		{
			"no table, otel schema", false, nil, "otel", false,
			[]string{`profiles table "otel_profiles" is missing`, "profiles_table_name"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := chtest.Get(t)
			var db string
			if tc.flamehouse {
				_, cfg := plugintest.Migrated(t)
				db = cfg.Database
			} else {
				db = srv.NewDatabase(t)
			}
			if tc.exporter != nil {
				plugintest.CreateExporterTable(t, db, "otel_profiles", tc.exporter...)
			}
			settings := plugintest.EmbeddedSettings(t, db)
			settings["profiles"] = map[string]any{"database": db, "schema": tc.schema}
			ds := plugintest.Instance(t, settings, map[string]string{"password": srv.Options.Auth.Password})
			res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
			require.NoError(t, err)
			want := backend.HealthStatusError
			if tc.ok {
				want = backend.HealthStatusOk
			}
			require.Equal(t, want, res.Status, res.Message)
			for _, s := range tc.says {
				require.Contains(t, res.Message, s)
			}
		})
	}
}

func TestSettingsRejectUnknownSchemaAndBadTable(t *testing.T) {
	ds := plugintest.Instance(t, map[string]any{"host": "127.0.0.1", "profiles": map[string]any{"schema": "pyroscope", "otelTable": "profiles; DROP"}}, nil)
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusError, res.Status)
	require.Contains(t, res.Message, `profiles schema "pyroscope" is not one of "flamehouse"`)
	require.Contains(t, res.Message, `exporter table "profiles; DROP" must be a plain identifier`)

	// The exporter's schema does not use the table prefix (the editor hides
	// it), so a stale one does not fail the check.
	ds = plugintest.Instance(t, map[string]any{"host": "127.0.0.1", "profiles": map[string]any{"schema": "otel", "tablePrefix": "bad-prefix"}}, nil)
	require.NoError(t, ds.SettingsErr())
	ds = plugintest.Instance(t, map[string]any{"host": "127.0.0.1", "profiles": map[string]any{"tablePrefix": "bad-prefix"}}, nil)
	require.ErrorContains(t, ds.SettingsErr(), "table prefix")
}

// TestCheckHealthSaysWhetherTracesAreThere checks the note on the traces
// table, which the traces query type and trace-wide filtering read.
func TestCheckHealthSaysWhetherTracesAreThere(t *testing.T) {
	srv := chtest.Get(t)
	conn, cfg := plugintest.Migrated(t)
	ds := plugintest.Instance(t, plugintest.EmbeddedSettings(t, cfg.Database), map[string]string{"password": srv.Options.Auth.Password})
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
	require.Contains(t, res.Message, `No traces table "`+cfg.Database+`.otel_traces": the traces query type is off`)

	require.NoError(t, conn.Exec(context.Background(), "CREATE TABLE "+schema.QuoteIdentifier(cfg.Database)+
		".otel_traces (Timestamp DateTime64(9), TraceId String, SpanId String) ENGINE = MergeTree ORDER BY Timestamp"))
	res, err = ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
	require.Contains(t, res.Message, `Traces table "`+cfg.Database+`.otel_traces" found`)
}
