package plugin

import (
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/plugin"
)

// The heap profiles of the series tests: two processes (pods) of one
// service take heap snapshots at their own pace.
const (
	heapService  = "heapsvc"
	inuseSpace   = "memory:inuse_space:bytes:space:bytes"
	inuseObjects = "memory:inuse_objects:count:space:bytes"
	allocSpace   = "memory:alloc_space:bytes:space:bytes"
	heapPeriod   = 512 * 1024
)

// heapSnapshot is one heap profile of a pod, at an offset from the first
// minute's start: the bytes and objects in use (and, as a rate type, the
// same bytes as allocated), split over two stacks, grow and cache, unless
// growOnly.
type heapSnapshot struct {
	pod      string
	at       time.Duration
	bytes    int64
	objects  int64
	growOnly bool
}

// heapSnapshots: pod-a profiles four times in the first minute and twice
// in the second; pod-b three times in the first and once in the third.
var heapSnapshots = []heapSnapshot{
	{"pod-a", 0, 100 << 10, 10, false},
	{"pod-a", 15 * time.Second, 200 << 10, 22, true},
	{"pod-a", 30 * time.Second, 300 << 10, 31, false},
	{"pod-a", 45 * time.Second, 400 << 10, 41, false},
	{"pod-a", 65 * time.Second, 1000 << 10, 100, false},
	{"pod-a", 110 * time.Second, 3000 << 10, 300, false},
	{"pod-b", 5 * time.Second, 30 << 10, 3, false},
	{"pod-b", 25 * time.Second, 60 << 10, 6, false},
	{"pod-b", 50 * time.Second, 90 << 10, 12, true},
	{"pod-b", 130 * time.Second, 7 << 10, 7, false},
}

// heapPart is a snapshot's value on one stack, whose samples carry the
// sample attribute heap.kind = kind (the stack's leaf).
type heapPart struct {
	kind  string
	value int64
}

// parts splits a value of the snapshot over its stacks.
func (s heapSnapshot) parts(v int64) []heapPart {
	if s.growOnly {
		return []heapPart{{"grow", v}}
	}
	return []heapPart{{"grow", v / 4}, {"cache", v - v/4}}
}

// heapTypes are the profiles of each snapshot: sample type, unit, value.
var heapTypes = []struct {
	sampleType, unit string
	value            func(heapSnapshot) int64
}{
	{"inuse_space", "bytes", func(s heapSnapshot) int64 { return s.bytes }},
	{"inuse_objects", "count", func(s heapSnapshot) int64 { return s.objects }},
	{"alloc_space", "bytes", func(s heapSnapshot) int64 { return s.bytes }},
}

// heapResource is a pod's resource: pod-b has a namespace, pod-a none.
func heapResource(pod string) []string {
	attrs := []string{"service.name", heapService, "k8s.pod.name", pod}
	if pod == "pod-b" {
		attrs = append(attrs, "k8s.namespace.name", "shop")
	}
	return attrs
}

// heapRequest is the snapshots as one OTLP request, a profile per
// snapshot and type, values without timestamps (pprof heap profiles).
func heapRequest(start time.Time) *collectorpb.ExportProfilesServiceRequest {
	b := otlpbuild.New()
	m := b.Mapping(0x400000, 0x1400000, 0, "/app/heapsvc", "")
	stacks := map[string]int32{"grow": goStack(b, m, "heap.go", "main", "grow"), "cache": goStack(b, m, "heap.go", "main", "cache")}
	scopes := map[string]*pb.ScopeProfiles{}
	for _, s := range heapSnapshots {
		sp := scopes[s.pod]
		if sp == nil {
			sp = otlpbuild.Scope(b.Resource(heapResource(s.pod)...), "heap-test", "1")
			scopes[s.pod] = sp
		}
		for _, typ := range heapTypes {
			p := &pb.Profile{
				SampleType: b.ValueType(typ.sampleType, typ.unit), PeriodType: b.ValueType("space", "bytes"), Period: heapPeriod,
				TimeUnixNano: nanos(start.Add(s.at)),
			}
			for _, part := range s.parts(typ.value(s)) {
				p.Samples = append(p.Samples, &pb.Sample{
					StackIndex: stacks[part.kind], Values: []int64{part.value}, AttributeIndices: []int32{b.Attr("heap.kind", part.kind)},
				})
			}
			sp.Profiles = append(sp.Profiles, p)
		}
	}
	return b.Request()
}

