package plugin

import (
	"context"
	"encoding/hex"
	"math"
	"path"
	"strconv"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/query"
)

// TestOTelExporterSchemaMatchesFlamehouse sends the same eBPF-shaped
// reports to Flamehouse's ingest and, through a real Collector, to the
// contrib ClickHouse exporter (its otel_profiles table in a database of
// its own), and queries both through the datasource: once with schema
// "flamehouse", once with schema "otel". Unfiltered, for one pod, one
// span, one trace and one thread, both must give the same flame graph
// (node by node), and each schema's flame graph root, top-functions table
// (self and total of every function) and CPU time series total must be
// what the requests alone hold (events × period, frames labelled as the
// datasource labels them), so that both sides cannot be wrong alike.
func TestOTelExporterSchemaMatchesFlamehouse(t *testing.T) {
	srv := chtest.Get(t)
	bin := otelcoltest.Build(t, otelcoltest.ClickHouseCollector)
	ours := newFixture(t, map[string]any{"schema": "flamehouse"})
	// A database of the exporter's tables only: a datasource that ignored
	// the schema setting would find no Flamehouse tables there.
	otelDB := srv.NewDatabase(t)
	col := otelcoltest.Start(t, bin, otelcoltest.Config{
		Exporters: map[string]any{"clickhouse": otelcoltest.ClickHouseExporter(srv, otelDB)},
		Pipelines: map[string]otelcoltest.Pipeline{"profiles": {Exporters: []string{"clickhouse"}}},
	})
	exporter := &fixture{ds: plugintest.Instance(t, plugintest.OTelSettings(t, otelDB, query.DefaultOTelTable), nil)}

	start := time.Now().UTC().Truncate(time.Minute).Add(-5 * time.Minute)
	reqs := compatWorkload(start)
	exportAll(t, ours.ingest.GRPCAddress(), reqs)
	exportAll(t, col.GRPCEndpoint, reqs)

	requireExporterRows(t, otelDB, reqs)

	pod, link := "checkout-001", firstLink(t, reqs)
	from, to := start.Add(-time.Minute), time.Now()
	for _, tc := range []struct {
		name string
		q    map[string]any
		keep func(s sampleRef) bool
	}{
		{"all", map[string]any{"labelSelector": `{service_name="checkout"}`}, func(sampleRef) bool { return true }},
		{"pod", map[string]any{"labelSelector": `{k8s_pod_name="` + pod + `"}`}, func(s sampleRef) bool { return s.pod == pod }},
		{"span", map[string]any{"spanSelector": []string{link.span}}, func(s sampleRef) bool { return s.span == link.span }},
		{"trace", map[string]any{"traceId": link.trace}, func(s sampleRef) bool { return s.trace == link.trace }},
		{"thread", map[string]any{"labelSelector": `{thread_name="worker-1"}`}, func(s sampleRef) bool { return s.thread == "worker-1" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := expectFromRequests(reqs, tc.keep)
			require.Positive(t, want.sum, "the workload has samples to select")
			for name, f := range map[string]*fixture{"flamehouse": ours, "otel": exporter} {
				t.Run(name, func(t *testing.T) {
					w := want
					if name == "otel" {
						w = want.unmarked() // the exporter keeps no frame types
					}
					requireCompatAnswers(t, f, tc.q, from, to, w)
				})
			}
			requireSameFlameGraph(t, ours, exporter, tc.q, from, to, true)
		})
	}
}

// compatWorkload is two 5 s reports of three pods (4,000 events, 10% of
// them linked to spans) starting at start.
func compatWorkload(start time.Time) []*collectorpb.ExportProfilesServiceRequest {
	g := profilegen.New(profilegen.Config{
		Service: "checkout", Pods: 3, Stacks: 400, Functions: 200, Locations: 600, MinDepth: 5, MaxDepth: 25,
		SamplesPerSecond: 400, ReportInterval: 5 * time.Second, TraceFraction: 0.1, Threads: 4, CPUs: 4, Seed: 11,
	})
	return []*collectorpb.ExportProfilesServiceRequest{g.Report(start), g.Report(start.Add(5 * time.Second))}
}

// exportAll sends the requests over OTLP/gRPC; both Flamehouse's ingest
// and the exporter without a sending queue answer once the rows are
// committed.
func exportAll(t testing.TB, addr string, reqs []*collectorpb.ExportProfilesServiceRequest) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = cc.Close() }()
	client := collectorpb.NewProfilesServiceClient(cc)
	for _, req := range reqs {
		resp, err := client.Export(context.Background(), req)
		require.NoError(t, err, "export to %s", addr)
		require.Zero(t, resp.GetPartialSuccess().GetRejectedProfiles(), resp.GetPartialSuccess().GetErrorMessage())
	}
}

