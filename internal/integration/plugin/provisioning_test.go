package plugin

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/pprofconv"
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
	raw, err := os.ReadFile(path)
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
func provisionedInstance(t *testing.T, d provisionedDatasource, database string) *plugin.Datasource {
	t.Helper()
	local := plugintest.EmbeddedSettings(t, database)
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
	return plugintest.Instance(t, jsonData, secure)
}

// requireHealthy runs the health check, which must pass.
func requireHealthy(t *testing.T, ds *plugin.Datasource) string {
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
	_, cfg := plugintest.Migrated(t)
	for _, d := range readProvisioned(t, "../../../provisioning/datasources/datasources.yml") {
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
	example := readProvisioned(t, "../../../provisioning/examples/otel-exporter.yaml")
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
	raw, err := json.Marshal(example[0].JSONData) // as provisionedInstance left it
	require.NoError(t, err)
	settings, err := plugin.LoadSettings(backend.DataSourceInstanceSettings{JSONData: raw})
	require.NoError(t, err)
	require.Equal(t, query.SchemaOTel, settings.Profiles.Schema)
	require.Contains(t, requireHealthy(t, ds), "reading the OpenTelemetry Collector exporter's profiles table")
	requireQueriesRun(t, ds)
	want := expectFromRequests(reqs, func(sampleRef) bool { return true }).sum
	require.Positive(t, want)
	// The example's defaultProfileType applies: the query names none.
	q := map[string]any{"queryType": "profile", "labelSelector": `{service_name="checkout"}`}
	require.Equal(t, want, rootValue(t, plugintest.RequireOK(t, plugintest.Query(t, ds, q, start.Add(-time.Minute), time.Now()))[0]))
}

// requireQueriesRun runs each query type with the datasource's defaults.
func requireQueriesRun(t *testing.T, ds *plugin.Datasource) {
	t.Helper()
	now := time.Now()
	for _, queryType := range []string{"profile", "table", "metrics", "spans", "diff"} {
		q, err := json.Marshal(map[string]any{"queryType": queryType, "labelSelector": `{service_name="none"}`})
		require.NoError(t, err)
		resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", JSON: q, TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}, Interval: time.Minute,
		}}})
		require.NoError(t, err)
		require.NoError(t, resp.Responses["A"].Error, queryType) // the default profile type from the example applies
	}
}

// alertRuleFile is Grafana's alerting provisioning file, as far as the
// rules' queries go.
type alertRuleFile struct {
	APIVersion int `yaml:"apiVersion"`
	Groups     []struct {
		Name     string `yaml:"name"`
		Folder   string `yaml:"folder"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			UID       string           `yaml:"uid"`
			Title     string           `yaml:"title"`
			Condition string           `yaml:"condition"`
			Data      []alertRuleQuery `yaml:"data"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// alertRuleQuery is one query (or expression) of a provisioned alert rule.
type alertRuleQuery struct {
	RefID             string `yaml:"refId"`
	DatasourceUID     string `yaml:"datasourceUid"`
	RelativeTimeRange struct {
		From int64 `yaml:"from"`
		To   int64 `yaml:"to"`
	} `yaml:"relativeTimeRange"`
	Model map[string]any `yaml:"model"`
}

// engineProfile is a CPU profile of service flamehouse as the demo's: Go
// frames, and frames of the embedded engine's library without symbols
// (named "[libchdb.so]"), engine nanoseconds of the total.
func engineProfile(at time.Time, engine, other int64) *profile.Profile {
	lib := &profile.Mapping{ID: 1, Start: 0x7f0000000000, Limit: 0x7f0010000000, File: "/opt/flamehouse/libchdb.so"}
	bin := &profile.Mapping{ID: 2, Start: 0x400000, Limit: 0x800000, File: "/usr/bin/flamehouse", HasFunctions: true}
	fn := func(id uint64, name string) *profile.Function {
		return &profile.Function{ID: id, Name: name, SystemName: name, Filename: "x.go"}
	}
	query, serve := fn(1, "github.com/flamehouse/flamehouse/pkg/chembed.(*Conn).Query"), fn(2, "net/http.(*conn).serve")
	locs := []*profile.Location{
		{ID: 1, Mapping: lib, Address: 0x7f0000001234},
		{ID: 2, Mapping: bin, Address: 0x401000, Line: []profile.Line{{Function: query, Line: 1}}},
		{ID: 3, Mapping: bin, Address: 0x402000, Line: []profile.Line{{Function: serve, Line: 1}}},
	}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		TimeNanos: at.UnixNano(), DurationNanos: int64(15 * time.Second),
		Mapping: []*profile.Mapping{lib, bin}, Location: locs, Function: []*profile.Function{query, serve},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{locs[0], locs[1], locs[2]}, Value: []int64{engine / 10_000_000, engine}},
			{Location: []*profile.Location{locs[1], locs[2]}, Value: []int64{other / 10_000_000, other}},
		},
	}
}

