package plugin

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// exporterRow is one row of the exporter's profiles table, as the
// exporter writes it: frames leaf first.
type exporterRow struct {
	at                             time.Time
	service                        string
	sampleType, sampleUnit         string
	periodType, periodUnit         string
	period                         int64
	resource, sample               map[string]string
	hash                           uint64
	functions, mappings, files     []string
	addresses                      []uint64
	values                         []int64
	stamps                         int // timestamps, one per event
	traceID, spanID                string
	leafFirstLabels                []string // what the datasource must name the frames
	wantCPUNanos, wantCount, wantB int64    // the row's value under each profile type
}

const (
	cpuCountType = "process_cpu:samples:count:cpu:nanoseconds"
	allocType    = "memory:alloc_space:bytes:space:bytes"
	cpuPeriod    = 50_000_000 // 20 Hz
)

// exporterFixture fills an exporter-shaped table with rows covering each
// rule of the adapter: eBPF counts as CPU time, a pprof-style service that
// sends CPU time itself, values without timestamps and timestamps without
// values, unsymbolized frames, resource and sample attributes, span links.
func exporterFixture(t *testing.T) (*plugin.Datasource, []exporterRow, time.Time) {
	t.Helper()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	plugintest.CreateExporterTable(t, db, "profiles_x")
	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	pod := func(p string) map[string]string {
		return map[string]string{"k8s.pod.name": p, "k8s.namespace.name": "shop", "thread.name": "resource-thread"}
	}
	ebpf := func(r exporterRow) exporterRow {
		r.service, r.sampleType, r.sampleUnit, r.periodType, r.periodUnit, r.period = "checkout", "samples", "count", "cpu", "nanoseconds", cpuPeriod
		return r
	}
	rows := []exporterRow{
		ebpf(exporterRow{
			at: at, resource: pod("pod-a"), sample: map[string]string{"thread.name": "worker"}, hash: 1,
			functions: []string{"leaf", "mid", "main"}, mappings: []string{"", "", ""}, files: []string{"a.go", "a.go", "main.go"},
			addresses: []uint64{1, 2, 3}, stamps: 3, leafFirstLabels: []string{"leaf", "mid", "main"}, wantCPUNanos: 3 * cpuPeriod,
		}),
		ebpf(exporterRow{
			at: at.Add(5 * time.Second), resource: pod("pod-b"), hash: 2,
			functions: []string{"", "", "mid", "main"}, mappings: []string{"/usr/lib/libc.so.6", "", "", ""}, files: []string{"", "", "a.go", "main.go"},
			addresses: []uint64{0xabc, 0x1f0, 2, 3}, values: []int64{2, 5}, stamps: 2, traceID: "0af7651916cd43dd8448eb211c80319c", spanID: "b7ad6b7169203331",
			leafFirstLabels: []string{"[libc.so.6]", "0x1f0", "mid", "main"}, wantCPUNanos: 7 * cpuPeriod,
		}),
		// The exporter's StackHash covers function and file names only: this
		// stack shares the one above's hash, but its leaf is in another library.
		ebpf(exporterRow{
			at: at.Add(5 * time.Second), resource: pod("pod-b"), hash: 2,
			functions: []string{"", "", "mid", "main"}, mappings: []string{"/usr/lib/libssl.so.3", "", "", ""}, files: []string{"", "", "a.go", "main.go"},
			addresses: []uint64{0x7abc, 0x1f0, 2, 3}, values: []int64{1}, leafFirstLabels: []string{"[libssl.so.3]", "0x1f0", "mid", "main"}, wantCPUNanos: cpuPeriod,
		}),
		ebpf(exporterRow{
			at: at.Add(10 * time.Second), resource: pod("pod-a"), sample: map[string]string{"thread.name": "io"}, hash: 1,
			functions: []string{"leaf", "mid", "main"}, mappings: []string{"", "", ""}, files: []string{"a.go", "a.go", "main.go"},
			addresses: []uint64{1, 2, 3}, values: []int64{4}, traceID: "0af7651916cd43dd8448eb211c80319c", spanID: "00f067aa0ba902b7",
			leafFirstLabels: []string{"leaf", "mid", "main"}, wantCPUNanos: 4 * cpuPeriod,
		}),
		// A pprof-style service: CPU time and sample counts side by side.
		{
			at: at, service: "gosvc", sampleType: "cpu", sampleUnit: "nanoseconds", periodType: "cpu", periodUnit: "nanoseconds", period: 10_000_000,
			resource: pod("pod-g"), hash: 3, functions: []string{"runtime.gc", "main"}, mappings: []string{"", ""}, files: []string{"", ""},
			addresses: []uint64{0, 0}, values: []int64{30_000_000}, leafFirstLabels: []string{"runtime.gc", "main"}, wantCPUNanos: 30_000_000,
		},
		{
			at: at, service: "gosvc", sampleType: "samples", sampleUnit: "count", periodType: "cpu", periodUnit: "nanoseconds", period: 10_000_000,
			resource: pod("pod-g"), hash: 3, functions: []string{"runtime.gc", "main"}, mappings: []string{"", ""}, files: []string{"", ""},
			addresses: []uint64{0, 0}, values: []int64{3}, leafFirstLabels: []string{"runtime.gc", "main"}, wantCount: 3,
		},
		{
			at: at, service: "gosvc", sampleType: "alloc_space", sampleUnit: "bytes", periodType: "space", periodUnit: "bytes", period: 524288,
			resource: pod("pod-g"), hash: 4, functions: []string{"make", "main"}, mappings: []string{"", ""}, files: []string{"", ""},
			addresses: []uint64{0, 0}, values: []int64{4096}, leafFirstLabels: []string{"make", "main"}, wantB: 4096,
		},
	}
	insertExporterRows(t, db, "profiles_x", rows)
	settings := plugintest.EmbeddedSettings(t, db)
	settings["profiles"] = map[string]any{"database": db, "schema": "otel", "otelTable": "profiles_x", "spanWindowPadding": "30"}
	return plugintest.Instance(t, settings, map[string]string{"password": srv.Options.Auth.Password}), rows, at
}

