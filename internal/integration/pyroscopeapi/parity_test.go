package pyroscopeapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	profilev1 "github.com/grafana/pyroscope/api/gen/proto/go/google/v1"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/pyroscopetest"
	"github.com/flamehouse/flamehouse/pkg/otlphttp"
	"github.com/flamehouse/flamehouse/pkg/service"
)

const cpuType = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

// startFlamehouse runs `flamehouse run` as the parity test needs it: the
// embedded engine, the ingest and the Pyroscope API on free ports, no
// demo data.
func startFlamehouse(t *testing.T) (apiURL, ingestURL string) {
	t.Helper()
	cfg := service.DefaultConfig()
	cfg.Embedded.DataDir, cfg.Embedded.ListenAddress = t.TempDir(), "127.0.0.1:0"
	cfg.Ingest.Receiver.GRPCListenAddress, cfg.Ingest.Receiver.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.PyroscopeAPI.ListenAddress = "127.0.0.1:0"
	cfg.SelfProfile.Enabled = false
	svc, err := service.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), service.Everything)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, svc.Stop(ctx))
	})
	_, httpAddr := svc.IngestAddresses()
	return "http://" + svc.PyroscopeAPIAddress(), "http://" + httpAddr
}

// node is a flame graph node: its total and self.
type node struct{ total, self int64 }

// tree reads a flame graph's levels (per node [x offset, total, self,
// name], offsets from the end of the level's previous node) into its nodes
// by path (names from the root, joined by ";"), each child within its
// parent's extent, as Grafana's Pyroscope datasource reads them.
func tree(t *testing.T, fg *querierv1.FlameGraph) map[string]node {
	t.Helper()
	type placed struct {
		x, total int64
		path     string
	}
	out := map[string]node{}
	var parents []placed
	for l, level := range fg.GetLevels() {
		v := level.GetValues()
		require.Zero(t, len(v)%4, "level %d has %d values", l, len(v))
		var here []placed
		x, p := int64(0), 0
		for i := 0; i < len(v); i += 4 {
			x += v[i]
			name := fg.GetNames()[v[i+3]]
			path := name
			if l > 0 {
				for p < len(parents) && x+v[i+1] > parents[p].x+parents[p].total {
					p++
				}
				require.Less(t, p, len(parents), "level %d node %q lies outside every parent", l, name)
				require.GreaterOrEqual(t, x, parents[p].x, "level %d node %q starts before its parent", l, name)
				path = parents[p].path + ";" + name
			}
			n := out[path]
			out[path] = node{total: n.total + v[i+1], self: n.self + v[i+2]}
			here = append(here, placed{x: x, total: v[i+1], path: path})
			x += v[i+1]
		}
		parents = here
	}
	return out
}