// TestProvisionedAlertRulesEvaluate loads provisioning/alerting as Grafana
// does and runs each rule's datasource query exactly as the alert
// evaluation sends it (the saved model over its relative range, FromAlert)
// through the provisioned datasource, on CPU profiles shaped like the
// demo's: numeric time series come back, and the engine rule's ratio is the
// engine's share of the CPU time sent.
func TestProvisionedAlertRulesEvaluate(t *testing.T) {
	raw, err := os.ReadFile("../../../provisioning/alerting/flamehouse.yaml")
	require.NoError(t, err)
	var file alertRuleFile
	require.NoError(t, yaml.Unmarshal(raw, &file))
	require.Equal(t, 1, file.APIVersion)
	require.NotEmpty(t, file.Groups)

	f := newFixture(t, nil)
	now := time.Now()
	const engine, other = 19 * 500_000_000, 500_000_000 // 95% in the engine
	req, err := pprofconv.Convert(engineProfile(now.Add(-2*time.Minute), engine, other), pprofconv.Options{ResourceAttributes: []string{"service.name", "flamehouse"}})
	require.NoError(t, err)
	f.send(t, req)
	datasources := readProvisioned(t, "../../../provisioning/datasources/datasources.yml")
	ds := provisionedInstance(t, datasources[0], f.tables.Database)

	rules := 0
	for _, g := range file.Groups {
		require.NotEmpty(t, g.Folder)
		for _, rule := range g.Rules {
			rules++
			t.Run(rule.Title, func(t *testing.T) {
				refs := map[string]bool{}
				for _, d := range rule.Data {
					refs[d.RefID] = true
				}
				require.True(t, refs[rule.Condition], "the condition is one of the rule's queries")
				for _, d := range rule.Data {
					if d.DatasourceUID == "__expr__" {
						continue
					}
					require.Equal(t, datasources[0].UID, d.DatasourceUID, "queries the provisioned datasource")
					requireAlertRuleQuery(t, ds, d, now)
				}
			})
		}
	}
	require.Equal(t, 2, rules)
}

// requireAlertRuleQuery runs a rule's query over its relative range as the
// alert evaluation does: it has points, and a ratio is the engine's share
// of the CPU time (one interval).
func requireAlertRuleQuery(t *testing.T, ds *plugin.Datasource, d alertRuleQuery, now time.Time) {
	t.Helper()
	from := now.Add(-time.Duration(d.RelativeTimeRange.From) * time.Second)
	frames := plugintest.RequireOK(t, alertQuery(t, ds, d.Model, from, now.Add(-time.Duration(d.RelativeTimeRange.To)*time.Second)))
	requireAlertSeries(t, frames)
	var values []float64
	for _, fr := range frames {
		for i := range fr.Rows() {
			values = append(values, fr.Fields[1].At(i).(float64)) // float64 series
		}
	}
	require.NotEmpty(t, values, "the rule's query has points on the demo's profiles")
	if d.Model["ratio"] == true {
		require.Len(t, values, 1, "one interval holds the profile")
		require.InDelta(t, 0.95, values[0], 1e-9, "the engine's share of the CPU time")
	}
}