// heapRows is the snapshots as the exporter writes them: a row per sample.
func heapRows(start time.Time) []exporterRow {
	var rows []exporterRow
	for _, s := range heapSnapshots {
		attrs := heapResource(s.pod)
		resource := map[string]string{}
		for i := 2; i < len(attrs); i += 2 {
			resource[attrs[i]] = attrs[i+1]
		}
		for _, typ := range heapTypes {
			for _, part := range s.parts(typ.value(s)) {
				rows = append(rows, exporterRow{
					at: start.Add(s.at), service: heapService, sampleType: typ.sampleType, sampleUnit: typ.unit,
					periodType: "space", periodUnit: "bytes", period: heapPeriod, resource: resource, sample: map[string]string{"heap.kind": part.kind},
					hash: uint64(len(part.kind)), functions: []string{part.kind, "main"}, mappings: []string{"", ""}, files: []string{"heap.go", "heap.go"},
					addresses: []uint64{0, 0}, values: []int64{part.value},
				})
			}
		}
	}
	return rows
}

// heapWorld sends the snapshots to Flamehouse's ingest and writes them
// into an exporter-shaped table, and returns a datasource on each, by
// schema, and the first minute's start.
func heapWorld(t *testing.T) (map[string]*plugin.Datasource, time.Time) {
	t.Helper()
	start := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	ours := newFixture(t, nil)
	ours.send(t, heapRequest(start))

	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	const table = "heap_profiles" // profiles.otelTable: the exporter's profiles_table_name
	plugintest.CreateExporterTable(t, db, table)
	insertExporterRows(t, db, table, heapRows(start))
	otel := plugintest.Instance(t, plugintest.OTelSettings(t, db, table), map[string]string{"password": srv.Options.Auth.Password})
	return map[string]*plugin.Datasource{"flamehouse": ours.ds, "otel": otel}, start
}

// seriesPoints reads time series frames: each series' points by time,
// keyed by a label's value ("" without the label), in the given unit.
func seriesPoints(t *testing.T, frames data.Frames, label, unit string) map[string]map[time.Time]float64 {
	t.Helper()
	out := map[string]map[time.Time]float64{}
	for _, f := range frames {
		require.Equal(t, "series", f.Name)
		times, value := f.Fields[0], f.Fields[1]
		require.Equal(t, unit, value.Config.Unit)
		key := value.Labels[label]
		require.NotContains(t, out, key, "one series per %s", label)
		out[key] = map[time.Time]float64{}
		for i := range value.Len() {
			at, _ := times.ConcreteAt(i)
			v, _ := value.ConcreteAt(i)
			out[key][at.(time.Time)] = v.(float64) // a time and a float64 field
		}
	}
	return out
}

// heapExpected computes, per key and minute, the sum over pods of each
// pod's average over its snapshots in that minute: values gives a
// snapshot's value by key (a snapshot without a key's value counts as 0
// for it).
func heapExpected(start time.Time, values func(heapSnapshot) map[string]int64) map[string]map[time.Time]float64 {
	type podMinute struct {
		pod    string
		minute time.Time
	}
	type bucket struct {
		key string
		podMinute
	}
	sums, snapshots := map[bucket]int64{}, map[podMinute]int64{}
	for _, s := range heapSnapshots {
		pm := podMinute{s.pod, start.Add(s.at).Truncate(time.Minute)}
		snapshots[pm]++
		for key, v := range values(s) {
			sums[bucket{key, pm}] += v
		}
	}
	out := map[string]map[time.Time]float64{}
	for b, sum := range sums {
		if out[b.key] == nil {
			out[b.key] = map[time.Time]float64{}
		}
		out[b.key][b.minute] += float64(sum) / float64(snapshots[b.podMinute])
	}
	return out
}