func TestPyroscopeAPIParity(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Grafana Pyroscope and Flamehouse; not with -short")
	}
	py := pyroscopetest.Start(t, pyroscopetest.Options{})
	pyURL := "http://" + py.HTTPAddr
	apiURL, ingestURL := startFlamehouse(t)
	ctx := context.Background()

	// The same profiles into both: 6 reports of 5 s, 3 pods, 40 samples/s.
	gen := profilegen.New(profilegen.Config{
		Service: "checkout", Pods: 3, Stacks: 200, Functions: 120, Locations: 400, MinDepth: 3, MaxDepth: 12,
		SamplesPerSecond: 400, ReportInterval: 5 * time.Second, TraceFraction: 0.1, Threads: 4, CPUs: 4, Seed: 7,
	})
	start := time.Now().Add(-20 * time.Minute).Truncate(time.Minute)
	reports := 6
	var sent []*collectorpb.ExportProfilesServiceRequest
	for i := range reports {
		req := gen.Report(start.Add(time.Duration(i) * 5 * time.Second))
		sent = append(sent, req)
		for _, url := range []string{ingestURL, pyURL} {
			_, err := otlphttp.New(url, "").Export(ctx, req)
			require.NoError(t, err, "export to %s", url)
		}
	}
	end := start.Add(time.Duration(reports) * 5 * time.Second)
	fh := querierv1connect.NewQuerierServiceClient(http.DefaultClient, apiURL)
	pyc := querierv1connect.NewQuerierServiceClient(http.DefaultClient, pyURL)
	from, to := start.Add(-time.Minute).UnixMilli(), end.Add(time.Minute).UnixMilli()
	maxNodes := int64(65536)
	merge := &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuType, LabelSelector: `{service_name="checkout"}`, Start: from, End: to, MaxNodes: &maxNodes}

	want, err := fh.SelectMergeStacktraces(ctx, connect.NewRequest(merge))
	require.NoError(t, err)
	wantTotal := int64(reports*gen.Events()) * 50_000_000
	require.Equal(t, wantTotal, want.Msg.GetFlamegraph().GetTotal(), "Flamehouse's total is every event's 50 ms")
	// Pyroscope makes profiles queryable within seconds of the export.
	var got *connect.Response[querierv1.SelectMergeStacktracesResponse]
	require.Eventually(t, func() bool {
		got, err = pyc.SelectMergeStacktraces(ctx, connect.NewRequest(merge))
		return err == nil && got.Msg.GetFlamegraph().GetTotal() == wantTotal
	}, 90*time.Second, time.Second, "Pyroscope's total: %v %v", err, got)

	t.Run("SelectMergeStacktraces", func(t *testing.T) {
		requireMergedTreesEqual(t, want.Msg.GetFlamegraph(), got.Msg.GetFlamegraph(), wantTotal)
	})

	t.Run("labels and series", func(t *testing.T) {
		requireLabelsAndSeriesEqual(t, fh, pyc, from, to)
	})

	t.Run("SelectSeries", func(t *testing.T) {
		requireSeriesBucketings(t, fh, pyc, sent, start, end, wantTotal)
	})

	t.Run("SelectMergeSpanProfile", func(t *testing.T) {
		var spans []string
		for _, l := range sent[0].GetDictionary().GetLinkTable() {
			if len(l.GetSpanId()) == 8 && len(spans) < 5 {
				spans = append(spans, hex.EncodeToString(l.GetSpanId()))
			}
		}
		require.NotEmpty(t, spans)
		req := &querierv1.SelectMergeSpanProfileRequest{ProfileTypeID: cpuType, LabelSelector: "{}", SpanSelector: spans, Start: from, End: to, MaxNodes: &maxNodes}
		fhr, err := fh.SelectMergeSpanProfile(ctx, connect.NewRequest(req)) //nolint:staticcheck // SA1019: Grafana 12.4 calls it for span profiles
		require.NoError(t, err)
		pyr, err := pyc.SelectMergeSpanProfile(ctx, connect.NewRequest(req)) //nolint:staticcheck // SA1019: as above
		require.NoError(t, err)
		require.Positive(t, fhr.Msg.GetFlamegraph().GetTotal())
		require.Less(t, fhr.Msg.GetFlamegraph().GetTotal(), wantTotal)
		diffs := treeDiff(tree(t, pyr.Msg.GetFlamegraph()), asPyroscopeNames(tree(t, fhr.Msg.GetFlamegraph())))
		require.Empty(t, diffs, "%d nodes differ", len(diffs))
	})

	t.Run("SelectMergeProfile", func(t *testing.T) {
		req := &querierv1.SelectMergeProfileRequest{ProfileTypeID: cpuType, LabelSelector: "{}", Start: from, End: to, MaxNodes: &maxNodes}
		fhp, err := fh.SelectMergeProfile(ctx, connect.NewRequest(req)) //nolint:staticcheck // SA1019: part of the API clients call
		require.NoError(t, err)
		pyp, err := pyc.SelectMergeProfile(ctx, connect.NewRequest(req)) //nolint:staticcheck // SA1019: as above
		require.NoError(t, err)
		// Flamehouse's pprof has a location per function (frames merged by
		// function, as the flame graph); Pyroscope's keeps addresses, lines
		// and inlining. Read as call trees of functions they are equal,
		// unsymbolized frames left out (Pyroscope keeps them in pprof as
		// locations without lines).
		fhTree, pyTree := pprofTree(fhp.Msg), pprofTree(pyp.Msg)
		require.Equal(t, wantTotal, fhTree["total"].total)
		diffs := treeDiff(asPyroscopeNames(pyTree), asPyroscopeNames(fhTree))
		require.Empty(t, diffs, "%d nodes differ", len(diffs))
	})

	t.Run("render", func(t *testing.T) {
		q := url.Values{
			"query": {cpuType + `{service_name="checkout"}`}, "from": {strconv.FormatInt(from, 10)},
			"until": {strconv.FormatInt(to, 10)}, "max-nodes": {"65536"},
		}
		var fhr, pyr renderJSON
		getJSON(t, apiURL+"/pyroscope/render?"+q.Encode(), &fhr)
		getJSON(t, pyURL+"/pyroscope/render?"+q.Encode(), &pyr)
		require.Equal(t, wantTotal, fhr.Flamebearer.NumTicks)
		require.Equal(t, pyr.Flamebearer.NumTicks, fhr.Flamebearer.NumTicks)
		require.Equal(t, pyr.Metadata, fhr.Metadata)
		diffs := treeDiff(tree(t, pyr.flameGraph()), asPyroscopeNames(tree(t, fhr.flameGraph())))
		require.Empty(t, diffs, "%d nodes differ", len(diffs))
		for _, r := range []renderJSON{fhr, pyr} {
			sum := 0.0
			for _, v := range r.Timeline.Samples {
				sum += v
			}
			require.InDelta(t, float64(wantTotal), sum, 1, "timeline from %d every %d s", r.Timeline.StartTime, r.Timeline.DurationDelta)
		}
	})

	t.Run("tenant header", func(t *testing.T) {
		// Auth is off: X-Scope-OrgID picks the tenant, as in a multi-tenant
		// Pyroscope. The profiles went in as the default tenant ("").
		other := connect.NewRequest(merge)
		other.Header().Set("X-Scope-OrgID", "another-team")
		resp, err := fh.SelectMergeStacktraces(ctx, other)
		require.NoError(t, err)
		require.Zero(t, resp.Msg.GetFlamegraph().GetTotal())
		types, err := fh.ProfileTypes(ctx, withTenant(connect.NewRequest(&querierv1.ProfileTypesRequest{Start: from, End: to}), "another-team"))
		require.NoError(t, err)
		require.Empty(t, types.Msg.GetProfileTypes())
	})

	t.Run("errors", func(t *testing.T) {
		for _, req := range []*querierv1.SelectMergeStacktracesRequest{
			{ProfileTypeID: "cpu", LabelSelector: "{}", Start: from, End: to},
			{ProfileTypeID: cpuType, LabelSelector: `{service_name=}`, Start: from, End: to},
		} {
			_, fhErr := fh.SelectMergeStacktraces(ctx, connect.NewRequest(req))
			_, pyErr := pyc.SelectMergeStacktraces(ctx, connect.NewRequest(req))
			require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(pyErr), "pyroscope: %v", pyErr)
			require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(fhErr), "flamehouse: %v", fhErr)
		}
	})

	t.Run("Diff", func(t *testing.T) {
		// Pyroscope selects whole profiles by their time, both ends
		// included; Flamehouse selects events by their timestamps over
		// whole seconds, the end rounded up. Left ends a millisecond
		// before the third report, right starts with it: both split the
		// reports two and four.
		mid := start.Add(10 * time.Second)
		side := func(from, to time.Time) *querierv1.SelectMergeStacktracesRequest {
			return &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuType, LabelSelector: "{}", Start: from.UnixMilli(), End: to.UnixMilli(), MaxNodes: &maxNodes}
		}
		req := &querierv1.DiffRequest{Left: side(start, mid.Add(-time.Millisecond)), Right: side(mid, end)}
		fhd, err := fh.Diff(ctx, connect.NewRequest(req))
		require.NoError(t, err)
		pyd, err := pyc.Diff(ctx, connect.NewRequest(req))
		require.NoError(t, err)
		f, p := fhd.Msg.GetFlamegraph(), pyd.Msg.GetFlamegraph()
		require.Equal(t, p.GetLeftTicks(), f.GetLeftTicks())
		require.Equal(t, p.GetRightTicks(), f.GetRightTicks())
		require.Equal(t, wantTotal, f.GetLeftTicks()+f.GetRightTicks())
		require.Equal(t, 2*f.GetLeftTicks(), f.GetRightTicks(), "two reports against four")
		for s := range 2 {
			diffs := treeDiff(diffTree(t, p, s), asPyroscopeNames(diffTree(t, f, s)))
			require.Empty(t, diffs, "side %d: %d nodes differ", s, len(diffs))
		}
	})
}

