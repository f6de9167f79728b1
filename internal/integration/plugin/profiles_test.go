package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// seededReport is a small eBPF-shaped report of three processes and a
// seed, and what converting it yields.
func seededReport(t *testing.T, seed uint64, at time.Time) (*collectorpb.ExportProfilesServiceRequest, *model.Batch) {
	t.Helper()
	cfg := profilegen.DefaultConfig()
	cfg.Seed, cfg.Stacks, cfg.Pods, cfg.SamplesPerSecond, cfg.Locations, cfg.Functions = seed, 300, 3, 120, 2000, 500
	return querytest.Report(t, cfg, at)
}

// queryLinked runs one query through QueryData as Grafana sends it, with
// the datasource's uid (the target of the frames' links).
func (f *fixture) queryLinked(t *testing.T, q map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	resp, err := f.ds.QueryData(context.Background(), &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: navUID, Name: "Flamehouse"}},
		Queries:       []backend.DataQuery{{RefID: "A", JSON: raw, TimeRange: backend.TimeRange{From: from, To: to}, Interval: time.Minute}},
	})
	require.NoError(t, err)
	return resp.Responses["A"]
}

// field reads a frame's field by name.
func field(t *testing.T, f *data.Frame, name string) *data.Field {
	t.Helper()
	fl, i := f.FieldByName(name)
	require.GreaterOrEqual(t, i, 0, "field %s", name)
	return fl
}

// interpolate fills in a link's ${__data.fields.x} variables from a row,
// as Grafana does.
func interpolate(t *testing.T, f *data.Frame, row int, text string) string {
	t.Helper()
	for _, fl := range f.Fields {
		v, _ := fl.ConcreteAt(row)
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case int64:
			s = strconv.FormatInt(v, 10)
		default:
			continue
		}
		text = strings.ReplaceAll(text, "${__data.fields."+fl.Name+"}", s)
	}
	require.NotContains(t, text, "${__data", "every variable is a field of the row")
	return text
}

