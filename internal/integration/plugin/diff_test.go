package plugin

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/pproftest"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/pprofconv"
	"github.com/flamehouse/flamehouse/pkg/query"
)

// diffSink keeps the work of recordWork from being optimised away.
var diffSink int

//go:noinline
func diffSquares(n int) int {
	s := 0
	for i := range n {
		s += i * i
	}
	return s
}

//go:noinline
func diffXor(n int) int {
	s := 1
	for i := range n {
		s ^= i << 3
	}
	return s
}

//go:noinline
func diffHash(n int) int {
	s := uint64(1469598103934665603)
	for i := range n {
		s = (s ^ uint64(i)) * 1099511628211
	}
	return int(s & 0xffff)
}

// recordWork writes a real CPU profile of this process running the given
// mix of work (loop iterations of each function per round) for about d,
// stamped at the time at.
func recordWork(t *testing.T, path string, d time.Duration, at time.Time, squares, xor, hash int) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, pprof.StartCPUProfile(&buf))
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		diffSink += diffSquares(squares) + diffXor(xor) + diffHash(hash)
	}
	pprof.StopCPUProfile()
	prof, err := profile.Parse(&buf)
	require.NoError(t, err)
	prof.TimeNanos = at.UnixNano()
	writeProfile(t, path, prof)
}

func writeProfile(t *testing.T, path string, prof *profile.Profile) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, prof.Write(f))
	require.NoError(t, f.Close())
}

// importProfiles sends pprof files to the fixture's ingest as `flamehouse
// import` does: converted by pprofconv, with service.name and the
// attributes (key, value, ...) as resource attributes.
func importProfiles(t *testing.T, f *fixture, serviceName string, attrs []string, paths ...string) {
	t.Helper()
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		prof, err := profile.ParseData(raw)
		require.NoError(t, err)
		req, err := pprofconv.Convert(prof, pprofconv.Options{ResourceAttributes: append([]string{"service.name", serviceName}, attrs...)})
		require.NoError(t, err)
		f.send(t, req)
	}
}

// pprofDiffTop runs `go tool pprof -top -diff_base=base path`: per
// function, path's flat and cumulative nanoseconds minus base's.
func pprofDiffTop(t *testing.T, base, path string) (flat, cum map[string]int64) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	out, err := exec.CommandContext(t.Context(), goBin, "tool", "pprof", "-top", "-diff_base="+base, "-nodecount=100000",
		"-nodefraction=0", "-edgefraction=0", "-unit=ns", path).CombinedOutput()
	require.NoError(t, err, string(out))
	flat, cum = map[string]int64{}, map[string]int64{}
	header := false
	for line := range strings.SplitSeq(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "flat" {
			header = true
			continue
		}
		if !header || len(fields) < 6 {
			continue
		}
		name := strings.TrimSuffix(strings.Join(fields[5:], " "), " (inline)")
		fl, err := strconv.ParseInt(strings.TrimSuffix(fields[0], "ns"), 10, 64)
		require.NoError(t, err, line)
		cu, err := strconv.ParseInt(strings.TrimSuffix(fields[3], "ns"), 10, 64)
		require.NoError(t, err, line)
		flat[name] += fl
		cum[name] += cu
	}
	require.True(t, header, "pprof -top -diff_base printed:\n%s", out)
	return flat, cum
}

// diffFrameRow is one row of a diff frame.
type diffFrameRow struct {
	level                        int64
	value, self, valueRt, selfRt int64
	label                        string
}

