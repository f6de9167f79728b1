package otelcoltest

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colprofilespb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

func TestMain(m *testing.M) { chtest.Main(m) }

// TestClickHouseExporterWritesAllSignals runs the contrib ClickHouse
// exporter in a real Collector against the tests' ClickHouse (the embedded
// engine unless FLAMEHOUSE_CLICKHOUSE_URL is set): the exporter creates its
// own schema next to Flamehouse's in one database, spans arrive over
// OTLP/gRPC, logs over OTLP/HTTP and an eBPF profiler-shaped profiles report
// over OTLP/gRPC, and each lands in its table with the ids, service names,
// stacks and links that were sent.
func TestClickHouseExporterWritesAllSignals(t *testing.T) {
	srv := chtest.Get(t)
	bin := Build(t, ClickHouseCollector)
	conn := srv.Open(t)
	ctx := context.Background()
	db := srv.NewDatabase(t)
	// Flamehouse's tables (otel_profile_*) first: the exporter's
	// (otel_traces, otel_logs, otel_profiles) must not collide with them.
	tables := schema.DefaultConfig()
	tables.Database = db
	migrator, err := schema.NewMigrator(tables, conn)
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx)
	require.NoError(t, err)

	col := Start(t, bin, Config{
		Exporters: map[string]any{"clickhouse": ClickHouseExporter(srv, db)},
		Pipelines: map[string]Pipeline{
			"traces":   {Exporters: []string{"clickhouse"}},
			"logs":     {Exporters: []string{"clickhouse"}},
			"profiles": {Exporters: []string{"clickhouse"}},
		},
	})

	cc, err := grpc.NewClient(col.GRPCEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })

	// Without a sending queue every export returns after the exporter's
	// INSERT, so the rows are there when it does.
	t.Run("traces", func(t *testing.T) {
		now := time.Now().Truncate(time.Microsecond)
		spans := []sentSpan{
			{"frontend", "GET /cart", "", 2 * time.Millisecond, tracepb.Span_SPAN_KIND_SERVER, "Server"},
			{"frontend", "render cart", "a1", 600 * time.Microsecond, tracepb.Span_SPAN_KIND_INTERNAL, "Internal"},
			{"cart", "SELECT cart", "a1", 900 * time.Microsecond, tracepb.Span_SPAN_KIND_CLIENT, "Client"},
		}
		req := traceRequest(now, spans)
		_, err := coltracepb.NewTraceServiceClient(cc).Export(ctx, req)
		require.NoError(t, err, "the Collector exports the spans; log:\n%s", col.Logs())

		rows, err := conn.Query(ctx, "SELECT TraceId, SpanId, ParentSpanId, ServiceName, SpanName, SpanKind, Duration, "+
			"toUnixTimestamp64Nano(Timestamp), SpanAttributes['span.index'] FROM "+db+".otel_traces ORDER BY SpanAttributes['span.index']")
		require.NoError(t, err)
		var got []string
		for rows.Next() {
			var traceID, spanID, parent, service, name, kind, index string
			var duration uint64
			var ts int64
			require.NoError(t, rows.Scan(&traceID, &spanID, &parent, &service, &name, &kind, &duration, &ts, &index))
			got = append(got, fmt.Sprintf("%s %s %s %s %s %s %d %d %s", traceID, spanID, parent, service, name, kind, duration, ts, index))
		}
		require.NoError(t, rows.Err())
		var want []string
		for i, s := range spans {
			want = append(want, fmt.Sprintf("%s %s %s %s %s %s %d %d %d", testTraceHex, spanHex(i), s.parentHex(), s.service, s.name, s.kindName,
				s.duration.Nanoseconds(), now.Add(time.Duration(i)*time.Millisecond).UnixNano(), i))
		}
		require.Equal(t, want, got)

		// The exporter's materialized view fills the trace id lookup table.
		var start, end time.Time
		require.NoError(t, conn.QueryRow(ctx, "SELECT min(Start), max(End) FROM "+db+".otel_traces_trace_id_ts WHERE TraceId = ?", testTraceHex).Scan(&start, &end))
		require.Equal(t, now.Truncate(time.Second).Unix(), start.Unix())
		require.GreaterOrEqual(t, end.Unix(), start.Unix())
	})

	t.Run("logs over OTLP/HTTP", func(t *testing.T) {
		now := time.Now().Truncate(time.Microsecond)
		req := logsRequest(now)
		body, err := proto.Marshal(req)
		require.NoError(t, err)
		httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+col.HTTPEndpoint+"/v1/logs", bytes.NewReader(body))
		require.NoError(t, err)
		httpReq.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := http.DefaultClient.Do(httpReq)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "the Collector exports the logs; log:\n%s", col.Logs())

		rows, err := conn.Query(ctx, "SELECT ServiceName, Body, SeverityText, SeverityNumber, TraceId, SpanId, "+
			"LogAttributes['user.id'], ResourceAttributes['host.name'], toUnixTimestamp64Nano(Timestamp) FROM "+db+".otel_logs ORDER BY Body")
		require.NoError(t, err)
		var got []string
		for rows.Next() {
			var service, body, severity, traceID, spanID, user, host string
			var number uint8
			var ts int64
			require.NoError(t, rows.Scan(&service, &body, &severity, &number, &traceID, &spanID, &user, &host, &ts))
			got = append(got, fmt.Sprintf("%s|%s|%s|%d|%s|%s|%s|%s|%d", service, body, severity, number, traceID, spanID, user, host, ts))
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []string{
			fmt.Sprintf("frontend|cart loaded|INFO|9|%s|%s|u-1|web-1|%d", testTraceHex, spanHex(0), now.UnixNano()),
			fmt.Sprintf("frontend|cart slow|WARN|13|%s|%s|u-2|web-1|%d", testTraceHex, spanHex(1), now.Add(time.Millisecond).UnixNano()),
			fmt.Sprintf("frontend|no trace here|ERROR|17|||u-3|web-1|%d", now.Add(2*time.Millisecond).UnixNano()),
		}, got)
	})

	t.Run("profiles", func(t *testing.T) {
		start := time.Now().Truncate(time.Second)
		gen := profilegen.New(profilegen.Config{
			Service: "checkout", Pods: 3, Stacks: 300, Functions: 200, Locations: 500, MinDepth: 5, MaxDepth: 20,
			SamplesPerSecond: 400, ReportInterval: 5 * time.Second, TraceFraction: 0.1, Threads: 4, CPUs: 4, Seed: 7,
		})
		req := gen.Report(start)
		want := expectProfileRows(req)
		require.Positive(t, want.links, "the generated report links some samples to spans")

		_, err := colprofilespb.NewProfilesServiceClient(cc).Export(ctx, req)
		require.NoError(t, err, "the Collector exports the profiles; log:\n%s", col.Logs())

		var rows, events, frames uint64
		var services, pods []string
		var minTS int64
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(), sum(length(TimestampsUnixNano)), sum(length(FunctionNames)), "+
			"groupUniqArray(ServiceName), groupUniqArray(`__otel_materialized_k8s.pod.name`), toUnixTimestamp64Nano(min(Timestamp)) FROM "+
			db+".otel_profiles").Scan(&rows, &events, &frames, &services, &pods, &minTS))
		require.Equal(t, want.samples, rows, "one row per OTLP sample")
		require.Equal(t, uint64(gen.Events()), events, "every event's timestamp")
		require.Equal(t, want.frames, frames, "one frame per line of each location, one for a location without lines")
		require.Equal(t, []string{"checkout"}, services)
		slices.Sort(pods)
		require.Equal(t, []string{"checkout-000", "checkout-001", "checkout-002"}, pods)
		require.Equal(t, start.UnixNano(), minTS)

		var sampleType, sampleUnit, periodType, periodUnit string
		var period int64
		require.NoError(t, conn.QueryRow(ctx, "SELECT any(SampleType), any(SampleUnit), any(PeriodType), any(PeriodUnit), any(Period) FROM "+
			db+".otel_profiles").Scan(&sampleType, &sampleUnit, &periodType, &periodUnit, &period))
		require.Equal(t, []any{"samples", "count", "cpu", "nanoseconds", int64(50_000_000)}, []any{sampleType, sampleUnit, periodType, periodUnit, period})

		var links []string
		require.NoError(t, conn.QueryRow(ctx, "SELECT arraySort(groupArray(TraceId || '/' || SpanId)) FROM "+db+".otel_profiles WHERE TraceId != ''").Scan(&links))
		require.Equal(t, want.linkPairs, links, "trace and span ids of linked samples, hex as in otel_traces")
	})

	t.Run("schema", func(t *testing.T) {
		for _, table := range []string{"otel_traces", "otel_traces_trace_id_ts", "otel_traces_trace_id_ts_mv", "otel_logs", "otel_profiles"} {
			var ddl string
			require.NoError(t, conn.QueryRow(ctx, "SHOW CREATE TABLE "+db+"."+table).Scan(&ddl))
			t.Logf("%s:\n%s", table, ddl)
			if table == "otel_logs" || table == "otel_profiles" {
				// The exporter picks text indexes for ClickHouse >= 26.2:
				// the server version it read is the engine's, and the
				// engine accepted them.
				require.Contains(t, ddl, "TYPE text(", table)
			}
		}
	})

	require.NoError(t, col.Stop(), "the Collector stops cleanly")

	// Flamehouse's migrations still run, and leave the exporter's tables be.
	_, err = migrator.Migrate(ctx)
	require.NoError(t, err)
	var exporterTables []string
	require.NoError(t, conn.QueryRow(ctx, "SELECT arraySort(groupArray(name)) FROM system.tables WHERE database = ? AND name IN "+
		"('otel_traces', 'otel_traces_trace_id_ts', 'otel_traces_trace_id_ts_mv', 'otel_logs', 'otel_profiles')", db).Scan(&exporterTables))
	require.Equal(t, []string{"otel_logs", "otel_profiles", "otel_traces", "otel_traces_trace_id_ts", "otel_traces_trace_id_ts_mv"}, exporterTables)
}

