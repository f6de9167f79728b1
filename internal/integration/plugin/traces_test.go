package plugin

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/query"
)

// The trace of the navigation tests: a request through frontend, checkout
// and cart. checkout's process has samples in placeOrder and chargeCard
// (and some outside any span); batch-job's process, which the eBPF
// profiler gave the trace's context by mistake, has samples that carry the
// trace id with a span id the trace does not have.
const (
	navTrace     = "0af7651916cd43dd8448eb211c80319c"
	spanRoot     = "b7ad6b7169203331"
	spanOrder    = "1a2b3c4d5e6f7081"
	spanCharge   = "2b3c4d5e6f708192"
	spanCart     = "3c4d5e6f708192a3"
	spanLeaked   = "00f067aa0ba902b7"
	linkedTrace  = "11111111111111111111111111111111"
	linkedSpan   = "2222222222222222"
	navUID       = "flamehouse-nav"
	navPeriod    = int64(10_000_000) // 10 ms per event
	checkoutPod  = "checkout-0"
	batchJobPod  = "batch-job-0"
	navPadding   = 30 * time.Second
	navTraceSpan = 900 * time.Millisecond
)

// navSpan is one span of the trace, at an offset from the trace's start.
type navSpan struct {
	id, parent, service, name string
	kind                      tracepb.Span_SpanKind
	start, end                time.Duration
	status                    tracepb.Status_StatusCode
	statusMessage             string
}

var navSpans = []navSpan{
	{spanRoot, "", "frontend", "GET /checkout", tracepb.Span_SPAN_KIND_SERVER, 0, navTraceSpan, tracepb.Status_STATUS_CODE_UNSET, ""},
	{spanOrder, spanRoot, "checkout", "placeOrder", tracepb.Span_SPAN_KIND_INTERNAL, 100 * time.Millisecond, 600 * time.Millisecond, tracepb.Status_STATUS_CODE_OK, ""},
	{spanCart, spanOrder, "cart", "GetCart", tracepb.Span_SPAN_KIND_SERVER, 200 * time.Millisecond, 300 * time.Millisecond, tracepb.Status_STATUS_CODE_UNSET, ""},
	{spanCharge, spanRoot, "checkout", "chargeCard", tracepb.Span_SPAN_KIND_CLIENT, 620 * time.Millisecond, 880 * time.Millisecond, tracepb.Status_STATUS_CODE_ERROR, "declined"},
}

// navWorld is the embedded engine with the trace (through a real
// Collector's ClickHouse exporter) and the profiles (through Flamehouse's
// ingest and the same exporter) in one database, and datasources on it:
// ours reads Flamehouse's tables, otel the exporter's otel_profiles.
type navWorld struct {
	start      time.Time // the trace's start
	reqs       []*collectorpb.ExportProfilesServiceRequest
	ours, otel *plugin.Datasource
	// noTraces reads the same profiles from a database without
	// otel_traces; otelNoTraces reads the exporter's profiles with its
	// traces database pointed there.
	noTraces, otelNoTraces *plugin.Datasource
}

