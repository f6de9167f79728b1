package pyroscopeapi

import (
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
)

// stacks are a test profile: stacks (root first, ";"-joined) and values.
type stacks map[string]int64

// frameOf renders stacks as the engine does: a flame.Tree's frame.
func frameOf(s stacks, maxNodes int) *data.Frame {
	names := flame.NewNames(0)
	tree := flame.NewTree(names)
	for _, k := range slices.Sorted(mapsKeys(s)) {
		var path []int32
		if k != "" {
			for _, n := range strings.Split(k, ";") {
				path = append(path, names.ID(n))
			}
		}
		tree.Add(path, s[k])
	}
	return tree.Frame(maxNodes, "ns")
}

func diffFrameOf(left, right stacks) *data.Frame {
	names := flame.NewNames(0)
	tree := flame.NewDiffTree(names)
	keys := slices.Sorted(mapsKeys(left))
	for k := range right {
		if _, ok := left[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		var path []int32
		for _, n := range strings.Split(k, ";") {
			path = append(path, names.ID(n))
		}
		tree.Add(path, left[k], right[k])
	}
	return tree.Frame(0, "ns")
}

func mapsKeys(s stacks) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range s {
			if !yield(k) {
				return
			}
		}
	}
}

// placedNode is a flame graph node as a reader of the levels places it.
type placedNode struct {
	x, total, self int64
}

// readLevels decodes levels of width values per node (4, or 7 for a diff
// side at offset) into nodes by path, checking that each node lies within
// one node of the level above, the way Grafana's Pyroscope datasource
// rebuilds the tree.
func readLevels(t *testing.T, names []string, levels []*querierv1.Level, width, side int) map[string]placedNode {
	t.Helper()
	out := map[string]placedNode{}
	type open struct {
		x, end int64
		path   string
	}
	var parents []open
	for l, level := range levels {
		v := level.GetValues()
		require.Zero(t, len(v)%width)
		var here []open
		x, p := int64(0), 0
		for i := 0; i < len(v); i += width {
			off, total, self, name := v[i+side], v[i+side+1], v[i+side+2], v[i+width-1]
			x += off
			path := names[name]
			if l > 0 {
				for p < len(parents) && x+total > parents[p].end {
					p++
				}
				require.Less(t, p, len(parents), "node %s of level %d is outside every parent", names[name], l)
				require.GreaterOrEqual(t, x, parents[p].x)
				path = parents[p].path + ";" + path
			}
			if total > 0 || l == 0 {
				out[path] = placedNode{x: x, total: total, self: self}
			}
			here = append(here, open{x: x, end: x + total, path: path})
			x += total
		}
		parents = here
	}
	return out
}

// treeOf is the expected tree of stacks: totals and selfs by path.
func treeOf(s stacks) map[string][2]int64 {
	out := map[string][2]int64{}
	for k, v := range s {
		path := "total"
		n := out[path]
		out[path] = [2]int64{n[0] + v, n[1]}
		if k == "" {
			n := out[path]
			out[path] = [2]int64{n[0], n[1] + v}
			continue
		}
		parts := strings.Split(k, ";")
		for i, name := range parts {
			path += ";" + name
			n := out[path]
			n[0] += v
			if i == len(parts)-1 {
				n[1] += v
			}
			out[path] = n
		}
	}
	return out
}

func values(nodes map[string]placedNode) map[string][2]int64 {
	out := map[string][2]int64{}
	for k, n := range nodes {
		out[k] = [2]int64{n.total, n.self}
	}
	return out
}

func TestFlameGraphLevels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stacks stacks
	}{
		{"one stack", stacks{"main;run;work": 30}},
		{"siblings and self values", stacks{"main;run;work": 30, "main;run": 5, "main;gc": 12, "main;run;io;read": 7, "init": 3}},
		{"recursion", stacks{"a;a;a": 4, "a;b;a": 2, "a": 1}},
		{"empty stack on the root", stacks{"": 9, "main": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := readNestedSet(frameOf(tc.stacks, 0))
			require.NoError(t, err)
			fg := flameGraph(ns)
			nodes := readLevels(t, fg.GetNames(), fg.GetLevels(), 4, 0)
			require.Equal(t, treeOf(tc.stacks), values(nodes))
			var total, maxSelf int64
			for _, v := range tc.stacks {
				total += v
			}
			for _, n := range nodes {
				maxSelf = max(maxSelf, n.self)
			}
			require.Equal(t, total, fg.GetTotal())
			require.Equal(t, maxSelf, fg.GetMaxSelf())
		})
	}
}

// Pyroscope's layout: a node's self first, its children after it.
func TestFlameGraphSelfFirst(t *testing.T) {
	ns, err := readNestedSet(frameOf(stacks{"main": 10, "main;work": 30, "main;io": 5}, 0))
	require.NoError(t, err)
	fg := flameGraph(ns)
	require.Equal(t, []string{"total", "main", "work", "io"}, fg.GetNames())
	require.Equal(t, [][]int64{
		{0, 45, 0, 0},
		{0, 45, 10, 1},
		{10, 30, 30, 2, 0, 5, 5, 3}, // work at 10 (after main's self), io where work ends
	}, levelValues(fg.GetLevels()))
}

func levelValues(levels []*querierv1.Level) [][]int64 {
	var out [][]int64
	for _, l := range levels {
		out = append(out, l.GetValues())
	}
	return out
}