// pprofTree reads a pprof profile as a call tree of function names from
// a root "total": a location's lines innermost first (pprof's inlining), a
// location without lines as the unsymbolized frame "[<mapping>]".
func pprofTree(p *profilev1.Profile) map[string]node {
	str := p.GetStringTable()
	fnName := map[uint64]string{}
	for _, f := range p.GetFunction() {
		fnName[f.GetId()] = str[f.GetName()]
	}
	locFrames := map[uint64][]string{} // root first
	for _, l := range p.GetLocation() {
		lines := l.GetLine()
		if len(lines) == 0 {
			locFrames[l.GetId()] = []string{"[unsymbolized]"}
			continue
		}
		for i := len(lines) - 1; i >= 0; i-- {
			locFrames[l.GetId()] = append(locFrames[l.GetId()], fnName[lines[i].GetFunctionId()])
		}
	}
	out := map[string]node{}
	for _, s := range p.GetSample() {
		path := []string{"total"}
		ids := s.GetLocationId()
		for i := len(ids) - 1; i >= 0; i-- {
			path = append(path, locFrames[ids[i]]...)
		}
		v := s.GetValue()[0]
		for i := range path {
			k := strings.Join(path[:i+1], ";")
			n := out[k]
			n.total += v
			if i == len(path)-1 {
				n.self += v
			}
			out[k] = n
		}
	}
	return out
}