func newNavWorld(t *testing.T) *navWorld {
	t.Helper()
	srv := chtest.Get(t)
	bin := otelcoltest.Build(t, otelcoltest.ClickHouseCollector)
	padding := map[string]any{"spanWindowPadding": "30", "defaultProfileType": plugintest.CPUType}
	ours := newFixture(t, padding)
	db := ours.tables.Database
	col := otelcoltest.Start(t, bin, otelcoltest.Config{
		Exporters: map[string]any{"clickhouse": otelcoltest.ClickHouseExporter(srv, db)},
		Pipelines: map[string]otelcoltest.Pipeline{
			"traces":   {Exporters: []string{"clickhouse"}},
			"profiles": {Exporters: []string{"clickhouse"}},
		},
	})
	w := &navWorld{start: time.Now().UTC().Truncate(time.Second).Add(-10*time.Minute + 123*time.Millisecond), ours: ours.ds}
	w.reqs = []*collectorpb.ExportProfilesServiceRequest{navProfiles(w.start)}

	cc, err := grpc.NewClient(col.GRPCEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	_, err = coltracepb.NewTraceServiceClient(cc).Export(context.Background(), navTraceRequest(w.start))
	require.NoError(t, err, "the Collector exports the spans; log:\n%s", col.Logs())
	exportAll(t, ours.ingest.GRPCAddress(), w.reqs)
	exportAll(t, col.GRPCEndpoint, w.reqs)

	bare := newFixture(t, padding)
	exportAll(t, bare.ingest.GRPCAddress(), w.reqs)
	w.noTraces = bare.ds
	otel := plugintest.OTelSettings(t, db, query.DefaultOTelTable)
	for k, v := range padding {
		otel["profiles"].(map[string]any)[k] = v // built by otelSettings
	}
	w.otel = plugintest.Instance(t, otel, nil)
	otel["profiles"].(map[string]any)["tracesDatabase"] = bare.tables.Database
	w.otelNoTraces = plugintest.Instance(t, otel, nil)
	return w
}

// navTraceRequest is the trace's spans as an OTLP export request.
func navTraceRequest(start time.Time) *coltracepb.ExportTraceServiceRequest {
	req := &coltracepb.ExportTraceServiceRequest{}
	byService := map[string]*tracepb.ScopeSpans{}
	for _, s := range navSpans {
		ss, ok := byService[s.service]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: "nav-test", Version: "1.2.3"}}
			byService[s.service] = ss
			req.ResourceSpans = append(req.ResourceSpans, &tracepb.ResourceSpans{
				Resource:   &resourcepb.Resource{Attributes: otlpbuild.KeyValues("service.name", s.service, "service.namespace", "shop")},
				ScopeSpans: []*tracepb.ScopeSpans{ss},
			})
		}
		span := &tracepb.Span{
			TraceId: mustHex(navTrace), SpanId: mustHex(s.id), Name: s.name, Kind: s.kind,
			StartTimeUnixNano: nanos(start.Add(s.start)), EndTimeUnixNano: nanos(start.Add(s.end)),
			Attributes: otlpbuild.KeyValues("span.name", s.name),
			Status:     &tracepb.Status{Code: s.status, Message: s.statusMessage},
		}
		if s.id == spanOrder || s.id == spanCart {
			// Marked by the sender, as a Pyroscope SDK or flamehouse's own
			// self-tracing marks the spans it profiles: placeOrder has
			// samples, GetCart has none.
			span.Attributes = append(span.Attributes, otlpbuild.KeyValues(query.ProfileIDTag, s.id)...)
		}
		if s.parent != "" {
			span.ParentSpanId = mustHex(s.parent)
		}
		if s.id == spanOrder {
			span.Events = []*tracepb.Span_Event{{
				TimeUnixNano: nanos(start.Add(150 * time.Millisecond)), Name: "cache miss",
				Attributes: otlpbuild.KeyValues("key", "cart:42"),
			}}
			span.Links = []*tracepb.Span_Link{{
				TraceId: mustHex(linkedTrace), SpanId: mustHex(linkedSpan),
				Attributes: otlpbuild.KeyValues("link.kind", "follows"),
			}}
		}
		ss.Spans = append(ss.Spans, span)
	}
	return req
}

