package plugin

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/plugin"
)

// alertQuery calls QueryData as Grafana's alert evaluation does: no
// frontend, the rule's saved model (with refId, datasource, intervalMs and
// maxDataPoints as the rule editor saves them) over the rule's relative
// range, the headers the evaluator sets (FromAlert, X-Cache-Skip, the
// rule's uid and org), and no user.
func alertQuery(t *testing.T, ds *plugin.Datasource, q map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	model := maps.Clone(q)
	model["refId"], model["intervalMs"], model["maxDataPoints"] = "A", 60000, 43200
	model["datasource"] = map[string]any{"type": "flamehouse-profiles-datasource", "uid": navUID}
	raw, err := json.Marshal(model)
	require.NoError(t, err)
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: navUID, Name: "Flamehouse"}},
		Headers: map[string]string{
			"FromAlert": "true", "X-Cache-Skip": "true", "X-Rule-Uid": "rule-1", "X-Grafana-Org-Id": "1",
			"http_X-Rule-Name": "CPU share", "http_X-Rule-Folder": "Flamehouse",
		},
		Queries: []backend.DataQuery{{
			RefID: "A", QueryType: "", JSON: raw, TimeRange: backend.TimeRange{From: from, To: to},
			Interval: time.Minute, MaxDataPoints: 43200,
		}},
	})
	require.NoError(t, err)
	return resp.Responses["A"]
}

// requireAlertSeries checks that frames are what the alert engine reads as
// time series: the data plane's multi-frame time series, one time and one
// float64 value field each, labelled.
func requireAlertSeries(t *testing.T, frames data.Frames) {
	t.Helper()
	require.NotEmpty(t, frames)
	for _, f := range frames {
		require.Equal(t, data.FrameTypeTimeSeriesMulti, f.Meta.Type)
		require.Equal(t, data.FrameTypeVersion{0, 1}, f.Meta.TypeVersion)
		require.Len(t, f.Fields, 2)
		require.Equal(t, data.FieldTypeTime, f.Fields[0].Type())
		require.Equal(t, data.FieldTypeFloat64, f.Fields[1].Type())
		for i := 1; i < f.Rows(); i++ {
			require.True(t, f.Fields[0].At(i).(time.Time).After(f.Fields[0].At(i-1).(time.Time)), "times ascend") // a time field
		}
	}
}

// heapShares is, per pod and minute, a function's share: the rate
// profile's parts of kind over all of the pod's bytes in that minute.
func heapShares(start time.Time, part func(heapSnapshot, int64) int64, total func(heapSnapshot) int64) map[string]map[time.Time]float64 {
	type key struct {
		pod    string
		minute time.Time
	}
	num, den := map[key]int64{}, map[key]int64{}
	for _, s := range heapSnapshots {
		k := key{s.pod, start.Add(s.at).Truncate(time.Minute)}
		num[k] += part(s, s.bytes)
		den[k] += total(s)
	}
	out := map[string]map[time.Time]float64{}
	for k, d := range den {
		if out[k.pod] == nil {
			out[k.pod] = map[time.Time]float64{}
		}
		out[k.pod][k.minute] = float64(num[k]) / float64(d)
	}
	return out
}

// heapRates is, per pod and minute, the rate profile's part per second.
func heapRates(start time.Time, part func(heapSnapshot, int64) int64) map[string]map[time.Time]float64 {
	out := map[string]map[time.Time]float64{}
	for _, s := range heapSnapshots {
		if out[s.pod] == nil {
			out[s.pod] = map[time.Time]float64{}
		}
		out[s.pod][start.Add(s.at).Truncate(time.Minute)] += float64(part(s, s.bytes))
	}
	for _, points := range out {
		for at, v := range points {
			points[at] = v / 60
		}
	}
	return out
}

// kindBytes is a snapshot's bytes on stacks whose leaf is kind.
func kindBytes(kind string) func(heapSnapshot, int64) int64 {
	return func(s heapSnapshot, v int64) int64 {
		var sum int64
		for _, p := range s.parts(v) {
			if p.kind == kind {
				sum += p.value
			}
		}
		return sum
	}
}

