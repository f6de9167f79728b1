package plugin

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/pproftest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/pprofconv"
	"github.com/flamehouse/flamehouse/pkg/query"
)

func TestFlameGraphAndTableMatchWhatWasIngested(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	req, batch := plugintest.Report(t, at)
	f.send(t, req)
	wantSelf, wantTotal, wantSum := querytest.Top(batch, plugintest.CPUOnly)
	require.NotZero(t, wantSum)
	from, to := at.Add(-time.Minute), at.Add(time.Hour)

	rows := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType}, from, to))[0], "ns")
	require.Equal(t, querytest.FlameRow{Level: 0, Value: wantSum, Self: rows[0].Self, Label: "total"}, rows[0], "a single root with the exact total")
	for i, r := range rows[1:] {
		require.Positive(t, r.Level, "row %d: only the first row is the root", i+1)
	}
	var leafSelf int64
	for _, r := range rows {
		leafSelf += r.Self
	}
	require.Equal(t, wantSum, leafSelf, "self values add up to the total")

	// Without a service the frames are looked up by id, with one all of the
	// service's frames are read: both name the same functions.
	for _, sel := range []string{`{}`, `{service_name="checkout"}`} {
		table := plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "table", "profileTypeId": plugintest.CPUType, "labelSelector": sel}, from, to))[0]
		requireTable(t, table, wantSelf, wantTotal)
	}
}

func requireTable(t *testing.T, table *data.Frame, wantSelf, wantTotal map[string]int64) {
	t.Helper()
	gotSelf, gotTotal := map[string]int64{}, map[string]int64{}
	for i := range table.Rows() {
		label, _ := table.Fields[0].ConcreteAt(i)
		s, _ := table.Fields[1].ConcreteAt(i)
		tot, _ := table.Fields[2].ConcreteAt(i)
		if s.(int64) != 0 { // int64 fields
			gotSelf[label.(string)] = s.(int64)
		}
		gotTotal[label.(string)] = tot.(int64)
	}
	require.Equal(t, wantSelf, gotSelf, "self per function")
	require.Equal(t, wantTotal, gotTotal, "total per function, recursion counted once")
}

func TestFlameGraphTruncationKeepsTheTotal(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	req, batch := plugintest.Report(t, at)
	f.send(t, req)
	_, _, wantSum := querytest.Top(batch, plugintest.CPUOnly)
	rows := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, map[string]any{"profileTypeId": plugintest.CPUType, "maxNodes": 50}, at.Add(-time.Minute), at.Add(time.Hour)))[0], "ns")
	require.LessOrEqual(t, len(rows), 50)
	require.Equal(t, wantSum, rows[0].Value)
	others := 0
	for _, r := range rows {
		if r.Label == "other" {
			others++
		}
	}
	require.Positive(t, others, "small subtrees are folded into \"other\" nodes")
}

func TestQueryWithoutDataGivesAnEmptyFlameGraph(t *testing.T) {
	f := newFixture(t, nil)
	now := time.Now()
	frames := plugintest.RequireOK(t, f.query(t, map[string]any{"profileTypeId": plugintest.CPUType}, now.Add(-time.Hour), now))
	require.Equal(t, "response", frames[0].Name)
	require.Zero(t, frames[0].Rows())
	require.Len(t, frames[0].Fields, 4)
}