// byPod keys a snapshot's value by its pod.
func byPod(value func(heapSnapshot) int64) func(heapSnapshot) map[string]int64 {
	return func(s heapSnapshot) map[string]int64 { return map[string]int64{s.pod: value(s)} }
}

func heapBytes(s heapSnapshot) int64 { return s.bytes }

// TestGaugeSeriesAverageSnapshots checks in-use memory time series on both
// schemas: per minute, each process's average over its heap snapshots in
// that minute, processes added up, in bytes or objects (not per second);
// the minute rollups, which add snapshots up, are not read. Allocated
// bytes, from the same snapshots, stay a rate. The series' flame graph
// link opens the point's minute, whose flame graph adds the snapshots up.
func TestGaugeSeriesAverageSnapshots(t *testing.T) {
	datasources, start := heapWorld(t)
	from, to := start.Add(-time.Minute), start.Add(3*time.Minute) // whole minutes: rollups could answer
	for name, ds := range datasources {
		t.Run(name, func(t *testing.T) {
			requireGaugeAverages(t, ds, start, from, to)
			requireGaugeLinksOpenMinutes(t, ds, start, from, to)
			requireAllocatedRate(t, ds, start, from, to)
		})
	}
}

// requireGaugeAverages: in-use bytes and objects per minute, each pod's
// average over its snapshots, by pod, added up, and by a sample attribute.
func requireGaugeAverages(t *testing.T, ds *plugin.Datasource, start, from, to time.Time) {
	t.Helper()
	for _, tc := range []struct {
		typeID, unit string
		value        func(heapSnapshot) int64
	}{
		{inuseSpace, "bytes", heapBytes},
		{inuseObjects, "short", func(s heapSnapshot) int64 { return s.objects }},
	} {
		t.Run(tc.typeID, func(t *testing.T) {
			points := func(q map[string]any, label string) map[string]map[time.Time]float64 {
				q["queryType"], q["profileTypeId"] = "metrics", tc.typeID
				return seriesPoints(t, plugintest.RequireOK(t, navQuery(t, ds, q, from, to)), label, tc.unit)
			}
			require.Equal(t, heapExpected(start, byPod(tc.value)), points(map[string]any{"groupBy": []string{"k8s_pod_name"}}, "k8s_pod_name"))
			require.Equal(t, heapExpected(start, func(s heapSnapshot) map[string]int64 { return map[string]int64{"": tc.value(s)} }),
				points(map[string]any{"labelSelector": `{service_name="` + heapService + `"}`}, "k8s_pod_name"), "the pods add up")
			// Grouped by a sample attribute, a pod's snapshot without
			// cache samples counts as no cache.
			require.Equal(t, heapExpected(start, func(s heapSnapshot) map[string]int64 {
				kinds := map[string]int64{}
				for _, p := range s.parts(tc.value(s)) {
					kinds[p.kind] += p.value
				}
				return kinds
			}), points(map[string]any{"groupBy": []string{"heap_kind"}}, "heap_kind"))
		})
	}
}