// TestAlertQueries runs the numeric query types as alert rules do, on both
// schemas: time series per group with units; a function filter (self or
// total) and ratios (the function's share of its group, a group's share of
// all); a table as one number per function; flame graphs and bad queries
// as downstream errors.
func TestAlertQueries(t *testing.T) {
	datasources, start := heapWorld(t)
	from, to := start.Add(-time.Minute), start.Add(3*time.Minute)
	for name, ds := range datasources {
		t.Run(name, func(t *testing.T) {
			series := func(q map[string]any, unit string) map[string]map[time.Time]float64 {
				t.Helper()
				q["queryType"] = "metrics"
				frames := plugintest.RequireOK(t, alertQuery(t, ds, q, from, to))
				requireAlertSeries(t, frames)
				return seriesPoints(t, frames, "k8s_pod_name", unit)
			}
			byPodQ := func(extra map[string]any) map[string]any {
				q := map[string]any{"profileTypeId": allocSpace, "groupBy": []string{"k8s_pod_name"}}
				maps.Copy(q, extra)
				return q
			}
			// allocated bytes per pod, as a rate
			require.Equal(t, heapRates(start, func(_ heapSnapshot, v int64) int64 { return v }), series(byPodQ(nil), "binBps"))

			// the function "cache" (a leaf): its rate, self and total alike
			cacheRate := heapRates(start, kindBytes("cache"))
			dropZeros(cacheRate)
			for _, value := range []string{"self", "total"} {
				require.Equal(t, cacheRate, series(byPodQ(map[string]any{"function": "cache", "functionValue": value}), "binBps"), value)
			}
			// its share of each pod's bytes
			require.Equal(t, heapShares(start, kindBytes("cache"), heapBytes),
				series(byPodQ(map[string]any{"function": "cache", "ratio": true}), "percentunit"))
			// main is the root of every stack: its total is everything, it is
			// never a leaf
			ones := heapShares(start, func(_ heapSnapshot, v int64) int64 { return v }, heapBytes)
			require.Equal(t, ones, series(byPodQ(map[string]any{"function": "main", "ratio": true}), "percentunit"))
			never := plugintest.RequireOK(t, alertQuery(t, ds, byPodQ(map[string]any{"queryType": "metrics", "function": "main", "functionValue": "self"}), from, to))
			require.Len(t, never, 1)
			require.Empty(t, never[0].Fields, "no stack ends in main: no data")
			// without a function, a ratio is a pod's share of all pods
			podShare := map[string]map[time.Time]float64{}
			podBytes, minuteBytes := map[string]map[time.Time]int64{}, map[time.Time]int64{}
			for _, s := range heapSnapshots {
				minute := start.Add(s.at).Truncate(time.Minute)
				if podBytes[s.pod] == nil {
					podBytes[s.pod], podShare[s.pod] = map[time.Time]int64{}, map[time.Time]float64{}
				}
				podBytes[s.pod][minute] += s.bytes
				minuteBytes[minute] += s.bytes
			}
			for pod, minutes := range podBytes {
				for minute, b := range minutes {
					podShare[pod][minute] = float64(b) / float64(minuteBytes[minute])
				}
			}
			requireClose(t, podShare, series(byPodQ(map[string]any{"ratio": true}), "percentunit"))

			// a gauge: in-use memory's share in cache, per pod (the
			// snapshot averages cancel out)
			gauge := series(map[string]any{"profileTypeId": inuseSpace, "groupBy": []string{"k8s_pod_name"}, "function": "cache", "ratio": true}, "percentunit")
			requireClose(t, heapShares(start, kindBytes("cache"), heapBytes), gauge)

			// no samples: the data plane's empty answer (a typed frame without fields), which alert rules read
			// as no data
			empty := plugintest.RequireOK(t, alertQuery(t, ds, map[string]any{
				"queryType": "metrics", "profileTypeId": allocSpace,
				"labelSelector": `{service_name="nobody"}`,
			}, from, to))
			require.Len(t, empty, 1)
			require.Empty(t, empty[0].Fields)
			require.Equal(t, data.FrameTypeTimeSeriesMulti, empty[0].Meta.Type)

			// both: the series only
			frames := plugintest.RequireOK(t, alertQuery(t, ds, map[string]any{"queryType": "both", "profileTypeId": allocSpace}, from, to))
			requireAlertSeries(t, frames)

			// a table: one number per function, labelled by it
			frames = plugintest.RequireOK(t, alertQuery(t, ds, map[string]any{"queryType": "table", "profileTypeId": allocSpace}, from, to))
			require.Len(t, frames, 1)
			require.Equal(t, data.FrameTypeNumericLong, frames[0].Meta.Type)
			require.Equal(t, []data.FieldType{data.FieldTypeString, data.FieldTypeFloat64}, []data.FieldType{frames[0].Fields[0].Type(), frames[0].Fields[1].Type()})
			got := map[string]float64{}
			for i := range frames[0].Rows() {
				got[frames[0].Fields[0].At(i).(string)] = frames[0].Fields[1].At(i).(float64) // string and float64 fields
			}
			var grow, cache float64
			for _, s := range heapSnapshots {
				grow += float64(kindBytes("grow")(s, s.bytes))
				cache += float64(kindBytes("cache")(s, s.bytes))
			}
			require.Equal(t, map[string]float64{"grow": grow, "cache": cache, "main": 0}, got)
			require.Equal(t, "bytes", frames[0].Fields[1].Config.Unit)

			// not numeric, or invalid: downstream errors
			for what, q := range map[string]map[string]any{
				"flame graph":  {"queryType": "profile", "profileTypeId": allocSpace},
				"diff":         {"queryType": "diff", "profileTypeId": allocSpace},
				"bad selector": {"queryType": "metrics", "profileTypeId": allocSpace, "labelSelector": "{a=}"},
				"bad ratio":    {"queryType": "table", "profileTypeId": allocSpace, "ratio": true},
				"bad value":    {"queryType": "metrics", "profileTypeId": allocSpace, "function": "x", "functionValue": "half"},
			} {
				r := alertQuery(t, ds, q, from, to)
				require.Error(t, r.Error, what)
				require.Equal(t, backend.ErrorSourceDownstream, r.ErrorSource, what)
				require.Equal(t, backend.StatusBadRequest, r.Status, what)
			}
			require.Contains(t, alertQuery(t, ds, map[string]any{"queryType": "profile", "profileTypeId": allocSpace}, from, to).Error.Error(),
				`use queryType "metrics"`)
		})
	}
}