const testTraceHex = "5b8efff798038103d269b633813fc60c"

func spanHex(i int) string { return fmt.Sprintf("eee19b7ec3c1b1%02x", i) }

// sentSpan is one test span; parent "a1" means the first span.
type sentSpan struct {
	service, name, parent string
	duration              time.Duration
	kind                  tracepb.Span_SpanKind
	kindName              string
}

func (s sentSpan) parentHex() string {
	if s.parent == "" {
		return ""
	}
	return spanHex(0)
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func traceRequest(now time.Time, spans []sentSpan) *coltracepb.ExportTraceServiceRequest {
	byService := map[string]*tracepb.ResourceSpans{}
	req := &coltracepb.ExportTraceServiceRequest{}
	for i, s := range spans {
		rs, ok := byService[s.service]
		if !ok {
			rs = &tracepb.ResourceSpans{
				Resource:   &resourcepb.Resource{Attributes: otlpbuild.KeyValues("service.name", s.service, "host.name", "web-1")},
				ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "otelcoltest"}}},
			}
			byService[s.service] = rs
			req.ResourceSpans = append(req.ResourceSpans, rs)
		}
		startNs := uint64(now.Add(time.Duration(i) * time.Millisecond).UnixNano())
		span := &tracepb.Span{
			TraceId: mustHex(testTraceHex), SpanId: mustHex(spanHex(i)), Name: s.name, Kind: s.kind,
			StartTimeUnixNano: startNs, EndTimeUnixNano: startNs + uint64(s.duration.Nanoseconds()),
			Attributes: otlpbuild.KeyValues("span.index", strconv.Itoa(i)),
		}
		if s.parent != "" {
			span.ParentSpanId = mustHex(s.parentHex())
		}
		rs.ScopeSpans[0].Spans = append(rs.ScopeSpans[0].Spans, span)
	}
	return req
}