func TestSelectorsFilterAndCannotInject(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-15 * time.Minute)
	req, batch := plugintest.Report(t, at)
	f.send(t, req)
	from, to := at.Add(-time.Minute), at.Add(time.Hour)
	pod := batch.Samples[0].Meta.Series.Attributes["k8s.pod.name"]
	thread := ""
	for _, kv := range batch.Samples[0].Attributes {
		if kv.Key == "thread.name" {
			thread = kv.Value
		}
	}
	require.NotEmpty(t, pod)
	require.NotEmpty(t, thread)
	rootOf := func(sel string) int64 {
		t.Helper()
		frames := plugintest.RequireOK(t, f.query(t, map[string]any{"profileTypeId": plugintest.CPUType, "labelSelector": sel}, from, to))
		if frames[0].Rows() == 0 {
			return 0
		}
		return querytest.FlameRows(t, frames[0], "ns")[0].Value
	}
	tests := []struct {
		selector string
		keep     func(*model.Sample) bool
	}{
		{`{}`, func(*model.Sample) bool { return true }},
		{`{service_name="checkout"}`, func(s *model.Sample) bool { return s.Meta.Series.Service == "checkout" }},
		{`{k8s_pod_name="` + pod + `"}`, func(s *model.Sample) bool { return s.Meta.Series.Attributes["k8s.pod.name"] == pod }},
		{`{"k8s.pod.name"!="` + pod + `"}`, func(s *model.Sample) bool { return s.Meta.Series.Attributes["k8s.pod.name"] != pod }},
		{`{thread_name="` + thread + `"}`, func(s *model.Sample) bool { return model.KVMap(s.Attributes)["thread.name"] == thread }},
		{`{thread_name=~"` + thread[:1] + `.*", k8s_pod_name!~"nomatch"}`, func(s *model.Sample) bool {
			return model.KVMap(s.Attributes)["thread.name"][:1] == thread[:1]
		}},
		{`{service_name="x' OR 1=1 --"}`, func(*model.Sample) bool { return false }},
		{`{k8s_pod_name="\\') OR (1=1"}`, func(*model.Sample) bool { return false }},
		{`{"a') OR 1=1 --"="x"}`, func(*model.Sample) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			_, _, want := querytest.Top(batch, func(s *model.Sample) bool { return plugintest.CPUOnly(s) && tt.keep(s) })
			require.Equal(t, want, rootOf(tt.selector))
		})
	}
}

func TestInvalidQueriesAreDownstreamErrors(t *testing.T) {
	f := newFixture(t, nil)
	now := time.Now()
	for name, q := range map[string]map[string]any{
		"bad selector":      {"profileTypeId": plugintest.CPUType, "labelSelector": `{service_name=}`},
		"bad type":          {"profileTypeId": "cpu"},
		"bad query type":    {"profileTypeId": plugintest.CPUType, "queryType": "flame"},
		"bad span id":       {"profileTypeId": plugintest.CPUType, "spanSelector": []string{"xyz"}},
		"bad max nodes":     {"profileTypeId": plugintest.CPUType, "maxNodes": -1},
		"no profile type":   {"queryType": "profile"},
		"too many groupBy":  {"profileTypeId": plugintest.CPUType, "groupBy": []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}},
		"traces, no trace":  {"queryType": "traces", "profileTypeId": plugintest.CPUType},
		"traces, bad trace": {"queryType": "traces", "traceId": "4bf92f35"},
		"spans, bad limit":  {"queryType": "spans", "profileTypeId": plugintest.CPUType, "limit": 100000},
		"spans, no type":    {"queryType": "spans"},
	} {
		t.Run(name, func(t *testing.T) {
			r := f.query(t, q, now.Add(-time.Hour), now)
			require.Error(t, r.Error)
			require.Equal(t, backend.ErrorSourceDownstream, r.ErrorSource)
			require.Equal(t, backend.StatusBadRequest, r.Status)
		})
	}
}