// readDiffFrame reads a diff flame graph frame, checking its shape: the
// fields Grafana's flame graph reads by name, with the unit on every value.
func readDiffFrame(t *testing.T, f *data.Frame, unit string) []diffFrameRow {
	t.Helper()
	require.Equal(t, "response", f.Name)
	require.Equal(t, data.VisType(data.VisTypeFlameGraph), f.Meta.PreferredVisualization)
	byName := map[string]*data.Field{}
	for _, field := range f.Fields {
		byName[field.Name] = field
	}
	for _, name := range []string{"level", "value", "self", "label", "valueRight", "selfRight"} {
		require.Contains(t, byName, name)
	}
	for _, name := range []string{"value", "self", "valueRight", "selfRight"} {
		require.Equal(t, unit, byName[name].Config.Unit, name)
	}
	names := byName["label"].Config.TypeConfig.Enum.Text
	rows := make([]diffFrameRow, f.Rows())
	for i := range rows {
		rows[i] = diffFrameRow{
			level: byName["level"].At(i).(int64), value: byName["value"].At(i).(int64), self: byName["self"].At(i).(int64), // int64 fields
			valueRt: byName["valueRight"].At(i).(int64), selfRt: byName["selfRight"].At(i).(int64),
			label: names[byName["label"].At(i).(data.EnumItemIndex)], // an enum field
		}
	}
	return rows
}

// sideTop adds a diff frame up per function the way Grafana's top table
// does: self summed, total counted once per path (a recursive function's
// inner nodes are within its outer one).
type sideTop struct{ selfL, totalL, selfR, totalR map[string]int64 }

func diffTop(rows []diffFrameRow) sideTop {
	top := sideTop{map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}}
	var path []string
	for _, r := range rows[1:] { // the root is not a function
		for int64(len(path)) >= r.level {
			path = path[:len(path)-1]
		}
		nested := false
		for _, p := range path {
			nested = nested || p == r.label
		}
		top.selfL[r.label] += r.self
		top.selfR[r.label] += r.selfRt
		if !nested {
			top.totalL[r.label] += r.value
			top.totalR[r.label] += r.valueRt
		}
		path = append(path, r.label)
	}
	return top
}

// nonZero drops zero entries (a side without a function).
func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// TestDiffMatchesPprof imports two real CPU profiles of different work as
// "before" (an hour earlier) and "after" of one service with `flamehouse
// import`, and compares the diff flame graph with `go tool pprof -top` of
// each file and `-diff_base`: per function, left self and total are the
// before profile's flat and cum, right ones the after profile's, and
// right minus left is pprof's difference. Once by time (the left side an
// hour back by offset), once by selection (a resource attribute, one
// range), and once with a left range twice as long, whose values are
// halved.
func TestDiffMatchesPprof(t *testing.T) {
	f := newFixture(t, nil)
	dir := t.TempDir()
	after := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	before := after.Add(-time.Hour)
	beforePath, afterPath := filepath.Join(dir, "before.pb.gz"), filepath.Join(dir, "after.pb.gz")
	recordWork(t, beforePath, 1500*time.Millisecond, before, 300_000, 50_000, 0)
	recordWork(t, afterPath, 1500*time.Millisecond, after, 100_000, 200_000, 100_000)
	importProfiles(t, f, "diffsvc", []string{"version", "before"}, beforePath)
	importProfiles(t, f, "diffsvc", []string{"version", "after"}, afterPath)

	flatBefore, cumBefore := pproftest.Top(t, beforePath)
	flatAfter, cumAfter := pproftest.Top(t, afterPath)
	flatDiff, cumDiff := pprofDiffTop(t, beforePath, afterPath)
	require.NotEmpty(t, nonZero(flatDiff))
	require.NotEmpty(t, nonZero(cumDiff))
	require.Contains(t, flatAfter, "github.com/flamehouse/flamehouse/internal/integration/plugin.diffHash", "the after profile ran the new function")
	require.NotContains(t, flatBefore, "github.com/flamehouse/flamehouse/internal/integration/plugin.diffHash")

	from, to := after.Add(-time.Minute), after.Add(4*time.Minute)
	for _, tc := range []struct {
		name     string
		selector string
		left     map[string]any
		from, to time.Time
		scale    float64
	}{
		{"an hour earlier", `{service_name="diffsvc"}`, map[string]any{"offset": "1h"}, from, to, 1},
		{
			"another selection", `{service_name="diffsvc", version="after"}`,
			map[string]any{"labelSelector": `{service_name="diffsvc", version="before"}`},
			before.Add(-time.Minute), to, 1,
		},
		{"a range twice as long", `{service_name="diffsvc"}`, map[string]any{
			"from": strconv.FormatInt(before.Add(-6*time.Minute).UnixMilli(), 10), "to": before.Add(4 * time.Minute).Format(time.RFC3339),
		}, from, to, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := map[string]any{"queryType": "diff", "profileTypeId": plugintest.CPUType, "labelSelector": tc.selector, "left": tc.left, "maxNodes": 100000}
			frames := plugintest.RequireOK(t, f.query(t, q, tc.from, tc.to))
			require.Len(t, frames, 1)
			rows := readDiffFrame(t, frames[0], "ns")
			require.Equal(t, "total", rows[0].label)
			top := diffTop(rows)
			scaled := func(m map[string]int64) map[string]int64 {
				out := map[string]int64{}
				for k, v := range m {
					out[k] = int64(float64(v) * tc.scale) // CPU samples are whole 10 ms: halves are exact
				}
				return out
			}
			require.Equal(t, nonZero(scaled(flatBefore)), nonZero(top.selfL), "left self = before's flat")
			require.Equal(t, scaled(cumBefore), nonZero(top.totalL), "left total = before's cum")
			require.Equal(t, nonZero(flatAfter), nonZero(top.selfR), "right self = after's flat")
			require.Equal(t, cumAfter, nonZero(top.totalR), "right total = after's cum")
			if tc.scale != 1 {
				info := frames[0].Meta.Custom.(map[string]any)["diff"].(query.DiffInfo) // set by the engine
				require.InDelta(t, tc.scale, info.LeftScale, 1e-9)
				require.NotEmpty(t, frames[0].Meta.Notices, "the scaling is said")
				return
			}
			for fn := range merged(top.totalL, top.totalR) {
				require.Equal(t, flatDiff[fn], top.selfR[fn]-top.selfL[fn], "%s: flat difference as pprof -diff_base", fn)
				require.Equal(t, cumDiff[fn], top.totalR[fn]-top.totalL[fn], "%s: cum difference as pprof -diff_base", fn)
			}
		})
	}
}