func logsRequest(now time.Time) *collogspb.ExportLogsServiceRequest {
	record := func(offset time.Duration, body string, severity logspb.SeverityNumber, text, user string, span int) *logspb.LogRecord {
		r := &logspb.LogRecord{
			TimeUnixNano:   uint64(now.Add(offset).UnixNano()),
			SeverityNumber: severity, SeverityText: text,
			Body:       &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: body}},
			Attributes: otlpbuild.KeyValues("user.id", user),
		}
		if span >= 0 {
			r.TraceId, r.SpanId = mustHex(testTraceHex), mustHex(spanHex(span))
		}
		return r
	}
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: otlpbuild.KeyValues("service.name", "frontend", "host.name", "web-1")},
		ScopeLogs: []*logspb.ScopeLogs{{
			Scope: &commonpb.InstrumentationScope{Name: "otelcoltest"},
			LogRecords: []*logspb.LogRecord{
				record(0, "cart loaded", logspb.SeverityNumber_SEVERITY_NUMBER_INFO, "INFO", "u-1", 0),
				record(time.Millisecond, "cart slow", logspb.SeverityNumber_SEVERITY_NUMBER_WARN, "WARN", "u-2", 1),
				record(2*time.Millisecond, "no trace here", logspb.SeverityNumber_SEVERITY_NUMBER_ERROR, "ERROR", "u-3", -1),
			},
		}},
	}}}
}

// profileRows is what the exporter should store for a request, worked out
// from the request itself.
type profileRows struct {
	samples, frames, links uint64
	// linkPairs are "trace/span" hex pairs of linked samples, sorted.
	linkPairs []string
}

func expectProfileRows(req *colprofilespb.ExportProfilesServiceRequest) profileRows {
	var want profileRows
	dict := req.GetDictionary()
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				for _, s := range p.GetSamples() {
					want.samples++
					for _, li := range dict.GetStackTable()[s.GetStackIndex()].GetLocationIndices() {
						want.frames += uint64(max(1, len(dict.GetLocationTable()[li].GetLines())))
					}
					if s.GetLinkIndex() > 0 {
						link := dict.GetLinkTable()[s.GetLinkIndex()]
						want.links++
						want.linkPairs = append(want.linkPairs, hex.EncodeToString(link.GetTraceId())+"/"+hex.EncodeToString(link.GetSpanId()))
					}
				}
			}
		}
	}
	slices.Sort(want.linkPairs)
	return want
}