// renderJSON is what the parity test reads of /pyroscope/render.
type renderJSON struct {
	Flamebearer struct {
		Names    []string  `json:"names"`
		Levels   [][]int64 `json:"levels"`
		NumTicks int64     `json:"numTicks"`
	} `json:"flamebearer"`
	Metadata map[string]any `json:"metadata"`
	Timeline struct {
		StartTime     int64     `json:"startTime"`
		Samples       []float64 `json:"samples"`
		DurationDelta int64     `json:"durationDelta"`
	} `json:"timeline"`
}

func (r renderJSON) flameGraph() *querierv1.FlameGraph {
	fg := &querierv1.FlameGraph{Names: r.Flamebearer.Names}
	for _, l := range r.Flamebearer.Levels {
		fg.Levels = append(fg.Levels, &querierv1.Level{Values: l})
	}
	return fg
}

func getJSON(t *testing.T, u string, into any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode, u)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(into))
}

func withTenant[T any](req *connect.Request[T], tenant string) *connect.Request[T] {
	req.Header().Set("X-Scope-OrgID", tenant)
	return req
}

// requireMergedTreesEqual: Flamehouse's merged flame graph is Pyroscope's
// node by node, but for the two differences it checks.
func requireMergedTreesEqual(t *testing.T, fhGraph, pyGraph *querierv1.FlameGraph, wantTotal int64) {
	t.Helper()
	fhTree, pyTree := tree(t, fhGraph), tree(t, pyGraph)
	// The two differences: a native frame without symbols (a mapping
	// and an address) is a node named [<file>] in Flamehouse, as pprof
	// names it, and Pyroscope leaves it out of the stack (both keep the
	// sample); a kernel frame is marked "name [kernel]" in Flamehouse
	// and bare in Pyroscope.
	unsymbolized, marked := 0, 0
	for path := range fhTree {
		leaf := path[strings.LastIndexByte(path, ';')+1:]
		if isUnsymbolized(leaf) {
			unsymbolized++
		}
		if strings.HasSuffix(leaf, " [kernel]") {
			marked++
		}
	}
	require.Positive(t, unsymbolized, "the profiles have unsymbolized native frames")
	require.Positive(t, marked, "Flamehouse marks the profiles' kernel frames")
	for path := range pyTree {
		require.NotContains(t, path, " [kernel]", "Pyroscope names kernel frames bare")
	}
	for path := range pyTree {
		for _, name := range strings.Split(path, ";") {
			require.False(t, isUnsymbolized(name), "Pyroscope shows unsymbolized frame %s", path)
		}
	}
	diffs := treeDiff(pyTree, asPyroscopeNames(fhTree))
	require.Empty(t, diffs, "%d nodes differ", len(diffs))
	t.Logf("%d nodes equal node by node (Flamehouse's %d, of which %d unsymbolized native frames, left out), total %d",
		len(pyTree), len(fhTree), unsymbolized, wantTotal)
}

