package plugin

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/query"
)

// TestProvisionedDatasourcesAreHealthy loads the documented provisioning
// example the way Grafana does (environment variables unset), points only
// each datasource's address, user and database at the test engine, and
// checks that every other setting it sets (HTTP headers, custom settings,
// timeouts, profiles defaults, schema) is accepted by the settings loader
// and by ClickHouse. The database has Flamehouse's tables only: the
// exporter-schema example must say that its table is missing and point at
// the Flamehouse schema.
func TestProvisionedDatasourcesAreHealthy(t *testing.T) {
	raw, err := os.ReadFile("../../provisioning/datasources/datasources.yml")
	require.NoError(t, err)
	expanded := os.Expand(string(raw), func(string) string { return "" }) // as Grafana with the variables unset
	var file struct {
		Datasources []struct {
			Name           string            `yaml:"name"`
			JSONData       map[string]any    `yaml:"jsonData"`
			SecureJSONData map[string]string `yaml:"secureJsonData"`
		} `yaml:"datasources"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(expanded), &file))
	require.Len(t, file.Datasources, 2)
	_, cfg := migrated(t)
	local := embeddedSettings(t, cfg.Database)
	schemas := map[string]bool{}
	for _, d := range file.Datasources {
		t.Run(d.Name, func(t *testing.T) {
			jsonData, secure := d.JSONData, d.SecureJSONData
			if secure == nil {
				secure = map[string]string{}
			}
			for _, k := range []string{"host", "port", "protocol", "username"} {
				jsonData[k] = local[k]
			}
			profiles, ok := jsonData["profiles"].(map[string]any)
			require.True(t, ok, "jsonData.profiles is a mapping")
			profiles["database"] = cfg.Database
			if _, ok := profiles["tracesDatabase"]; ok {
				profiles["tracesDatabase"] = cfg.Database // the exporter's spans table, next to the profiles
			}
			secure["password"] = chtest.Get(t).Options.Auth.Password
			ds := instance(t, jsonData, secure)
			res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
			require.NoError(t, err)
			schemas[ds.settings.Profiles.Schema.String()] = true
			if ds.settings.Profiles.Schema == query.SchemaOTel {
				require.Equal(t, backend.HealthStatusError, res.Status, res.Message)
				require.Contains(t, res.Message, `profiles table "otel_profiles" is missing`)
				require.Contains(t, res.Message, `set the profiles schema to "Flamehouse tables"`)
				return
			}
			require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
			requireQueriesRun(t, ds)
		})
	}
	require.Equal(t, map[string]bool{"flamehouse": true, "otel": true}, schemas, "one example per schema")
}

// requireQueriesRun runs each query type with the datasource's defaults.
func requireQueriesRun(t *testing.T, ds *Datasource) {
	t.Helper()
	now := time.Now()
	for _, queryType := range []string{"profile", "table", "metrics", "spans"} {
		q, err := json.Marshal(map[string]any{"queryType": queryType, "labelSelector": `{service_name="none"}`})
		require.NoError(t, err)
		resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", JSON: q, TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}, Interval: time.Minute,
		}}})
		require.NoError(t, err)
		require.NoError(t, resp.Responses["A"].Error, queryType) // the default profile type from the example applies
	}
}
