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
	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/pkg/query"
)

// provisionedDatasource is a datasource of a provisioning file, as
// Grafana reads it.
type provisionedDatasource struct {
	Name           string            `yaml:"name"`
	UID            string            `yaml:"uid"`
	JSONData       map[string]any    `yaml:"jsonData"`
	SecureJSONData map[string]string `yaml:"secureJsonData"`
}

// readProvisioned loads a provisioning file's datasources the way Grafana
// does, with its environment variables unset.
func readProvisioned(t *testing.T, path string) []provisionedDatasource {
	t.Helper()
	raw, err := os.ReadFile(path) //nolint:gosec // G304: a file of this repository
	require.NoError(t, err)
	expanded := os.Expand(string(raw), func(string) string { return "" })
	var file struct {
		Datasources []provisionedDatasource `yaml:"datasources"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(expanded), &file))
	require.NotEmpty(t, file.Datasources, path)
	return file.Datasources
}

// provisionedInstance creates a provisioned datasource with only its
// address, user, password and databases pointed at the test engine's
// database; every other setting (HTTP headers, custom settings, timeouts,
// profiles defaults, schema) is the file's.
func provisionedInstance(t *testing.T, d provisionedDatasource, database string) *Datasource {
	t.Helper()
	local := embeddedSettings(t, database)
	jsonData, secure := d.JSONData, map[string]string{}
	for k, v := range d.SecureJSONData {
		secure[k] = v
	}
	for _, k := range []string{"host", "port", "protocol", "username"} {
		jsonData[k] = local[k]
	}
	profiles, ok := jsonData["profiles"].(map[string]any)
	require.True(t, ok, "jsonData.profiles is a mapping")
	profiles["database"] = database
	if _, ok := profiles["tracesDatabase"]; ok {
		profiles["tracesDatabase"] = database // the exporter's spans table, next to the profiles
	}
	secure["password"] = chtest.Get(t).Options.Auth.Password
	return instance(t, jsonData, secure)
}

// requireHealthy runs the health check, which must pass.
func requireHealthy(t *testing.T, ds *Datasource) string {
	t.Helper()
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
	return res.Message
}

// TestProvisionedDatasourcesAreHealthy loads provisioning/datasources,
// which Grafana loads as it is, and checks that every datasource there
// passes its health check and runs each query type against a database
// that the main job (`flamehouse run`) migrates: nothing in it may need
// more than Flamehouse's own tables.
func TestProvisionedDatasourcesAreHealthy(t *testing.T) {
	_, cfg := migrated(t)
	for _, d := range readProvisioned(t, "../../provisioning/datasources/datasources.yml") {
		t.Run(d.Name, func(t *testing.T) {
			ds := provisionedInstance(t, d, cfg.Database)
			require.Contains(t, requireHealthy(t, ds), "Flamehouse tables found")
			requireQueriesRun(t, ds)
		})
	}
}

// TestProvisionedExporterExampleIsHealthy checks the opt-in example for
// the OpenTelemetry Collector exporter's table against what it needs: a
// database where a real Collector's contrib ClickHouse exporter wrote
// otel_profiles. Its health check passes, each query type runs, and its
// flame graph holds the CPU time that was sent.
func TestProvisionedExporterExampleIsHealthy(t *testing.T) {
	example := readProvisioned(t, "../../provisioning/examples/otel-exporter.yaml")
	require.Len(t, example, 1)
	srv := chtest.Get(t)
	bin := otelcoltest.Build(t, otelcoltest.ClickHouseCollector)
	db := srv.NewDatabase(t)
	col := otelcoltest.Start(t, bin, otelcoltest.Config{
		Exporters: map[string]any{"clickhouse": otelcoltest.ClickHouseExporter(srv, db)},
		Pipelines: map[string]otelcoltest.Pipeline{"profiles": {Exporters: []string{"clickhouse"}}},
	})
	start := time.Now().UTC().Truncate(time.Minute).Add(-5 * time.Minute)
	reqs := compatWorkload(start)
	exportAll(t, col.GRPCEndpoint, reqs)

	ds := provisionedInstance(t, example[0], db)
	require.Equal(t, query.SchemaOTel, ds.settings.Profiles.Schema)
	require.Contains(t, requireHealthy(t, ds), "reading the OpenTelemetry Collector exporter's profiles table")
	requireQueriesRun(t, ds)
	want := expectFromRequests(reqs, func(sampleRef) bool { return true }).sum
	require.Positive(t, want)
	// The example's defaultProfileType applies: the query names none.
	q := map[string]any{"queryType": "profile", "labelSelector": `{service_name="checkout"}`}
	require.Equal(t, want, rootValue(t, requireOK(t, (&fixture{ds: ds}).query(t, q, start.Add(-time.Minute), time.Now()))[0]))
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