// TestFunctionFilterOnFlameGraphs: without alerts too, a function filter
// keeps the stacks through the function (total) or ending in it (self).
func TestFunctionFilterOnFlameGraphs(t *testing.T) {
	datasources, start := heapWorld(t)
	from, to := start.Add(-time.Minute), start.Add(3*time.Minute)
	var cache, all int64
	for _, s := range heapSnapshots {
		cache += kindBytes("cache")(s, s.bytes)
		all += s.bytes
	}
	for name, ds := range datasources {
		t.Run(name, func(t *testing.T) {
			root := func(extra map[string]any) int64 {
				q := map[string]any{"profileTypeId": allocSpace}
				maps.Copy(q, extra)
				frames := plugintest.RequireOK(t, navQuery(t, ds, q, from, to))
				if frames[0].Rows() == 0 {
					return 0
				}
				return querytest.FlameRows(t, frames[0], "bytes")[0].Value
			}
			require.Equal(t, all, root(nil))
			require.Equal(t, cache, root(map[string]any{"function": "cache"}))
			require.Equal(t, cache, root(map[string]any{"function": "cache", "functionValue": "self"}))
			require.Equal(t, all, root(map[string]any{"function": "main"}))
			require.Zero(t, root(map[string]any{"function": "main", "functionValue": "self"}))
			require.Zero(t, root(map[string]any{"function": "no such function"}))
		})
	}
}

// dropZeros removes points of value 0 (a pod's minute without the part:
// no rows with the function).
func dropZeros(m map[string]map[time.Time]float64) {
	for key, points := range m {
		for at, v := range points {
			if v == 0 {
				delete(points, at)
			}
		}
		if len(points) == 0 {
			delete(m, key)
		}
	}
}

// requireClose compares series up to float rounding.
func requireClose(t *testing.T, want, got map[string]map[time.Time]float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for key, points := range want {
		require.Len(t, got[key], len(points), key)
		for at, v := range points {
			require.InDelta(t, v, got[key][at], 1e-9, "%s at %s", key, at)
		}
	}
}
