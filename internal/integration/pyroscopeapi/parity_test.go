package pyroscopeapi

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/profilegen"
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
	py := startPyroscope(t)
	apiURL, ingestURL := startFlamehouse(t)
	ctx := context.Background()

	// The same profiles into both: 6 reports of 5 s, 3 pods, 40 samples/s.
	gen := profilegen.New(profilegen.Config{
		Service: "checkout", Pods: 3, Stacks: 200, Functions: 120, Locations: 400, MinDepth: 3, MaxDepth: 12,
		SamplesPerSecond: 400, ReportInterval: 5 * time.Second, TraceFraction: 0.1, Threads: 4, CPUs: 4, Seed: 7,
	})
	start := time.Now().Add(-20 * time.Minute).Truncate(time.Minute)
	reports := 6
	for i := range reports {
		req := gen.Report(start.Add(time.Duration(i) * 5 * time.Second))
		for _, url := range []string{ingestURL, py.url} {
			_, err := otlphttp.New(url, "").Export(ctx, req)
			require.NoError(t, err, "export to %s", url)
		}
	}
	end := start.Add(time.Duration(reports) * 5 * time.Second)
	fh := querierv1connect.NewQuerierServiceClient(http.DefaultClient, apiURL)
	pyc := querierv1connect.NewQuerierServiceClient(http.DefaultClient, py.url)
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
		fhTree, pyTree := tree(t, want.Msg.GetFlamegraph()), tree(t, got.Msg.GetFlamegraph())
		// The one difference: a native frame without symbols (a mapping and
		// an address) is a node named [<file>] in Flamehouse, as pprof
		// names it, and Pyroscope leaves it out of the stack. Both keep
		// the sample.
		unsymbolized := 0
		for path := range fhTree {
			if isUnsymbolized(path[strings.LastIndexByte(path, ';')+1:]) {
				unsymbolized++
			}
		}
		require.Positive(t, unsymbolized, "the profiles have unsymbolized native frames")
		for path := range pyTree {
			for _, name := range strings.Split(path, ";") {
				require.False(t, isUnsymbolized(name), "Pyroscope shows unsymbolized frame %s", path)
			}
		}
		diffs := treeDiff(pyTree, withoutUnsymbolized(fhTree))
		require.Empty(t, diffs, "%d nodes differ", len(diffs))
		t.Logf("%d nodes equal node by node (Flamehouse's %d, of which %d unsymbolized native frames, left out), total %d",
			len(pyTree), len(fhTree), unsymbolized, wantTotal)
	})
	_ = typesv1.LabelPair{}
}

// isUnsymbolized tells a Flamehouse node of an unsymbolized native frame:
// [<mapping file's base name>].
func isUnsymbolized(name string) bool {
	return strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]")
}

// withoutUnsymbolized rebuilds a tree from its stacks (every node's self
// value is a stack's) with the unsymbolized frames left out, as Pyroscope
// builds its own.
func withoutUnsymbolized(in map[string]node) map[string]node {
	out := map[string]node{}
	for path, n := range in {
		if n.self == 0 {
			continue
		}
		var kept []string
		for _, name := range strings.Split(path, ";") {
			if !isUnsymbolized(name) {
				kept = append(kept, name)
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

func itoa(v int64) string { return strconvFormat(v) }