func insertExporterRows(t *testing.T, db, table string, rows []exporterRow) {
	t.Helper()
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+schema.QuoteIdentifier(db)+"."+schema.QuoteIdentifier(table)+
		" (Timestamp, ServiceName, SampleType, SampleUnit, PeriodType, PeriodUnit, Period, ResourceAttributes, SampleAttributes,"+
		" StackHash, FunctionNames, FileNames, MappingFileNames, Addresses, Values, TimestampsUnixNano, TraceId, SpanId)")
	require.NoError(t, err)
	for _, r := range rows {
		stamps := make([]uint64, r.stamps)
		for i := range stamps {
			stamps[i] = uint64(r.at.UnixNano()) + uint64(i)*1e6
		}
		sample := r.sample
		if sample == nil {
			sample = map[string]string{}
		}
		values := r.values
		if values == nil {
			values = []int64{}
		}
		require.NoError(t, b.Append(r.at, r.service, r.sampleType, r.sampleUnit, r.periodType, r.periodUnit, r.period, r.resource, sample,
			r.hash, r.functions, r.files, r.mappings, r.addresses, values, stamps, r.traceID, r.spanID))
	}
	require.NoError(t, b.Send())
}

// expectedFromRows sums the rows that keep passes, per root-first stack
// path label and in total, under a value function.
func expectedFromRows(rows []exporterRow, value func(exporterRow) int64, keep func(exporterRow) bool) (self, total map[string]int64, sum int64) {
	self, total = map[string]int64{}, map[string]int64{}
	for _, r := range rows {
		v := value(r)
		if v == 0 || !keep(r) {
			continue
		}
		sum += v
		self[r.leafFirstLabels[0]] += v
		seen := map[string]bool{}
		for _, l := range r.leafFirstLabels {
			if !seen[l] {
				total[l] += v
				seen[l] = true
			}
		}
	}
	return self, total, sum
}

func cpuNanos(r exporterRow) int64 { return r.wantCPUNanos }

func all(exporterRow) bool { return true }

func TestOTelSchemaFlameGraphTableAndTypes(t *testing.T) {
	ds, rows, at := exporterFixture(t)
	f := &fixture{ds: ds}
	from, to := at.Add(-time.Minute), at.Add(time.Minute)

	for _, tc := range []struct {
		typeID, unit string
		value        func(exporterRow) int64
	}{
		{"process_cpu:cpu:nanoseconds:cpu:nanoseconds", "ns", cpuNanos},
		{cpuCountType, "short", func(r exporterRow) int64 { return r.wantCount }},
		{allocType, "bytes", func(r exporterRow) int64 { return r.wantB }},
	} {
		t.Run(tc.typeID, func(t *testing.T) {
			wantSelf, wantTotal, sum := expectedFromRows(rows, tc.value, all)
			flame := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, map[string]any{"profileTypeId": tc.typeID}, from, to))[0], tc.unit)
			require.Equal(t, sum, flame[0].Value, "root total")
			table := plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "table", "profileTypeId": tc.typeID}, from, to))[0]
			requireTable(t, table, wantSelf, wantTotal)
		})
	}

	// Frames are read root first: main is the root's only child and leaf
	// sits under mid.
	flame := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, map[string]any{"profileTypeId": "process_cpu:cpu:nanoseconds:cpu:nanoseconds"}, from, to))[0], "ns")
	require.Equal(t, "main", flame[1].Label)
	require.Equal(t, int64(1), flame[1].Level)
	levels := map[string]int64{}
	for _, r := range flame {
		levels[r.Label] = r.Level
	}
	require.Equal(t, map[string]int64{"total": 0, "main": 1, "mid": 2, "leaf": 3, "0x1f0": 3, "[libc.so.6]": 4, "[libssl.so.3]": 4, "runtime.gc": 2}, levels)
}