func TestTopTableMatchesPprofTop(t *testing.T) {
	f := newFixture(t, nil)
	rec := pproftest.Record(t, t.TempDir())
	wantFlat, wantCum, prof := rec.Flat, rec.Cum, rec.Profile
	req, err := pprofconv.Convert(prof, pprofconv.Options{ResourceAttributes: []string{"service.name", "pprof-oracle"}})
	require.NoError(t, err)
	f.send(t, req)

	at := time.Unix(0, prof.TimeNanos)
	q := map[string]any{"queryType": "table", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="pprof-oracle"}`}
	gotFlat, gotCum := querytest.TableTop(plugintest.RequireOK(t, f.query(t, q, at.Add(-time.Minute), at.Add(time.Minute)))[0])
	require.Equal(t, wantFlat, gotFlat, "self per function equals pprof -top flat")
	require.Equal(t, wantCum, gotCum, "total per function equals pprof -top cum")

	rows := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, map[string]any{
		"profileTypeId": plugintest.CPUType, "maxNodes": 5,
		"labelSelector": `{service_name="pprof-oracle"}`,
	}, at.Add(-time.Minute), at.Add(time.Minute)))[0], "ns")
	var sum int64
	for _, v := range wantFlat {
		sum += v
	}
	require.Equal(t, sum, rows[0].Value, "the truncated flame graph's root is the profile's total")
}

func TestSpanSelectorAndTraceID(t *testing.T) {
	f := newFixture(t, map[string]any{"spanWindowPadding": "30"})
	at := time.Now().UTC().Truncate(time.Minute).Add(-25 * time.Minute)
	req, batch := plugintest.Report(t, at)
	f.send(t, req)
	var span, trace string
	for _, s := range batch.Samples {
		if s.Meta.SpanID != "" && plugintest.CPUOnly(&s) {
			span, trace = s.Meta.SpanID, s.Meta.TraceID
			break
		}
	}
	require.NotEmpty(t, span, "the generator links some samples to spans")
	_, _, want := querytest.Top(batch, func(s *model.Sample) bool { return plugintest.CPUOnly(s) && s.Meta.SpanID == span })
	_, _, wantTrace := querytest.Top(batch, func(s *model.Sample) bool { return plugintest.CPUOnly(s) && s.Meta.TraceID == trace })
	// The span's own range, as Grafana sends it for a span link: the
	// padding widens it to cover the report's samples.
	from, to := at.Add(2*time.Second), at.Add(4*time.Second)
	root := func(q map[string]any) int64 {
		rows := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0], "ns")
		return rows[0].Value
	}
	require.Equal(t, want, root(map[string]any{"profileTypeId": plugintest.CPUType, "spanSelector": []string{strings.ToUpper(span), ""}}))
	require.Equal(t, wantTrace, root(map[string]any{"profileTypeId": plugintest.CPUType, "traceId": trace}))
}

func TestMetricsPerGroupAddUpToTheTotal(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	req, batch := plugintest.Report(t, at)
	f.send(t, req)
	want := map[string]int64{}
	for _, s := range batch.Samples {
		if plugintest.CPUOnly(&s) {
			want[s.Meta.Series.Attributes["k8s.pod.name"]] += s.Value
		}
	}
	q := map[string]any{"queryType": "metrics", "profileTypeId": plugintest.CPUType, "groupBy": []string{"k8s_pod_name"}}
	frames := plugintest.RequireOK(t, f.query(t, q, at.Add(-time.Hour), at.Add(time.Hour)))
	got := map[string]int64{}
	for _, fr := range frames {
		require.Equal(t, data.VisTypeGraph, fr.Meta.PreferredVisualization)
		value := fr.Fields[1]
		require.Equal(t, "suffix: cores", value.Config.Unit)
		var cpu float64
		for i := range value.Len() {
			v, _ := value.ConcreteAt(i)
			cpu += v.(float64) * 60 // float64 rates over one-minute steps
		}
		got[value.Labels["k8s_pod_name"]] = int64(math.Round(cpu * 1e9))
	}
	require.Equal(t, want, got, "CPU seconds per pod, as cores × step")

	both := plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "both", "profileTypeId": plugintest.CPUType}, at.Add(-time.Hour), at.Add(time.Hour)))
	require.Equal(t, "response", both[0].Name)
	require.Equal(t, "series", both[1].Name)
}

func TestEditorResources(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	req, batch := plugintest.Report(t, at)
	f.send(t, req)
	get := func(path string, status int) []byte {
		t.Helper()
		var resp *backend.CallResourceResponse
		err := f.ds.CallResource(context.Background(), &backend.CallResourceRequest{Method: http.MethodGet, Path: strings.Split(path, "?")[0], URL: path},
			backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { resp = r; return nil }))
		require.NoError(t, err)
		require.Equal(t, status, resp.Status, string(resp.Body))
		return resp.Body
	}
	var types []query.ProfileTypeInfo
	require.NoError(t, json.Unmarshal(get("profileTypes", http.StatusOK), &types))
	require.Contains(t, types, query.ProfileTypeInfo{ID: plugintest.CPUType, Label: "process_cpu - cpu"})

	var names []string
	require.NoError(t, json.Unmarshal(get("labelNames?profileTypeId="+plugintest.CPUType, http.StatusOK), &names))
	require.Subset(t, names, []string{"service_name", "k8s_pod_name", "thread_name"})

	var pods []string
	require.NoError(t, json.Unmarshal(get("labelValues?label=k8s_pod_name", http.StatusOK), &pods))
	require.Contains(t, pods, batch.Samples[0].Meta.Series.Attributes["k8s.pod.name"])
	var services []string
	require.NoError(t, json.Unmarshal(get("services", http.StatusOK), &services))
	require.Equal(t, []string{"checkout"}, services)

	from, to := strconv.FormatInt(at.Add(-48*time.Hour).UnixMilli(), 10), strconv.FormatInt(at.Add(-47*time.Hour).UnixMilli(), 10)
	require.NoError(t, json.Unmarshal(get("services?from="+from+"&to="+to, http.StatusOK), &services))
	require.NotContains(t, services, "checkout", "lookups are bounded by the time range")

	// A selector narrows lookups to the series it selects (chained variables).
	pod := batch.Samples[0].Meta.Series.Attributes["k8s.pod.name"]
	require.Greater(t, len(slices.Compact(slices.Sorted(slices.Values(pods)))), 1, "several pods to narrow from")
	sel := func(s string) string { return "&labelSelector=" + url.QueryEscape(s) }
	require.NoError(t, json.Unmarshal(get("labelValues?label=k8s_pod_name"+sel(`{service_name="checkout", k8s_pod_name="`+pod+`"}`), http.StatusOK), &pods))
	require.Equal(t, []string{pod}, pods)
	require.NoError(t, json.Unmarshal(get("labelValues?label=k8s_pod_name"+sel(`{service_name="other"}`), http.StatusOK), &pods))
	require.Empty(t, pods)
	require.NoError(t, json.Unmarshal(get("services?x=1"+sel(`{k8s_pod_name="`+pod+`"}`), http.StatusOK), &services))
	require.Equal(t, []string{"checkout"}, services)
	require.NoError(t, json.Unmarshal(get("services?x=1"+sel(`{k8s_pod_name="no such pod'; DROP TABLE x --"}`), http.StatusOK), &services))
	require.Empty(t, services)
	get("labelValues?label=k8s_pod_name"+sel(`{k8s_pod_name=~"("}`), http.StatusBadRequest)

	get("labelValues?label=", http.StatusBadGateway)
	get("nothing", http.StatusNotFound)
	get("services?from=yesterday", http.StatusBadRequest)
	get("services?profileTypeId=cpu", http.StatusBadRequest)
}

// TestRollupsAnswerLikeTheRawTable compares long-range answers, which read
// whole hours and minutes from the rollups, with the same queries forced
// onto the raw table by a matcher on a sample attribute that matches
// every row.
func TestRollupsAnswerLikeTheRawTable(t *testing.T) {
	f := newFixture(t, nil)
	now := time.Now().UTC().Truncate(time.Second)
	for i, offset := range []time.Duration{
		-9*time.Hour + 17*time.Second, -7*time.Hour - 3*time.Minute + 41*time.Second, -4*time.Hour + 5*time.Second,
		-2*time.Hour - 10*time.Minute, -50*time.Minute + 29*time.Second, -20 * time.Minute, -6 * time.Minute,
	} {
		cfg := profilegen.DefaultConfig()
		cfg.Stacks, cfg.Pods, cfg.SamplesPerSecond, cfg.Locations, cfg.Functions, cfg.Seed = 200, 3, 100, 1000, 300, uint64(i+1)
		f.send(t, profilegen.New(cfg).Report(now.Add(offset)))
	}
	from, to := now.Add(-10*time.Hour+13*time.Second), now.Add(-5*time.Minute+7*time.Second)
	for _, q := range []map[string]any{
		{"queryType": "profile", "profileTypeId": plugintest.CPUType},
		{"queryType": "table", "profileTypeId": plugintest.CPUType},
		{"queryType": "metrics", "profileTypeId": plugintest.CPUType, "groupBy": []string{"service_name"}},
	} {
		t.Run(q["queryType"].(string), func(t *testing.T) { // set above
			q["labelSelector"] = `{thread_name=~".*"}` // a sample attribute: the raw table only
			raw := plugintest.RequireOK(t, f.query(t, q, from, to))
			require.Positive(t, raw[0].Rows())
			for name, sel := range map[string]string{
				"service rollups": `{}`,
				"series rollups":  `{k8s_pod_name=~".*"}`, // a resource label: the rollups by series
			} {
				q["labelSelector"] = sel
				rollup := plugintest.RequireOK(t, f.query(t, q, from, to))
				require.Len(t, rollup, len(raw), name)
				for i := range raw {
					require.Equal(t, raw[i].Rows(), rollup[i].Rows(), name)
					for j := range raw[i].Fields {
						require.Equal(t, raw[i].Fields[j].Len(), rollup[i].Fields[j].Len(), name)
						for k := range raw[i].Fields[j].Len() {
							require.Equal(t, raw[i].Fields[j].At(k), rollup[i].Fields[j].At(k), "%s: frame %d field %s row %d", name, i, raw[i].Fields[j].Name, k)
						}
					}
				}
			}
		})
	}
}

// TestTempoShapedQueries runs the two queries Grafana's trace view sends
// to the datasource named by Tempo's tracesToProfiles, exactly as it
// builds them (grafana-integration.md §2.2): the embedded span flame
// graph's, over the span ±30 s with its extra keys, and the "Related
// profiles" link's, over the span's own range. Both must give that span's
// samples, in the frame named "response".
func TestTempoShapedQueries(t *testing.T) {
	f := newFixture(t, map[string]any{"spanWindowPadding": "30"})
	at := time.Now().UTC().Truncate(time.Minute).Add(-15 * time.Minute)
	req, batch := plugintest.Report(t, at)
	f.send(t, req)
	var span string
	for _, s := range batch.Samples {
		if s.Meta.SpanID != "" && plugintest.CPUOnly(&s) {
			span = s.Meta.SpanID
			break
		}
	}
	require.NotEmpty(t, span)
	_, _, want := querytest.Top(batch, func(s *model.Sample) bool { return plugintest.CPUOnly(s) && s.Meta.SpanID == span })
	spanStart, spanEnd := at.Add(time.Second), at.Add(1500*time.Millisecond)

	embedded := map[string]any{
		"labelSelector": `{service_name="checkout"}`, "groupBy": []string{}, "profileTypeId": plugintest.CPUType, "queryType": "profile",
		"spanSelector": []string{span}, "refId": "span-flamegraph-refId",
		"datasource":       map[string]any{"type": "flamehouse-profiles-datasource", "uid": "flamehouse"},
		"includeExemplars": false, "heatmapType": "individual", "includeHeatmap": false,
	}
	frames := plugintest.RequireOK(t, f.query(t, embedded, spanStart.Add(-30*time.Second), spanEnd.Add(30*time.Second)))
	rows := querytest.FlameRows(t, frames[0], "ns")
	require.Greater(t, len(rows), 1, "the trace view draws the frame only when it has more than one row")
	require.Equal(t, want, rows[0].Value)

	related := map[string]any{
		"labelSelector": `{service_name="checkout"}`, "groupBy": []string{}, "profileTypeId": plugintest.CPUType, "queryType": "profile",
		"spanSelector": []string{span}, "refId": "profile",
	}
	require.Equal(t, want, querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, related, spanStart, spanEnd))[0], "ns")[0].Value,
		"the span's exact range, widened by the padding")
}
