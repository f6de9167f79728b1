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
)

// TestProvisionedDatasourceIsHealthy loads the documented provisioning
// example the way Grafana does (environment variables unset), points only
// its address, user and database at the test engine, and checks that every
// other setting it sets (HTTP headers, custom settings, timeouts, profiles
// defaults) is accepted by the settings loader and by ClickHouse.
func TestProvisionedDatasourceIsHealthy(t *testing.T) {
	raw, err := os.ReadFile("../../provisioning/datasources/datasources.yml")
	require.NoError(t, err)
	expanded := os.Expand(string(raw), func(string) string { return "" }) // as Grafana with the variables unset
	var file struct {
		Datasources []struct {
			JSONData       map[string]any    `yaml:"jsonData"`
			SecureJSONData map[string]string `yaml:"secureJsonData"`
		} `yaml:"datasources"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(expanded), &file))
	require.Len(t, file.Datasources, 1)
	jsonData, secure := file.Datasources[0].JSONData, file.Datasources[0].SecureJSONData

	_, cfg := migrated(t)
	local := embeddedSettings(t, cfg.Database)
	for _, k := range []string{"host", "port", "protocol", "username"} {
		jsonData[k] = local[k]
	}
	profiles, ok := jsonData["profiles"].(map[string]any)
	require.True(t, ok, "jsonData.profiles is a mapping")
	profiles["database"] = cfg.Database
	secure["password"] = chtest.Get(t).Options.Auth.Password

	ds := instance(t, jsonData, secure)
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)

	now := time.Now()
	for _, queryType := range []string{"profile", "table", "metrics"} {
		q, err := json.Marshal(map[string]any{"queryType": queryType, "labelSelector": `{service_name="none"}`})
		require.NoError(t, err)
		resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", JSON: q, TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}, Interval: time.Minute,
		}}})
		require.NoError(t, err)
		require.NoError(t, resp.Responses["A"].Error, queryType) // the default profile type from the example applies
	}
}