// TestProfilesListsAndOpensSingleProfiles ingests two reports of three
// processes five seconds apart and lists the six CPU profiles: newest
// first, each with its service, resource, duration, events and total as
// sent; each row's flame graph link, filled in as Grafana fills it, opens
// that profile alone (its total, not its neighbour's), and its pprof link
// downloads it with the profile's period.
func TestProfilesListsAndOpensSingleProfiles(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	firstReq, first := seededReport(t, 1, at)
	secondReq, second := seededReport(t, 2, at.Add(5*time.Second))
	f.send(t, firstReq)
	f.send(t, secondReq)
	var want []model.Profile
	for _, b := range []*model.Batch{second, first} {
		for _, p := range b.Profiles {
			if p.ProfileType == plugintest.CPUType {
				want = append(want, p)
			}
		}
	}
	require.Len(t, want, 6)
	from, to := at.Add(-time.Minute), at.Add(time.Minute)

	frames := plugintest.RequireOK(t, f.queryLinked(t, map[string]any{"queryType": "profiles", "profileTypeId": plugintest.CPUType}, from, to))
	list := frames[0]
	require.Equal(t, "profiles", list.Name)
	require.Equal(t, data.VisType(data.VisTypeTable), list.Meta.PreferredVisualization)
	require.Equal(t, len(want), list.Rows())
	byKey := map[string]model.Profile{}
	for _, p := range want {
		byKey[strconv.FormatUint(p.Series.ID, 10)+"@"+strconv.FormatUint(p.TimeNanos, 10)] = p
	}
	var last time.Time
	for i := range list.Rows() {
		ts := field(t, list, "time").At(i).(time.Time) // a time field
		series := field(t, list, "seriesId").At(i).(string)
		p, ok := byKey[series+"@"+strconv.FormatInt(ts.UnixNano(), 10)]
		require.True(t, ok, "row %d is a profile that was sent", i)
		if i > 0 {
			require.False(t, ts.After(last), "newest first")
		}
		last = ts
		require.Equal(t, p.Series.Service, field(t, list, "service").At(i))
		require.Contains(t, field(t, list, "resource").At(i), "k8s.pod.name="+p.Series.Attributes["k8s.pod.name"])
		require.Equal(t, int64(p.DurationNanos), field(t, list, "duration").At(i))
		require.Equal(t, p.Events, field(t, list, "samples").At(i))
		require.Equal(t, p.Total, field(t, list, "total").At(i))
		require.Equal(t, p.FirstSecond*1000, field(t, list, "windowStart").At(i))
		require.Equal(t, (p.LastSecond+1)*1000, field(t, list, "windowEnd").At(i))
		require.Equal(t, "flamehouse-process_cpu-checkout-"+ts.UTC().Format("20060102T150405Z")+".pb.gz", field(t, list, "pprof").At(i))
	}

	links := slices.Concat(field(t, list, "time").Config.Links, field(t, list, "pprof").Config.Links)
	require.Len(t, links, 2)
	require.Equal(t, query.LinkProfileFlameGraph, links[0].Title)
	require.Equal(t, query.LinkProfilePprof, links[1].Title)
	for row := range list.Rows() {
		p := byKey[field(t, list, "seriesId").At(row).(string)+"@"+strconv.FormatInt(field(t, list, "time").At(row).(time.Time).UnixNano(), 10)]
		raw, err := json.Marshal(links[0].Internal.Query)
		require.NoError(t, err)
		var q map[string]any
		require.NoError(t, json.Unmarshal([]byte(interpolate(t, list, row, string(raw))), &q))
		rows := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0], "ns")
		require.Equal(t, p.Total, rows[0].Value, "row %d: the flame graph is that profile's", row)

		u, err := url.Parse(interpolate(t, list, row, links[1].URL))
		require.NoError(t, err)
		require.Equal(t, "/api/datasources/uid/"+navUID+"/resources/pprof", u.Path)
		var resp *backend.CallResourceResponse
		err = f.ds.CallResource(context.Background(), &backend.CallResourceRequest{Method: http.MethodGet, Path: "pprof", URL: "pprof?" + u.RawQuery},
			backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { resp = r; return nil }))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
		prof, err := profile.ParseData(resp.Body)
		require.NoError(t, err)
		var total int64
		for _, s := range prof.Sample {
			total += s.Value[0]
		}
		require.Equal(t, p.Total, total, "row %d: the pprof file is that profile's", row)
		require.Equal(t, p.Period, prof.Period, "with its period")
	}

	pod := want[0].Series.Attributes["k8s.pod.name"]
	narrowed := plugintest.RequireOK(t, f.query(t, map[string]any{
		"queryType": "profiles", "profileTypeId": plugintest.CPUType,
		"labelSelector": `{k8s_pod_name="` + pod + `"}`,
	}, from, to))[0]
	require.Equal(t, 2, narrowed.Rows(), "a resource label selects its process's profiles")
	limited := plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "profiles", "profileTypeId": plugintest.CPUType, "limit": 2}, from, to))[0]
	require.Equal(t, 2, limited.Rows())

	bad := f.query(t, map[string]any{"queryType": "profiles", "profileTypeId": plugintest.CPUType, "function": "main"}, from, to)
	require.Error(t, bad.Error)
	require.Contains(t, bad.Error.Error(), "a profiles query lists profiles by their resource")
}

// TestProfilesWithoutTheTable: a database of schema version 4 answers the
// profiles query type with an error saying what to run, and its health
// check says so; flame graphs work as before, and pprof files have no
// period.
func TestProfilesWithoutTheTable(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	cfg := schema.DefaultConfig()
	cfg.Database = chtest.Get(t).NewDatabase(t)
	cfg.Retention = schema.Retention{}
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	_, err = m.MigrateTo(context.Background(), 4)
	require.NoError(t, err)
	ds := plugintest.Instance(t, plugintest.EmbeddedSettings(t, cfg.Database), nil)
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
	require.Contains(t, res.Message, "No profiles table (otel_profile_profiles; schema version 5)")

	f := &fixture{ds: ds}
	now := time.Now()
	r := f.query(t, map[string]any{"queryType": "profiles", "profileTypeId": plugintest.CPUType}, now.Add(-time.Hour), now)
	require.Error(t, r.Error)
	require.Contains(t, r.Error.Error(), "run `flamehouse migrate`")
	plugintest.RequireOK(t, f.query(t, map[string]any{"profileTypeId": plugintest.CPUType}, now.Add(-time.Hour), now))
}
