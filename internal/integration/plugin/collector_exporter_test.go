package plugin

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/pkg/query"
)

// TestCollectorDistributionMatchesIngest runs the Flamehouse Collector
// distribution, built from collector/builder-config.yaml by the Collector
// Builder, with the example configuration collector/otelcol-flamehouse.yaml
// (its processors, pipelines and persistent queues) pointed at a new
// database of the embedded engine: the flamehouse exporter creates the
// schema and writes the profiles, the contrib clickhouse exporter the
// spans, into the same database. It sends the compatibility workload's two
// reports, one over OTLP/gRPC and one over OTLP/HTTP, and two spans that
// samples link to, likewise, then reads everything through the datasource:
// flame graph root, every function's self and total and the series total
// equal an oracle computed from the requests (unfiltered, by pod, span,
// trace and thread); the same requests sent to Flamehouse's ingest give the
// same flame graphs node by node; and each span of the Trace query links
// to its own flame graph.
func TestCollectorDistributionMatchesIngest(t *testing.T) {
	srv := chtest.Get(t)
	bin := otelcoltest.BuildDistribution(t)
	padding := map[string]any{"spanWindowPadding": "30", "defaultProfileType": plugintest.CPUType}
	ours := newFixture(t, padding)
	db := srv.NewDatabase(t)

	cfg, err := otelcoltest.LoadConfig(otelcoltest.ExampleConfigFile())
	require.NoError(t, err)
	cfg.Extensions["file_storage"].(map[string]any)["directory"] = t.TempDir() // the example's extension
	ch := otelcoltest.ClickHouseExporter(srv, db)
	for name, exp := range cfg.Exporters {
		for _, key := range []string{"endpoint", "username", "password", "database", "tls"} {
			if v, ok := ch[key]; ok {
				exp.(map[string]any)[key] = v // the example's exporters are maps
			}
		}
		require.Contains(t, []string{"clickhouse", "flamehouse"}, name)
	}
	col := otelcoltest.Start(t, bin, cfg)

	start := time.Now().UTC().Truncate(time.Minute).Add(-5 * time.Minute)
	reqs := compatWorkload(start)
	spans := linkedSpans(t, reqs, 2)
	traces := []*coltracepb.ExportTraceServiceRequest{
		spanRequest(spans[0], "handle order", start, start.Add(10*time.Second)),
		spanRequest(spans[1], "charge card", start, start.Add(10*time.Second)),
	}
	cc, err := grpc.NewClient(col.GRPCEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	_, err = collectorpb.NewProfilesServiceClient(cc).Export(context.Background(), reqs[0])
	require.NoError(t, err, "profiles over gRPC; log:\n%s", col.Logs())
	postOTLP(t, "http://"+col.HTTPEndpoint+"/v1development/profiles", reqs[1])
	_, err = coltracepb.NewTraceServiceClient(cc).Export(context.Background(), traces[0])
	require.NoError(t, err, "a span over gRPC")
	postOTLP(t, "http://"+col.HTTPEndpoint+"/v1/traces", traces[1])
	exportAll(t, ours.ingest.GRPCAddress(), reqs)

	// The queues acknowledge once a request is stored in file_storage: wait
	// for the rows.
	all := expectFromRequests(reqs, func(sampleRef) bool { return true })
	conn := srv.Open(t)
	require.Eventually(t, func() bool {
		var cpu int64
		var spanRows uint64
		_ = conn.QueryRow(context.Background(), "SELECT toInt64(sum(Value)) FROM "+db+".otel_profile_samples WHERE ProfileType = ?", plugintest.CPUType).Scan(&cpu)
		_ = conn.QueryRow(context.Background(), "SELECT count() FROM "+db+".otel_traces").Scan(&spanRows)
		return cpu == all.sum && spanRows == 2
	}, time.Minute, 100*time.Millisecond, "the profiles and spans reach ClickHouse; log:\n%s", col.Logs())

	settings := plugintest.EmbeddedSettings(t, db)
	for k, v := range padding {
		settings["profiles"].(map[string]any)[k] = v // built by embeddedSettings
	}
	viaCollector := &fixture{ds: plugintest.Instance(t, settings, nil)}

	pod, link := "checkout-002", spans[0]
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
		{"thread", map[string]any{"labelSelector": `{thread_name="worker-2"}`}, func(s sampleRef) bool { return s.thread == "worker-2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := expectFromRequests(reqs, tc.keep)
			require.Positive(t, want.sum, "the workload has samples to select")
			requireCompatAnswers(t, viaCollector, tc.q, from, to, want)
			requireSameFlameGraph(t, ours, viaCollector, tc.q, from, to, false)
		})
	}

	t.Run("span links", func(t *testing.T) {
		for _, s := range spans {
			frames := plugintest.RequireOK(t, navQuery(t, viaCollector.ds, map[string]any{"queryType": "traces", "traceId": s.trace}, from, to))
			require.Len(t, frames, 1)
			f := frames[0]
			ids, _ := f.FieldByName("spanID")
			marks, idx := f.FieldByName("profileSpanID")
			require.GreaterOrEqual(t, idx, 0)
			require.Equal(t, 1, f.Rows(), "the trace's one span")
			require.Equal(t, s.span, ids.At(0))
			mark, _ := marks.At(0).(*string)
			require.NotNil(t, mark, "the span is marked as having samples")
			require.Len(t, marks.Config.Links, 1)
			flame := followLink(t, viaCollector.ds, marks.Config.Links[0], *mark, start, start.Add(10*time.Second))
			want := expectFromRequests(reqs, func(r sampleRef) bool { return r.span == s.span })
			require.Equal(t, want.sum, rootValue(t, flame[0]), "the span's flame graph holds its samples")
			plugintest.RequireSameFrames(t, plugintest.RequireOK(t, ours.query(t, withQuery(map[string]any{"spanSelector": []string{s.span}}, query.TypeProfile), from, to))[0], flame[0])
		}
	})
}