// sampleRef is what a filter looks at in one OTLP sample: the pod, the
// linked trace and span (hex) and the thread.name attribute.
type sampleRef struct {
	pod, trace, span, thread string
}

// compatWant is the oracle: what the requests hold for one filter, in
// CPU nanoseconds.
type compatWant struct {
	sum         int64
	self, total map[string]int64
}

// expectFromRequests computes the total and the top functions of the
// samples keep selects from the OTLP requests themselves, independently of
// either schema: weight = events × period, frames leaf first (a location's
// lines innermost first), labelled as the datasource labels them on
// Flamehouse's tables (kernel frames marked: oracleMarks; unmarked gives
// the exporter table's labels), and a function's total counted once per
// stack.
func expectFromRequests(reqs []*collectorpb.ExportProfilesServiceRequest, keep func(sampleRef) bool) compatWant {
	want := compatWant{self: map[string]int64{}, total: map[string]int64{}}
	for _, req := range reqs {
		dict := req.GetDictionary()
		for _, rp := range req.GetResourceProfiles() {
			ref := sampleRef{pod: resourceAttr(rp, "k8s.pod.name")}
			for _, sp := range rp.GetScopeProfiles() {
				for _, p := range sp.GetProfiles() {
					for _, s := range p.GetSamples() {
						ref.trace, ref.span, ref.thread = "", "", sampleAttr(dict, s, "thread.name")
						if li := s.GetLinkIndex(); li > 0 {
							link := dict.GetLinkTable()[li]
							ref.trace, ref.span = hex.EncodeToString(link.GetTraceId()), hex.EncodeToString(link.GetSpanId())
						}
						if keep(ref) {
							want.add(int64(len(s.GetTimestampsUnixNano()))*p.GetPeriod(), querytest.MarkKinds(stackLabels(dict, s.GetStackIndex())))
						}
					}
				}
			}
		}
	}
	return want
}

// unmarked is the expectation without frame kind marks: the labels of the
// exporter's table, which keeps no frame types.
func (w compatWant) unmarked() compatWant {
	out := compatWant{sum: w.sum, self: map[string]int64{}, total: map[string]int64{}}
	for l, v := range w.self {
		out.self[plugintest.WithoutMark(l)] += v
	}
	for l, v := range w.total {
		out.total[plugintest.WithoutMark(l)] += v
	}
	return out
}

// add counts one sample of value v with the given frame labels, leaf first.
func (w *compatWant) add(v int64, labels []string) {
	w.sum += v
	if len(labels) == 0 {
		return
	}
	w.self[labels[0]] += v
	seen := map[string]bool{}
	for _, l := range labels {
		if !seen[l] {
			seen[l] = true
			w.total[l] += v
		}
	}
}