// navProfiles is the two processes' CPU samples: 10 ms per event.
// checkout: 30 + 10 events in placeOrder, 12 in chargeCard, 20 in no span;
// batch-job: 25 events with the trace id and a span id not in the trace.
func navProfiles(start time.Time) *collectorpb.ExportProfilesServiceRequest {
	b := otlpbuild.New()
	m := b.Mapping(0x400000, 0x1400000, 0, "/app/server", "")
	stack := func(names ...string) int32 { return goStack(b, m, "server.go", names...) }
	link := func(span string) int32 { // of the trace
		var tr [16]byte
		var sp [8]byte
		copy(tr[:], mustHex(navTrace))
		copy(sp[:], mustHex(span))
		return b.Link(tr, sp)
	}
	events := func(n int, from, to time.Duration) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = nanos(start.Add(from + (to-from)*time.Duration(i)/time.Duration(n)))
		}
		return out
	}
	profile := func(service, pod string, samples ...*pb.Sample) {
		rp := b.Resource("service.name", service, "service.namespace", "shop", "k8s.pod.name", pod)
		sp := otlpbuild.Scope(rp, "go.opentelemetry.io/ebpf-profiler", "v0.0.1")
		sp.Profiles = append(sp.Profiles, &pb.Profile{
			SampleType: b.ValueType("samples", "count"), PeriodType: b.ValueType("cpu", "nanoseconds"), Period: navPeriod,
			TimeUnixNano: nanos(start.Add(-time.Second)), DurationNano: uint64(3 * time.Second), Samples: samples,
		})
	}
	profile("checkout", checkoutPod,
		&pb.Sample{StackIndex: stack("main", "placeOrder", "hashItems"), TimestampsUnixNano: events(30, 110*time.Millisecond, 590*time.Millisecond), LinkIndex: link(spanOrder)},
		&pb.Sample{StackIndex: stack("main", "placeOrder", "queryDB"), TimestampsUnixNano: events(10, 300*time.Millisecond, 500*time.Millisecond), LinkIndex: link(spanOrder)},
		&pb.Sample{StackIndex: stack("main", "chargeCard", "tlsWrite"), TimestampsUnixNano: events(12, 630*time.Millisecond, 870*time.Millisecond), LinkIndex: link(spanCharge)},
		&pb.Sample{StackIndex: stack("main", "idle"), TimestampsUnixNano: events(20, 0, 900*time.Millisecond)},
	)
	profile("batch-job", batchJobPod,
		&pb.Sample{StackIndex: stack("cron", "compactLogs"), TimestampsUnixNano: events(25, 50*time.Millisecond, 850*time.Millisecond), LinkIndex: link(spanLeaked)},
	)
	return b.Request()
}

// goStack adds a stack of Go functions, named root first, one location
// each in a mapping and a file.
func goStack(b *otlpbuild.Builder, mapping int32, file string, names ...string) int32 {
	locs := make([]int32, len(names))
	for i, n := range names {
		fn := b.Function(n, "", file, 1)
		locs[len(names)-1-i] = b.Location(mapping, uint64(0x401000+0x100*len(n)+i), "go", otlpbuild.Line{Function: fn, Line: int64(10 + i)})
	}
	return b.Stack(locs...)
}

func nanos(t time.Time) uint64 { return uint64(t.UnixNano()) }

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// sentCPU is the CPU time the requests hold for the samples keep selects.
func (w *navWorld) sentCPU(keep func(sampleRef) bool) int64 {
	return expectFromRequests(w.reqs, keep).sum
}

func ofSpan(span string) func(sampleRef) bool {
	return func(s sampleRef) bool { return s.span == span }
}

// query runs one query as Grafana does, with this datasource's uid.
func navQuery(t *testing.T, ds *plugin.Datasource, q map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: navUID, Name: "Flamehouse"}},
		Queries: []backend.DataQuery{{
			RefID: "A", JSON: raw, TimeRange: backend.TimeRange{From: from, To: to}, Interval: time.Minute,
		}},
	})
	require.NoError(t, err)
	return resp.Responses["A"]
}

// followLink runs an internal link's query through QueryData over a time
// range, with ${__value.raw} replaced by value as Grafana interpolates it.
func followLink(t *testing.T, ds *plugin.Datasource, link data.DataLink, value string, from, to time.Time) data.Frames {
	t.Helper()
	return runLink(t, ds, link, "${__value.raw}", value, from, to)
}