func merged(maps ...map[string]int64) map[string]bool {
	out := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// syntheticProfile builds a pprof CPU profile of stacks main;worker<i%2>;fn<i>
// and the given extra leaf, in 10 ms samples.
func syntheticProfile(at time.Time, leafSamples map[string]int64) *profile.Profile {
	prof := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		TimeNanos: at.UnixNano(), DurationNanos: int64(10 * time.Second),
	}
	mapping := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x800000, File: "/bin/synthetic", HasFunctions: true}
	prof.Mapping = []*profile.Mapping{mapping}
	locs := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		fn := &profile.Function{ID: uint64(len(prof.Function) + 1), Name: name, SystemName: name, Filename: "synthetic.go"}
		prof.Function = append(prof.Function, fn)
		l := &profile.Location{ID: uint64(len(prof.Location) + 1), Mapping: mapping, Address: 0x400000 + 16*uint64(len(prof.Location)), Line: []profile.Line{{Function: fn, Line: 1}}}
		prof.Location = append(prof.Location, l)
		locs[name] = l
		return l
	}
	for leaf, n := range leafSamples {
		worker := "worker1"
		if i, err := strconv.Atoi(strings.TrimPrefix(leaf, "fn")); err == nil {
			worker = fmt.Sprintf("worker%d", i%2)
		}
		prof.Sample = append(prof.Sample, &profile.Sample{
			Location: []*profile.Location{loc(leaf), loc(worker), loc("main")}, // leaf first
			Value:    []int64{n, n * 10_000_000},
		})
	}
	return prof
}