func TestFlameGraphEmpty(t *testing.T) {
	ns, err := readNestedSet(frameOf(stacks{}, 0))
	require.NoError(t, err)
	fg := flameGraph(ns)
	// As Pyroscope answers a range without profiles.
	require.Equal(t, []string{"total"}, fg.GetNames())
	require.Equal(t, [][]int64{{0, 0, 0, 0}}, levelValues(fg.GetLevels()))
	d := flameGraphDiff(ns)
	require.Equal(t, [][]int64{{0, 0, 0, 0, 0, 0, 0}}, levelValues(d.GetLevels()))
}

func TestFlameGraphTruncatedKeepsTotals(t *testing.T) {
	s := stacks{}
	for i := range 50 {
		s["main;f"+strings.Repeat("x", i)] = int64(i + 1)
	}
	ns, err := readNestedSet(frameOf(s, 10))
	require.NoError(t, err)
	fg := flameGraph(ns)
	nodes := readLevels(t, fg.GetNames(), fg.GetLevels(), 4, 0)
	require.LessOrEqual(t, len(nodes), 10)
	require.Contains(t, nodes, "total;main;other")
	require.Equal(t, int64(50*51/2), nodes["total"].total)
	require.Equal(t, nodes["total"].total, nodes["total;main"].total)
}

func TestFlameGraphDiffLevels(t *testing.T) {
	left := stacks{"main;work": 30, "main;gc": 10, "main;old": 4}
	right := stacks{"main;work": 20, "main;gc": 10, "main;new;io": 6, "main": 2}
	ns, err := readNestedSet(diffFrameOf(left, right))
	require.NoError(t, err)
	fg := flameGraphDiff(ns)
	require.Equal(t, treeOf(left), values(readLevels(t, fg.GetNames(), fg.GetLevels(), 7, 0)))
	require.Equal(t, treeOf(right), values(readLevels(t, fg.GetNames(), fg.GetLevels(), 7, 3)))
	require.Equal(t, int64(44), fg.GetLeftTicks())
	require.Equal(t, int64(38), fg.GetRightTicks())
	require.Equal(t, int64(82), fg.GetTotal())
	require.Equal(t, int64(30), fg.GetMaxSelf())
}

func TestPprofProfileSumsToTheFlameGraph(t *testing.T) {
	s := stacks{"main;run;work": 30, "main;run": 5, "main;gc": 12, "": 2, "main;run;work;run": 1}
	ns, err := readNestedSet(frameOf(s, 0))
	require.NoError(t, err)
	p := pprofProfile(ns, profileMeta{sampleType: "cpu", sampleUnit: "nanoseconds", periodType: "cpu", periodUnit: "nanoseconds", startNanos: 5, durationNanos: 7})
	str := p.GetStringTable()
	require.Empty(t, str[0])
	require.Equal(t, "cpu", str[p.GetSampleType()[0].GetType()])
	require.Equal(t, "nanoseconds", str[p.GetSampleType()[0].GetUnit()])
	require.Equal(t, int64(5), p.GetTimeNanos())
	require.Equal(t, int64(7), p.GetDurationNanos())
	fn := map[uint64]string{}
	for _, f := range p.GetFunction() {
		fn[f.GetId()] = str[f.GetName()]
	}
	require.Len(t, p.GetFunction(), 4, "one function per name: main, run, work, gc")
	got := stacks{}
	for _, smp := range p.GetSample() {
		var names []string
		ids := smp.GetLocationId()
		for i := len(ids) - 1; i >= 0; i-- {
			loc := p.GetLocation()[ids[i]-1]
			require.Equal(t, ids[i], loc.GetId())
			names = append(names, fn[loc.GetLine()[0].GetFunctionId()])
		}
		got[strings.Join(names, ";")] += smp.GetValue()[0]
	}
	require.Equal(t, s, got)
}

func TestReadNestedSetRefusesMalformedFrames(t *testing.T) {
	enum := &data.FieldConfig{TypeConfig: &data.FieldTypeConfig{Enum: &data.EnumFieldConfig{Text: []string{"total", "a"}}}}
	frame := func(levels []int64, labels []data.EnumItemIndex) *data.Frame {
		n := len(levels)
		return data.NewFrame("response",
			data.NewField("level", nil, levels), data.NewField("value", nil, make([]int64, n)),
			data.NewField("self", nil, make([]int64, n)), data.NewField("label", nil, labels).SetConfig(enum))
	}
	for name, f := range map[string]*data.Frame{
		"a level skipped":      frame([]int64{0, 2}, []data.EnumItemIndex{0, 1}),
		"a second root":        frame([]int64{0, 1, 0}, []data.EnumItemIndex{0, 1, 0}),
		"not starting at root": frame([]int64{1}, []data.EnumItemIndex{1}),
		"label out of enum":    frame([]int64{0, 1}, []data.EnumItemIndex{0, 5}),
		"no label field":       data.NewFrame("response", data.NewField("level", nil, []int64{0}), data.NewField("value", nil, []int64{0}), data.NewField("self", nil, []int64{0})),
		"value not int64":      data.NewFrame("response", data.NewField("level", nil, []int64{0}), data.NewField("value", nil, []float64{0}), data.NewField("self", nil, []int64{0})),
	} {
		_, err := readNestedSet(f)
		require.Error(t, err, name)
	}
}