// runLink runs an internal link's query with one Grafana variable filled
// in, as Grafana does when the link is followed.
func runLink(t *testing.T, ds *plugin.Datasource, link data.DataLink, variable, value string, from, to time.Time) data.Frames {
	t.Helper()
	require.NotNil(t, link.Internal)
	require.Equal(t, navUID, link.Internal.DatasourceUID, "the link opens this datasource")
	raw, err := json.Marshal(link.Internal.Query)
	require.NoError(t, err)
	raw = []byte(strings.ReplaceAll(string(raw), variable, value))
	var q map[string]any
	require.NoError(t, json.Unmarshal(raw, &q))
	return plugintest.RequireOK(t, navQuery(t, ds, q, from, to))
}

// followLinkAt runs a series link's query as Grafana does for a click on
// the point at a time: ${__value.time} is the point's Unix milliseconds.
func followLinkAt(t *testing.T, ds *plugin.Datasource, link data.DataLink, at, from, to time.Time) data.Frames {
	t.Helper()
	return runLink(t, ds, link, "${__value.time}", strconv.FormatInt(at.UnixMilli(), 10), from, to)
}

// rootValue is a flame graph's total (0 when empty).
func rootValue(t *testing.T, f *data.Frame) int64 {
	t.Helper()
	rows := querytest.FlameRows(t, f, "ns")
	if len(rows) == 0 {
		return 0
	}
	return rows[0].Value
}

// traceFrameColumns are the trace frame's columns (Grafana's, as Tempo
// sends them) and their types, plus profileSpanID.
var traceFrameColumns = []struct {
	name string
	typ  data.FieldType
}{
	{"traceID", data.FieldTypeString},
	{"spanID", data.FieldTypeString},
	{"parentSpanID", data.FieldTypeString},
	{"operationName", data.FieldTypeString},
	{"serviceName", data.FieldTypeString},
	{"serviceNamespace", data.FieldTypeString},
	{"kind", data.FieldTypeString},
	{"statusCode", data.FieldTypeInt64},
	{"statusMessage", data.FieldTypeString},
	{"instrumentationLibraryName", data.FieldTypeString},
	{"instrumentationLibraryVersion", data.FieldTypeString},
	{"traceState", data.FieldTypeString},
	{"serviceTags", data.FieldTypeJSON},
	{"startTime", data.FieldTypeFloat64},
	{"duration", data.FieldTypeFloat64},
	{"logs", data.FieldTypeJSON},
	{"references", data.FieldTypeJSON},
	{"tags", data.FieldTypeJSON},
	{"profileSpanID", data.FieldTypeNullableString},
}

// tagMap reads a [{"key","value"}] column value.
func tagMap(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var kvs []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
	require.NoError(t, json.Unmarshal(raw, &kvs))
	out := map[string]any{}
	for _, kv := range kvs {
		out[kv.Key] = kv.Value
	}
	return out
}