// TestDiffTruncationKeepsWhatGrew imports two synthetic profiles of 200
// unchanged functions and one that grew 10×, small enough to be folded
// into "other" in either side's own flame graph at the same max nodes:
// the diff keeps it, with its exact values.
func TestDiffTruncationKeepsWhatGrew(t *testing.T) {
	f := newFixture(t, nil)
	dir := t.TempDir()
	at := time.Now().UTC().Truncate(time.Minute).Add(-40 * time.Minute)
	rng := rand.New(rand.NewPCG(7, 7))
	unchanged := map[string]int64{}
	for i := range 200 {
		unchanged[fmt.Sprintf("fn%03d", i)] = 10 + rng.Int64N(200)
	}
	beforeSamples, afterSamples := map[string]int64{"grew": 3}, map[string]int64{"grew": 30}
	for k, v := range unchanged {
		beforeSamples[k], afterSamples[k] = v, v
	}
	beforePath, afterPath := filepath.Join(dir, "before.pb.gz"), filepath.Join(dir, "after.pb.gz")
	writeProfile(t, beforePath, syntheticProfile(at.Add(-time.Hour), beforeSamples))
	writeProfile(t, afterPath, syntheticProfile(at, afterSamples))
	importProfiles(t, f, "truncsvc", nil, beforePath, afterPath)
	_, cumBefore := pproftest.Top(t, beforePath)
	_, cumAfter := pproftest.Top(t, afterPath)
	require.Equal(t, int64(30_000_000), cumBefore["grew"])
	require.Equal(t, int64(300_000_000), cumAfter["grew"])

	const maxNodes = 60
	sel := `{service_name="truncsvc"}`
	from, to := at.Add(-time.Minute), at.Add(4*time.Minute)
	for name, rng := range map[string][2]time.Time{"before": {from.Add(-time.Hour), to.Add(-time.Hour)}, "after": {from, to}} {
		rows := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, map[string]any{"profileTypeId": plugintest.CPUType, "labelSelector": sel, "maxNodes": maxNodes}, rng[0], rng[1]))[0], "ns")
		require.LessOrEqual(t, len(rows), maxNodes, name)
		others := 0
		for _, r := range rows {
			require.NotEqual(t, "grew", r.Label, "%s: its own flame graph folds the function into other", name)
			if r.Label == "other" {
				others++
			}
		}
		require.Positive(t, others, "%s: truncated", name)
	}
	q := map[string]any{"queryType": "diff", "profileTypeId": plugintest.CPUType, "labelSelector": sel, "left": map[string]any{"offset": "1h"}, "maxNodes": maxNodes}
	rows := readDiffFrame(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0], "ns")
	require.LessOrEqual(t, len(rows), maxNodes)
	var found *diffFrameRow
	for i := range rows {
		if rows[i].label == "grew" {
			found = &rows[i]
		}
	}
	require.NotNil(t, found, "the diff keeps the function that grew 10×: %v", rows)
	require.Equal(t, diffFrameRow{level: 3, value: 30_000_000, self: 30_000_000, valueRt: 300_000_000, selfRt: 300_000_000, label: "grew"}, *found)
	var total int64
	for _, v := range unchanged {
		total += v * 10_000_000
	}
	require.Equal(t, total+30_000_000, rows[0].value, "the left total is exact")
	require.Equal(t, total+300_000_000, rows[0].valueRt, "the right total is exact")
}

// TestDiffQueryErrors: invalid diff queries are 400 downstream errors.
func TestDiffQueryErrors(t *testing.T) {
	f := newFixture(t, nil)
	now := time.Now()
	for name, left := range map[string]map[string]any{
		"offset and range": {"offset": "1h", "from": "now-2h", "to": "now-1h"},
		"from without to":  {"from": "now-2h"},
		"bad offset":       {"offset": "yesterday"},
		"bad selector":     {"labelSelector": "{a=}"},
		"empty range":      {"from": "now-1h", "to": "now-2h"},
	} {
		t.Run(name, func(t *testing.T) {
			r := f.query(t, map[string]any{"queryType": "diff", "profileTypeId": plugintest.CPUType, "left": left}, now.Add(-time.Hour), now)
			require.Error(t, r.Error)
			require.Equal(t, backend.StatusBadRequest, r.Status)
			require.Equal(t, backend.ErrorSourceDownstream, r.ErrorSource)
		})
	}
}