// requireLabelsAndSeriesEqual: profile types, label values, label names
// (a superset) and series as Pyroscope answers them.
func requireLabelsAndSeriesEqual(t *testing.T, fh, pyc querierv1connect.QuerierServiceClient, from, to int64) {
	t.Helper()
	ctx := context.Background()
	fhTypes, err := fh.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{Start: from, End: to}))
	require.NoError(t, err)
	pyTypes, err := pyc.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{Start: from, End: to}))
	require.NoError(t, err)
	require.Equal(t, typeIDs(pyTypes.Msg.GetProfileTypes()), typeIDs(fhTypes.Msg.GetProfileTypes()))
	require.Equal(t, []string{cpuType}, typeIDs(fhTypes.Msg.GetProfileTypes()))

	for _, req := range []*typesv1.LabelValuesRequest{
		{Name: "service_name", Start: from, End: to},
		{Name: "__profile_type__", Matchers: []string{`{service_name="checkout"}`}, Start: from, End: to},
		{Name: "__name__", Start: from, End: to},
		{Name: "service_name", Matchers: []string{`{__profile_type__="` + cpuType + `"}`}, Start: from, End: to},
		{Name: "service_name", Matchers: []string{`{service_name="nope"}`}, Start: from, End: to},
	} {
		fhv, err := fh.LabelValues(ctx, connect.NewRequest(req))
		require.NoError(t, err)
		pyv, err := pyc.LabelValues(ctx, connect.NewRequest(req))
		require.NoError(t, err)
		require.Equal(t, pyv.Msg.GetNames(), fhv.Msg.GetNames(), "LabelValues %v", req)
	}

	// Label names: Pyroscope's OTLP ingest keeps service.name of the
	// resource attributes only and marks the series __otel__; Flamehouse
	// keeps every resource and sample attribute as a label. Pyroscope's
	// names but __otel__ are Flamehouse's too.
	fhn, err := fh.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Start: from, End: to}))
	require.NoError(t, err)
	pyn, err := pyc.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Start: from, End: to}))
	require.NoError(t, err)
	for _, name := range pyn.Msg.GetNames() {
		if name != "__otel__" {
			require.Contains(t, fhn.Msg.GetNames(), name)
		}
	}
	require.Contains(t, fhn.Msg.GetNames(), "k8s_pod_name")
	require.Contains(t, fhn.Msg.GetNames(), "thread_name")
	require.NotContains(t, pyn.Msg.GetNames(), "k8s_pod_name")

	series := &querierv1.SeriesRequest{Matchers: []string{`{service_name="checkout"}`}, LabelNames: []string{
		"service_name", "__profile_type__", "__name__", "__type__", "__unit__", "__period_type__", "__period_unit__", "__service_name__",
	}, Start: from, End: to}
	fhs, err := fh.Series(ctx, connect.NewRequest(series))
	require.NoError(t, err)
	pys, err := pyc.Series(ctx, connect.NewRequest(series))
	require.NoError(t, err)
	require.Equal(t, labelSets(pys.Msg.GetLabelsSet()), labelSets(fhs.Msg.GetLabelsSet()))
	require.Len(t, fhs.Msg.GetLabelsSet(), 1)
}

// requireSeriesBucketings: both put the sent events into steps as the
// profiles say, each its own way, with equal sums.
func requireSeriesBucketings(t *testing.T, fh, pyc querierv1connect.QuerierServiceClient, sent []*collectorpb.ExportProfilesServiceRequest,
	start, end time.Time, wantTotal int64,
) {
	t.Helper()
	ctx := context.Background()
	// The points differ by design, and both are what the sent
	// profiles say: Flamehouse puts each event at its own timestamp
	// (the eBPF profiler's samples carry them) into the step that
	// starts at or before it, [T, T+step); Pyroscope puts a whole
	// profile at the profile's time into the step that ends at or
	// after it, (T-step, T]. Over the range the sums are equal.
	step := 15 * time.Second
	req := &querierv1.SelectSeriesRequest{
		ProfileTypeID: cpuType, LabelSelector: "{}", Start: start.UnixMilli(), End: end.UnixMilli(), Step: step.Seconds(), GroupBy: []string{"service_name"},
	}
	fhs, err := fh.SelectSeries(ctx, connect.NewRequest(req))
	require.NoError(t, err)
	pys, err := pyc.SelectSeries(ctx, connect.NewRequest(req))
	require.NoError(t, err)
	bySample, byProfile := map[int64]float64{}, map[int64]float64{}
	for _, r := range sent {
		for _, rp := range r.GetResourceProfiles() {
			for _, sp := range rp.GetScopeProfiles() {
				for _, p := range sp.GetProfiles() {
					at := time.Unix(0, int64(p.GetTimeUnixNano()))
					steps := int64((at.Sub(start) + step - 1) / step) // the step that ends at or after the profile
					for _, smp := range p.GetSamples() {
						for _, ts := range smp.GetTimestampsUnixNano() {
							t := time.Unix(0, int64(ts))
							bySample[start.Add(t.Sub(start).Truncate(step)).UnixMilli()] += float64(p.GetPeriod())
							byProfile[start.Add(time.Duration(steps)*step).UnixMilli()] += float64(p.GetPeriod())
						}
					}
				}
			}
		}
	}
	key := "service_name=checkout"
	require.Equal(t, map[string]map[int64]float64{key: bySample}, seriesPoints(fhs.Msg.GetSeries()))
	require.Equal(t, map[string]map[int64]float64{key: byProfile}, seriesPoints(pys.Msg.GetSeries()))
	require.NotEqual(t, bySample, byProfile, "the data tells the two bucketings apart")
	for _, points := range []map[int64]float64{bySample, byProfile} {
		sum := 0.0
		for _, v := range points {
			sum += v
		}
		require.InDelta(t, float64(wantTotal), sum, 1)
	}
}