// TestTraceFrameMarksSpansWithProfiles reads the trace written by a real
// Collector's exporter through a traces query, on Flamehouse's tables and
// on the exporter's otel_profiles: one "Trace" frame with Grafana's trace
// columns, every span as sent, and profileSpanID and the
// pyroscope.profile.id tag exactly on the spans with samples (a stored
// one counts only there, and never twice); following a
// span's "Profiles for this span" link over the span's range gives that
// span's samples only.
func TestTraceFrameMarksSpansWithProfiles(t *testing.T) {
	w := newNavWorld(t)
	for name, ds := range map[string]*plugin.Datasource{"flamehouse": w.ours, "otel": w.otel} {
		t.Run(name, func(t *testing.T) {
			// A narrow range: the lookup table bounds the read.
			frames := plugintest.RequireOK(t, navQuery(t, ds, map[string]any{"queryType": "traces", "traceId": strings.ToUpper(navTrace)},
				w.start, w.start.Add(time.Millisecond)))
			require.Len(t, frames, 1)
			f := frames[0]
			require.Equal(t, "Trace", f.Name)
			require.Equal(t, data.VisType(data.VisTypeTrace), f.Meta.PreferredVisualization)
			require.Len(t, f.Fields, len(traceFrameColumns))
			for i, c := range traceFrameColumns {
				require.Equal(t, []any{c.name, c.typ}, []any{f.Fields[i].Name, f.Fields[i].Type()}, "column %d", i)
			}
			require.Equal(t, len(navSpans), f.Rows())

			col := func(name string) *data.Field {
				field, idx := f.FieldByName(name)
				require.GreaterOrEqual(t, idx, 0, name)
				return field
			}
			wantKind := map[tracepb.Span_SpanKind]string{
				tracepb.Span_SPAN_KIND_SERVER: "server", tracepb.Span_SPAN_KIND_INTERNAL: "internal", tracepb.Span_SPAN_KIND_CLIENT: "client",
			}
			profiled := map[string]bool{spanOrder: true, spanCharge: true}
			for i, s := range navSpans {
				require.Equal(t, navTrace, col("traceID").At(i))
				require.Equal(t, s.id, col("spanID").At(i), "spans in start order")
				require.Equal(t, s.parent, col("parentSpanID").At(i))
				require.Equal(t, s.name, col("operationName").At(i))
				require.Equal(t, s.service, col("serviceName").At(i))
				require.Equal(t, "shop", col("serviceNamespace").At(i))
				require.Equal(t, wantKind[s.kind], col("kind").At(i))
				require.Equal(t, int64(s.status), col("statusCode").At(i), "0 unset, 1 ok, 2 error")
				require.Equal(t, s.statusMessage, col("statusMessage").At(i))
				require.Equal(t, "nav-test", col("instrumentationLibraryName").At(i))
				require.Equal(t, "1.2.3", col("instrumentationLibraryVersion").At(i))
				require.InDelta(t, float64(w.start.Add(s.start).UnixNano())/1e6, col("startTime").At(i), 0.001, "epoch ms")
				require.InDelta(t, float64(s.end-s.start)/1e6, col("duration").At(i), 0.001, "ms")
				require.Equal(t, map[string]any{"service.name": s.service, "service.namespace": "shop"},
					tagMap(t, col("serviceTags").At(i).(json.RawMessage))) // a JSON field

				raw := col("tags").At(i).(json.RawMessage) // a JSON field
				tags := tagMap(t, raw)
				require.Equal(t, s.name, tags["span.name"])
				require.LessOrEqual(t, strings.Count(string(raw), `"`+query.ProfileIDTag+`"`), 1, "%s: one %s tag at most", s.name, query.ProfileIDTag)
				mark := col("profileSpanID").At(i).(*string) // a nullable string field
				if profiled[s.id] {
					require.Equal(t, s.id, tags[query.ProfileIDTag], "Grafana's trace view finds the span's profile")
					require.NotNil(t, mark)
					require.Equal(t, s.id, *mark)
				} else {
					require.NotContains(t, tags, query.ProfileIDTag, s.name)
					require.Nil(t, mark, s.name)
				}
			}

			// placeOrder's event and link.
			var logs []struct {
				Timestamp float64           `json:"timestamp"`
				Name      string            `json:"name"`
				Fields    []json.RawMessage `json:"fields"`
			}
			require.NoError(t, json.Unmarshal(col("logs").At(1).(json.RawMessage), &logs)) // a JSON field
			require.Len(t, logs, 1)
			require.Equal(t, "cache miss", logs[0].Name)
			require.InDelta(t, float64(w.start.Add(150*time.Millisecond).UnixNano())/1e6, logs[0].Timestamp, 0.001)
			require.Equal(t, map[string]any{"key": "cart:42"}, tagMap(t, mustMarshal(t, logs[0].Fields)))
			var refs []struct {
				TraceID string          `json:"traceID"`
				SpanID  string          `json:"spanID"`
				Tags    json.RawMessage `json:"tags"`
			}
			require.NoError(t, json.Unmarshal(col("references").At(1).(json.RawMessage), &refs)) // a JSON field
			require.Len(t, refs, 1)
			require.Equal(t, []string{linkedTrace, linkedSpan}, []string{refs[0].TraceID, refs[0].SpanID})
			require.Equal(t, map[string]any{"link.kind": "follows"}, tagMap(t, refs[0].Tags))

			// The link Grafana shows on profiled spans, followed over each
			// span's own range, gives that span's samples only.
			links := col("profileSpanID").Config.Links
			require.Len(t, links, 1)
			require.Equal(t, query.LinkSpanProfiles, links[0].Title)
			require.Equal(t, map[string]any{
				"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": "{}", "spanSelector": []string{"${__value.raw}"},
			}, links[0].Internal.Query)
			for _, s := range navSpans[1:] {
				frames := followLink(t, ds, links[0], s.id, w.start.Add(s.start), w.start.Add(s.end))
				want := w.sentCPU(ofSpan(s.id))
				require.Equal(t, profiled[s.id], want > 0)
				if want == 0 {
					require.Zero(t, frames[0].Rows(), s.name)
					continue
				}
				rows := querytest.FlameRows(t, frames[0], "ns")
				require.Equal(t, want, rows[0].Value, "%s: the span's CPU time", s.name)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestTraceWideReadsDropLeakedTraceContext checks that a query with a
// trace id reads only the samples of the trace's stored spans: the
// batch-job process's samples carry the trace id with a span id that is not
// in otel_traces and are left out of flame graphs, tables, time series and
// span rankings, and the trace's bounds replace the query's range. Without
// otel_traces they count again, as before.
func TestTraceWideReadsDropLeakedTraceContext(t *testing.T) {
	w := newNavWorld(t)
	inTrace := w.sentCPU(func(s sampleRef) bool { return s.span == spanOrder || s.span == spanCharge })
	withLeak := w.sentCPU(func(s sampleRef) bool { return s.trace == navTrace })
	require.Equal(t, inTrace+w.sentCPU(ofSpan(spanLeaked)), withLeak)
	require.Positive(t, inTrace)
	from, to := w.start.Add(-time.Minute), w.start.Add(time.Minute)
	trace := map[string]any{"profileTypeId": plugintest.CPUType, "traceId": navTrace}
	for _, tc := range []struct {
		name string
		ds   *plugin.Datasource
		want int64
	}{
		{"flamehouse", w.ours, inTrace},
		{"otel", w.otel, inTrace},
		{"flamehouse without otel_traces", w.noTraces, withLeak},
		{"otel without otel_traces", w.otelNoTraces, withLeak},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, plugintest.FlameRoot(t, tc.ds, trace, from, to), "flame graph")

			tq := withQuery(trace, "table")
			table := plugintest.RequireOK(t, navQuery(t, tc.ds, tq, from, to))[0]
			var self int64
			for i := range table.Rows() {
				v, _ := table.Fields[1].ConcreteAt(i)
				self += v.(int64) // int64 field
			}
			require.Equal(t, tc.want, self, "table: self adds up to the total")

			series := plugintest.RequireOK(t, navQuery(t, tc.ds, withQuery(trace, "metrics"), from, to))
			require.InDelta(t, float64(tc.want), seriesNanos(t, series), 1000, "metrics")

			spans := plugintest.RequireOK(t, navQuery(t, tc.ds, withQuery(trace, "spans"), from, to))[0]
			ids, _ := spans.FieldByName("spanID")
			var got []string
			for i := range ids.Len() {
				got = append(got, ids.At(i).(string)) // string field
			}
			want := []string{spanOrder, spanCharge}
			if tc.want == withLeak {
				want = []string{spanOrder, spanLeaked, spanCharge}
			}
			require.Equal(t, want, got, "spans of the trace")
		})
	}

	// The trace's bounds replace the query's range: an hour away from it.
	away := w.start.Add(-2 * time.Hour)
	require.Equal(t, inTrace, plugintest.FlameRoot(t, w.ours, trace, away, away.Add(time.Minute)))
	require.Equal(t, inTrace, plugintest.FlameRoot(t, w.otel, trace, away, away.Add(time.Minute)))
	require.Zero(t, plugintest.FlameRoot(t, w.noTraces, trace, away, away.Add(time.Minute)), "without otel_traces the query's range holds")

	// A traces query needs the spans table.
	r := navQuery(t, w.noTraces, map[string]any{"queryType": "traces", "traceId": navTrace}, from, to)
	require.ErrorContains(t, r.Error, "otel_traces")
	require.Equal(t, backend.ErrorSourceDownstream, r.ErrorSource)
	require.Equal(t, backend.StatusBadRequest, r.Status)
}

// TestSpansRankByProfileValue checks the spans query on both schemas: the
// spans with the most CPU time first (the sent data's sums), their share of
// the selection's total (samples without a span included), names and
// durations from otel_traces (empty for the leaked span, which otel_traces
// does not have), and a link to each span's flame graph that keeps the
// profile type and selector.
func TestSpansRankByProfileValue(t *testing.T) {
	w := newNavWorld(t)
	from, to := w.start.Add(-time.Minute), w.start.Add(time.Minute)
	total := w.sentCPU(func(sampleRef) bool { return true })
	checkoutTotal := w.sentCPU(func(s sampleRef) bool { return s.pod == checkoutPod })
	type row struct {
		trace, span, service, name string
		duration                   float64
		value                      int64
		share                      float64
	}
	rowOf := func(span, service, name string, duration time.Duration, of int64) row {
		v := w.sentCPU(ofSpan(span))
		return row{navTrace, span, service, name, float64(duration) / 1e6, v, float64(v) / float64(of)}
	}
	order, charge := navSpans[1], navSpans[3]
	for _, tc := range []struct {
		name     string
		selector string
		limit    int
		want     []row
	}{
		{"all", "{}", 0, []row{
			rowOf(spanOrder, "checkout", order.name, order.end-order.start, total),
			rowOf(spanLeaked, "batch-job", "", 0, total),
			rowOf(spanCharge, "checkout", charge.name, charge.end-charge.start, total),
		}},
		{"top 2", "{}", 2, []row{
			rowOf(spanOrder, "checkout", order.name, order.end-order.start, total),
			rowOf(spanLeaked, "batch-job", "", 0, total),
		}},
		{"checkout only", `{service_name="checkout"}`, 0, []row{
			rowOf(spanOrder, "checkout", order.name, order.end-order.start, checkoutTotal),
			rowOf(spanCharge, "checkout", charge.name, charge.end-charge.start, checkoutTotal),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, ds := range map[string]*plugin.Datasource{"flamehouse": w.ours, "otel": w.otel} {
				t.Run(name, func(t *testing.T) {
					q := map[string]any{"queryType": "spans", "profileTypeId": plugintest.CPUType, "labelSelector": tc.selector}
					if tc.limit > 0 {
						q["limit"] = tc.limit
					}
					frames := plugintest.RequireOK(t, navQuery(t, ds, q, from, to))
					require.Len(t, frames, 1)
					f := frames[0]
					require.Equal(t, "spans", f.Name)
					require.Equal(t, map[string]any{"flamehouse": "spans"}, f.Meta.Custom)
					var names []string
					for _, field := range f.Fields {
						names = append(names, field.Name)
					}
					require.Equal(t, []string{"traceID", "spanID", "serviceName", "operationName", "duration", "value", "share"}, names)
					require.Equal(t, "ns", f.Fields[5].Config.Unit)
					require.Equal(t, "percentunit", f.Fields[6].Config.Unit)
					got := make([]row, f.Rows())
					for i := range got {
						got[i] = row{
							f.Fields[0].At(i).(string), f.Fields[1].At(i).(string), f.Fields[2].At(i).(string), // typed fields
							f.Fields[3].At(i).(string), f.Fields[4].At(i).(float64), f.Fields[5].At(i).(int64), f.Fields[6].At(i).(float64),
						}
					}
					require.Len(t, got, len(tc.want))
					for i := range tc.want {
						require.InDelta(t, tc.want[i].share, got[i].share, 1e-12)
						got[i].share = tc.want[i].share
					}
					require.Equal(t, tc.want, got)

					links := f.Fields[1].Config.Links
					require.Len(t, links, 1)
					require.Equal(t, query.LinkSpanFlameGraph, links[0].Title)
					require.Equal(t, map[string]any{
						"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": tc.selector, "spanSelector": []string{"${__value.raw}"},
					}, links[0].Internal.Query)
					require.Equal(t, &data.TimeRange{From: from, To: to}, links[0].Internal.Range)
					top := followLink(t, ds, links[0], got[0].span, links[0].Internal.Range.From, links[0].Internal.Range.To)
					require.Equal(t, got[0].value, querytest.FlameRows(t, top[0], "ns")[0].Value, "the link opens the span's flame graph")
				})
			}
		})
	}
}

// TestSeriesLinkToTheirFlameGraph checks the link on each time series:
// the query's selector plus the series' group labels, escaped so that
// Grafana's interpolation leaves it be, over the query's range; followed,
// it gives the group's flame graph (the sent data's sum).
func TestSeriesLinkToTheirFlameGraph(t *testing.T) {
	w := newNavWorld(t)
	from, to := w.start.Add(-time.Minute), w.start.Add(time.Minute)
	// "$^" never matches: a $ that Grafana must not take for a variable.
	selector := `{service_name=~"checkout|batch-job|$^"}`
	for name, ds := range map[string]*plugin.Datasource{"flamehouse": w.ours, "otel": w.otel} {
		t.Run(name, func(t *testing.T) {
			q := map[string]any{"queryType": "metrics", "profileTypeId": plugintest.CPUType, "labelSelector": selector, "groupBy": []string{"k8s.pod.name"}}
			frames := plugintest.RequireOK(t, navQuery(t, ds, q, from, to))
			require.Len(t, frames, 2)
			for _, f := range frames {
				value := f.Fields[1]
				pod := value.Labels["k8s_pod_name"]
				require.Len(t, value.Config.Links, 1)
				link := value.Config.Links[0]
				require.Equal(t, query.LinkSeriesFlameGraph, link.Title)
				require.Equal(t, map[string]any{
					"queryType": "profile", "profileTypeId": plugintest.CPUType,
					"labelSelector": `{service_name=~"checkout|batch-job|\x24^", "k8s.pod.name"="` + pod + `"}`,
					"intervalStart": "${__value.time}", "intervalSeconds": int64(60),
				}, link.Internal.Query)
				require.Equal(t, &data.TimeRange{From: from, To: to}, link.Internal.Range)
				// Clicked on a point, the link opens that point's minute:
				// its flame graph holds the point's CPU time.
				var sum int64
				for i := range value.Len() {
					at, _ := f.Fields[0].ConcreteAt(i)
					rate, _ := value.ConcreteAt(i)
					want := int64(math.Round(rate.(float64) * 60 * 1e9))         // float64 rates
					flame := followLinkAt(t, ds, link, at.(time.Time), from, to) // the time field
					require.Equal(t, want, rootValue(t, flame[0]), "%s at %s", pod, at)
					sum += want
				}
				want := w.sentCPU(func(s sampleRef) bool { return s.pod == pod })
				require.Positive(t, want)
				require.Equal(t, want, sum, pod)
			}
		})
	}
}