func TestOTelSchemaSelectorsSpansAndSeries(t *testing.T) {
	ds, rows, at := exporterFixture(t)
	f := &fixture{ds: ds}
	from, to := at.Add(-time.Minute), at.Add(time.Minute)
	cpu := "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	root := func(q map[string]any) int64 {
		t.Helper()
		q["profileTypeId"] = cpu
		return rootValue(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0])
	}
	sum := func(keep func(exporterRow) bool) int64 {
		_, _, s := expectedFromRows(rows, cpuNanos, keep)
		return s
	}
	pod := func(p string) func(exporterRow) bool {
		return func(r exporterRow) bool { return r.resource["k8s.pod.name"] == p }
	}
	require.Equal(t, sum(pod("pod-a")), root(map[string]any{"labelSelector": `{k8s_pod_name="pod-a"}`}))
	require.Equal(t, sum(func(r exporterRow) bool { return !pod("pod-a")(r) }), root(map[string]any{"labelSelector": `{k8s_pod_name!="pod-a"}`}))
	require.Equal(t, sum(func(r exporterRow) bool { return r.service == "checkout" }),
		root(map[string]any{"labelSelector": `{service_name="checkout", k8s_namespace_name=~"sh.p"}`}))
	// A sample attribute wins over the resource's; rows without it fall
	// back to the resource's thread.name.
	require.Equal(t, sum(func(r exporterRow) bool { return r.sample["thread.name"] == "worker" }), root(map[string]any{"labelSelector": `{thread_name="worker"}`}))
	require.Equal(t, sum(func(r exporterRow) bool { return r.sample["thread.name"] == "" }), root(map[string]any{"labelSelector": `{thread_name="resource-thread"}`}))
	require.Equal(t, int64(0), root(map[string]any{"labelSelector": `{k8s_pod_name="x'); DROP TABLE t --"}`}))

	// Spans and traces (span range widened by the padding).
	span := func(s string) func(exporterRow) bool { return func(r exporterRow) bool { return r.spanID == s } }
	require.Equal(t, sum(span("b7ad6b7169203331")), root(map[string]any{"spanSelector": []string{"B7AD6B7169203331"}}))
	require.Equal(t, sum(func(r exporterRow) bool { return r.traceID != "" }), root(map[string]any{"traceId": "0af7651916cd43dd8448eb211c80319c"}))

	// Series per pod add up to each pod's CPU time.
	frames := plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "metrics", "profileTypeId": cpu, "groupBy": []string{"k8s_pod_name"}}, from, to))
	got := map[string]int64{}
	for _, fr := range frames {
		value := fr.Fields[1]
		var cores float64
		for i := range value.Len() {
			v, _ := value.ConcreteAt(i)
			cores += v.(float64) * 60 // rates over one-minute steps
		}
		got[value.Labels["k8s_pod_name"]] = int64(math.Round(cores * 1e9))
	}
	require.Equal(t, map[string]int64{"pod-a": sum(pod("pod-a")), "pod-b": sum(pod("pod-b")), "pod-g": sum(pod("pod-g"))}, got)
}

func TestOTelSchemaEditorResources(t *testing.T) {
	ds, _, at := exporterFixture(t)
	from, to := at.Add(-time.Minute).UnixMilli(), at.Add(time.Minute).UnixMilli()
	get := func(path string, params url.Values, out any) {
		t.Helper()
		params.Set("from", jsonNumber(from))
		params.Set("to", jsonNumber(to))
		u := path + "?" + params.Encode()
		var resp *backend.CallResourceResponse
		err := ds.CallResource(context.Background(), &backend.CallResourceRequest{Method: http.MethodGet, Path: path, URL: u},
			backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { resp = r; return nil }))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
		require.NoError(t, json.Unmarshal(resp.Body, out))
	}
	var types []query.ProfileTypeInfo
	get("profileTypes", url.Values{}, &types)
	var ids []string
	for _, ty := range types {
		ids = append(ids, ty.ID)
	}
	require.Equal(t, []string{allocType, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", cpuCountType}, ids,
		"eBPF counts are CPU time; the pprof-style service's counts keep their id")

	var services []string
	get("services", url.Values{"profileTypeId": {cpuCountType}}, &services)
	require.Equal(t, []string{"gosvc"}, services)
	get("services", url.Values{}, &services)
	require.Equal(t, []string{"checkout", "gosvc"}, services)

	var names []string
	get("labelNames", url.Values{}, &names)
	require.Subset(t, names, []string{"service_name", "k8s_pod_name", "k8s_namespace_name", "thread_name"})

	var values []string
	get("labelValues", url.Values{"label": {"k8s_pod_name"}}, &values)
	require.Equal(t, []string{"pod-a", "pod-b", "pod-g"}, values)
	get("labelValues", url.Values{"label": {"k8s_pod_name"}, "labelSelector": {`{service_name="checkout"}`}}, &values)
	require.Equal(t, []string{"pod-a", "pod-b"}, values)
	get("labelValues", url.Values{"label": {"thread_name"}}, &values)
	require.Equal(t, []string{"io", "resource-thread", "worker"}, values)
}

func jsonNumber(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