// linkedSpans returns n distinct trace/span pairs that samples of the
// requests link to, the busiest first.
func linkedSpans(t *testing.T, reqs []*collectorpb.ExportProfilesServiceRequest, n int) []sampleRef {
	t.Helper()
	counts := map[sampleRef]int{}
	for _, req := range reqs {
		links := req.GetDictionary().GetLinkTable()
		for _, rp := range req.GetResourceProfiles() {
			for _, sp := range rp.GetScopeProfiles() {
				for _, p := range sp.GetProfiles() {
					for _, s := range p.GetSamples() {
						if li := s.GetLinkIndex(); li > 0 {
							l := links[li]
							counts[sampleRef{trace: hex.EncodeToString(l.GetTraceId()), span: hex.EncodeToString(l.GetSpanId())}]++
						}
					}
				}
			}
		}
	}
	var refs []sampleRef
	for r := range counts {
		refs = append(refs, r)
	}
	slices.SortFunc(refs, func(a, b sampleRef) int {
		if d := counts[b] - counts[a]; d != 0 {
			return d
		}
		return strings.Compare(a.span, b.span)
	})
	require.GreaterOrEqual(t, len(refs), n, "the workload links samples to %d spans", n)
	return refs[:n]
}

// spanRequest is one server span of service checkout with the given ids.
func spanRequest(ref sampleRef, name string, start, end time.Time) *coltracepb.ExportTraceServiceRequest {
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: otlpbuild.KeyValues("service.name", "checkout")},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "collector-test"},
			Spans: []*tracepb.Span{{
				TraceId: mustHex(ref.trace), SpanId: mustHex(ref.span), Name: name, Kind: tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: nanos(start), EndTimeUnixNano: nanos(end),
			}},
		}},
	}}}
}

// postOTLP sends a request as OTLP/HTTP protobuf and requires 200.
func postOTLP(t *testing.T, url string, msg proto.Message) {
	t.Helper()
	body, err := proto.Marshal(msg)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "POST %s", url)
}