func typeIDs(types []*typesv1.ProfileType) []string {
	var out []string
	for _, t := range types {
		out = append(out, t.GetID())
	}
	sort.Strings(out)
	return out
}

func labelSets(sets []*typesv1.Labels) []string {
	var out []string
	for _, s := range sets {
		var parts []string
		for _, l := range s.GetLabels() {
			parts = append(parts, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(parts)
		out = append(out, strings.Join(parts, ","))
	}
	sort.Strings(out)
	return out
}

// seriesPoints is each series' points by time, keyed by its labels.
func seriesPoints(series []*typesv1.Series) map[string]map[int64]float64 {
	out := map[string]map[int64]float64{}
	for _, s := range series {
		key := labelSets([]*typesv1.Labels{{Labels: s.GetLabels()}})[0]
		out[key] = map[int64]float64{}
		for _, p := range s.GetPoints() {
			out[key][p.GetTimestamp()] += p.GetValue()
		}
	}
	return out
}

// diffTree reads one side (0 left, 1 right) of a diff flame graph, whose
// nodes are [left x offset, left total, left self, right x offset, right
// total, right self, name], into a single flame graph's tree.
func diffTree(t *testing.T, d *querierv1.FlameGraphDiff, side int) map[string]node {
	t.Helper()
	fg := &querierv1.FlameGraph{Names: d.GetNames()}
	for _, level := range d.GetLevels() {
		v := level.GetValues()
		require.Zero(t, len(v)%7)
		l := &querierv1.Level{}
		for i := 0; i < len(v); i += 7 {
			l.Values = append(l.Values, v[i+3*side], v[i+3*side+1], v[i+3*side+2], v[i+6])
		}
		fg.Levels = append(fg.Levels, l)
	}
	out := tree(t, fg)
	for path, n := range out {
		if n.total == 0 {
			delete(out, path) // only the other side has it
		}
	}
	return out
}

// isUnsymbolized tells a Flamehouse node of an unsymbolized native frame:
// [<mapping file's base name>].
func isUnsymbolized(name string) bool {
	return strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]")
}

// kindMark is the mark Flamehouse's answers give a frame that is not the
// program's own code ("do_syscall_64 [kernel]", "_PyEval_EvalFrameDefault
// [native]"); Pyroscope names such frames bare.
var kindMark = regexp.MustCompile(` \[(kernel|native)\]$`)

// asPyroscopeNames rebuilds a tree from its stacks (every node's self
// value is a stack's) as Pyroscope builds its own: the unsymbolized frames
// left out and frame kind marks dropped.
func asPyroscopeNames(in map[string]node) map[string]node {
	out := map[string]node{}
	for path, n := range in {
		if n.self == 0 {
			continue
		}
		var kept []string
		for _, name := range strings.Split(path, ";") {
			if !isUnsymbolized(name) {
				kept = append(kept, kindMark.ReplaceAllString(name, ""))
			}
		}
		for i := range kept {
			p := strings.Join(kept[:i+1], ";")
			o := out[p]
			o.total += n.self
			if i == len(kept)-1 {
				o.self += n.self
			}
			out[p] = o
		}
	}
	return out
}

// treeDiff lists the nodes whose values differ or that only one tree has.
func treeDiff(want, got map[string]node) []string {
	var diffs []string
	for path, n := range want {
		if got[path] != n {
			diffs = append(diffs, path+": pyroscope "+fmtNode(n)+" flamehouse "+fmtNode(got[path]))
		}
	}
	for path, n := range got {
		if _, ok := want[path]; !ok {
			diffs = append(diffs, path+": flamehouse only "+fmtNode(n))
		}
	}
	sort.Strings(diffs)
	return diffs
}

func fmtNode(n node) string { return "{total " + itoa(n.total) + " self " + itoa(n.self) + "}" }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