// requireGaugeLinksOpenMinutes: the link of a point opens its minute's
// flame graph, the sum of the pod's snapshots in it.
func requireGaugeLinksOpenMinutes(t *testing.T, ds *plugin.Datasource, start, from, to time.Time) {
	t.Helper()
	q := map[string]any{"queryType": "metrics", "profileTypeId": inuseSpace, "groupBy": []string{"k8s_pod_name"}}
	for _, f := range plugintest.RequireOK(t, navQuery(t, ds, q, from, to)) {
		value := f.Fields[1]
		pod := value.Labels["k8s_pod_name"]
		require.Len(t, value.Config.Links, 1)
		for i := range value.Len() {
			at, _ := f.Fields[0].ConcreteAt(i)
			minute := at.(time.Time) // the time field
			var want int64
			for _, s := range heapSnapshots {
				if s.pod == pod && start.Add(s.at).Truncate(time.Minute).Equal(minute) {
					want += s.bytes
				}
			}
			flame := querytest.FlameRows(t, followLinkAt(t, ds, value.Config.Links[0], minute, from, to)[0], "bytes")
			require.Equal(t, want, flame[0].Value, "%s at %s", pod, minute)
		}
	}
}

// requireAllocatedRate: allocated bytes add up, a rate per second over the
// minute.
func requireAllocatedRate(t *testing.T, ds *plugin.Datasource, start, from, to time.Time) {
	t.Helper()
	q := map[string]any{"queryType": "metrics", "profileTypeId": allocSpace, "groupBy": []string{"k8s_pod_name"}}
	perMinute := heapExpected(start, byPod(heapBytes))
	for pod, points := range perMinute {
		for minute := range points {
			var sum int64
			for _, s := range heapSnapshots {
				if s.pod == pod && start.Add(s.at).Truncate(time.Minute).Equal(minute) {
					sum += s.bytes
				}
			}
			points[minute] = float64(sum) / 60
		}
	}
	require.Equal(t, perMinute, seriesPoints(t, plugintest.RequireOK(t, navQuery(t, ds, q, from, to)), "k8s_pod_name", "binBps"))
}

// TestSeriesDisplayNames checks the name each time series shows in
// legends and tooltips (DisplayNameFromDS), on both schemas: grouped, the
// group's label values (an absent label as "(no <label>)"); ungrouped,
// the query's selector, else the profile type as the editor's picker
// names it. The value fields keep their labels.
func TestSeriesDisplayNames(t *testing.T) {
	datasources, start := heapWorld(t)
	from, to := start.Add(-time.Minute), start.Add(3*time.Minute)
	for name, ds := range datasources {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				name     string
				q        map[string]any
				want     map[string]string // display name by the fields' labels
				wantType string
			}{
				{"by pod", map[string]any{"groupBy": []string{"k8s_pod_name"}}, map[string]string{
					"k8s_pod_name=pod-a": "pod-a", "k8s_pod_name=pod-b": "pod-b",
				}, inuseSpace},
				{"by service and namespace", map[string]any{"groupBy": []string{"service_name", "k8s.namespace.name"}}, map[string]string{
					"k8s_namespace_name=, service_name=heapsvc":     "heapsvc, (no k8s_namespace_name)",
					"k8s_namespace_name=shop, service_name=heapsvc": "heapsvc, shop",
				}, inuseSpace},
				{"a selector", map[string]any{"labelSelector": `{service_name="heapsvc", k8s_pod_name=~"pod-.*"}`}, map[string]string{
					"": `{service_name="heapsvc", k8s_pod_name=~"pod-.*"}`,
				}, allocSpace},
				{"everything", map[string]any{"labelSelector": "{}"}, map[string]string{"": "memory / inuse_objects"}, inuseObjects},
			} {
				t.Run(tc.name, func(t *testing.T) {
					tc.q["queryType"], tc.q["profileTypeId"] = "metrics", tc.wantType
					got := map[string]string{}
					for _, f := range plugintest.RequireOK(t, navQuery(t, ds, tc.q, from, to)) {
						value := f.Fields[1]
						require.Equal(t, tc.wantType, value.Name, "the field keeps its name")
						require.NotNil(t, value.Config)
						got[labelsKey(value.Labels)] = value.Config.DisplayNameFromDS
					}
					require.Equal(t, tc.want, got)
				})
			}
		})
	}
}

// labelsKey is a field's labels as a=b, c=d, "" without labels.
func labelsKey(l data.Labels) string {
	if len(l) == 0 {
		return ""
	}
	return l.String()
}