func resourceAttr(rp *pb.ResourceProfiles, key string) string {
	for _, kv := range rp.GetResource().GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func sampleAttr(dict *pb.ProfilesDictionary, s *pb.Sample, key string) string {
	for _, i := range s.GetAttributeIndices() {
		if kv := dict.GetAttributeTable()[i]; dict.GetStringTable()[kv.GetKeyStrindex()] == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// stackLabels returns a stack's frame labels, leaf first: one frame per
// line of a location (innermost first), one for a location without lines;
// and each frame's profile.frame.type.
func stackLabels(dict *pb.ProfilesDictionary, stack int32) (labels, types []string) {
	str := dict.GetStringTable()
	for _, li := range dict.GetStackTable()[stack].GetLocationIndices() {
		loc := dict.GetLocationTable()[li]
		mapping := ""
		if mi := loc.GetMappingIndex(); mi > 0 {
			mapping = str[dict.GetMappingTable()[mi].GetFilenameStrindex()]
		}
		typ := ""
		for _, ai := range loc.GetAttributeIndices() {
			if kv := dict.GetAttributeTable()[ai]; str[kv.GetKeyStrindex()] == "profile.frame.type" {
				typ = kv.GetValue().GetStringValue()
			}
		}
		if len(loc.GetLines()) == 0 {
			labels, types = append(labels, oracleLabel("", "", mapping, "", loc.GetAddress())), append(types, typ)
			continue
		}
		for _, line := range loc.GetLines() {
			fn := dict.GetFunctionTable()[line.GetFunctionIndex()]
			labels = append(labels, oracleLabel(str[fn.GetNameStrindex()], str[fn.GetSystemNameStrindex()], mapping, str[fn.GetFilenameStrindex()], loc.GetAddress()))
			types = append(types, typ)
		}
	}
	return labels, types
}

// oracleLabel names a frame: function name, else system name, else
// "[basename(mapping file)]", else file name, else the address in hex.
func oracleLabel(name, systemName, mapping, file string, address uint64) string {
	switch {
	case name != "":
		return name
	case systemName != "":
		return systemName
	case mapping != "":
		return "[" + path.Base(mapping) + "]"
	case file != "":
		return file
	}
	return "0x" + strconv.FormatUint(address, 16)
}

// firstLink returns the first trace and span (hex) a sample links to.
func firstLink(t *testing.T, reqs []*collectorpb.ExportProfilesServiceRequest) sampleRef {
	t.Helper()
	for _, req := range reqs {
		for _, l := range req.GetDictionary().GetLinkTable() {
			if len(l.GetSpanId()) > 0 {
				return sampleRef{trace: hex.EncodeToString(l.GetTraceId()), span: hex.EncodeToString(l.GetSpanId())}
			}
		}
	}
	t.Fatal("the workload links no sample to a span")
	return sampleRef{}
}

// requireExporterRows checks that the exporter stored one row per OTLP
// sample and every event, so that the otel answers come from its table.
func requireExporterRows(t *testing.T, database string, reqs []*collectorpb.ExportProfilesServiceRequest) {
	t.Helper()
	var want plugintest.RequestStats
	for _, req := range reqs {
		st := plugintest.CountRequest(req)
		want.Samples += st.Samples
		want.Events += st.Events
	}
	var rows, stored int64
	conn := chtest.Get(t).Open(t)
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT toInt64(count()), toInt64(sum(length(TimestampsUnixNano))) FROM "+
		database+"."+query.DefaultOTelTable).Scan(&rows, &stored))
	require.Equal(t, []int64{want.Samples, want.Events}, []int64{rows, stored}, "exporter rows and events")
}

// withQuery returns the filters of base as a CPU query of queryType.
func withQuery(base map[string]any, queryType string) map[string]any {
	q := map[string]any{"profileTypeId": plugintest.CPUType, "queryType": queryType}
	for k, v := range base {
		q[k] = v
	}
	return q
}

// requireCompatAnswers checks one datasource's flame graph root, top
// table and CPU time series against the oracle.
func requireCompatAnswers(t *testing.T, f *fixture, base map[string]any, from, to time.Time, want compatWant) {
	t.Helper()
	rows := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, withQuery(base, query.TypeProfile), from, to))[0], "ns")
	require.Equal(t, want.sum, rows[0].Value, "flame graph root: the workload's CPU time")

	tq := withQuery(base, query.TypeTable)
	tq["limit"] = 10000
	table := plugintest.RequireOK(t, f.query(t, tq, from, to))[0]
	require.Less(t, table.Rows(), 10000, "the table lists every function")
	requireTable(t, table, want.self, want.total)

	series := plugintest.RequireOK(t, f.query(t, withQuery(base, query.TypeMetrics), from, to))
	require.InDelta(t, float64(want.sum), seriesNanos(t, series), 1000, "metrics: CPU time over the range, within a microsecond")
}

// seriesNanos adds up CPU time series in cores over one-minute steps as
// nanoseconds.
func seriesNanos(t *testing.T, frames data.Frames) float64 {
	t.Helper()
	var sum float64
	for _, fr := range frames {
		require.Equal(t, data.VisTypeGraph, fr.Meta.PreferredVisualization)
		value := fr.Fields[1]
		require.Equal(t, "suffix: cores", value.Config.Unit)
		for i := range value.Len() {
			v, _ := value.ConcreteAt(i)
			sum += v.(float64) * 60 * 1e9 // float64 rates
		}
	}
	return math.Round(sum)
}

// requireSameFlameGraph compares the two schemas' flame graphs node by
// node (level, value, self and label in display order); with unmarkA,
// a's labels without their frame kind marks (b's schema keeps no types).
func requireSameFlameGraph(t *testing.T, a, b *fixture, base map[string]any, from, to time.Time, unmarkA bool) {
	t.Helper()
	q := withQuery(base, query.TypeProfile)
	ra, rb := a.query(t, q, from, to), b.query(t, q, from, to)
	rowsA := querytest.FlameRows(t, plugintest.RequireOK(t, ra)[0], "ns")
	if unmarkA { // a's schema marks frame kinds, b's keeps no frame types
		for i := range rowsA {
			rowsA[i].Label = plugintest.WithoutMark(rowsA[i].Label)
		}
	}
	require.Equal(t, rowsA, querytest.FlameRows(t, plugintest.RequireOK(t, rb)[0], "ns"), "the same flame graph from both schemas")
}
