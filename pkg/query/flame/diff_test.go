package flame

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
)

// diffRow is one rendered diff flame graph row with its label resolved.
type diffRow struct {
	Level              int64
	Value, Self        int64
	ValueRight, SelfRt int64
	Label              string
}

func (r diffRow) String() string {
	return fmt.Sprintf("%d %d/%d %d/%d %s", r.Level, r.Value, r.Self, r.ValueRight, r.SelfRt, r.Label)
}

// diffRows reads a diff frame back.
func diffRows(t *testing.T, frame *data.Frame) []diffRow {
	t.Helper()
	names := make([]string, len(frame.Fields))
	for i, f := range frame.Fields {
		names[i] = f.Name
	}
	require.Equal(t, []string{"level", "value", "self", "label", "valueRight", "selfRight"}, names)
	base := rows(t, data.NewFrame(frame.Name, frame.Fields[:4]...))
	out := make([]diffRow, len(base))
	for i, r := range base {
		out[i] = diffRow{
			Level: r.Level, Value: r.Value, Self: r.Self, Label: r.Label,
			ValueRight: frame.Fields[4].At(i).(int64), SelfRt: frame.Fields[5].At(i).(int64),
		} // int64 fields
	}
	return out
}

// diffSample is a stack written "a;b;c" with its left and right values.
type diffSample struct {
	stack       string
	left, right int64
}

func buildDiff(samples []diffSample) *DiffTree {
	names := NewNames(0)
	d := NewDiffTree(names)
	for _, s := range samples {
		d.Add(ids(names, s.stack), s.left, s.right)
	}
	return d
}

func TestDiffTree(t *testing.T) {
	tests := []struct {
		name    string
		samples []diffSample
		want    []diffRow
	}{
		{
			name:    "both sides merge by label",
			samples: []diffSample{{"a;b", 3, 0}, {"a;b", 0, 5}, {"a", 1, 0}, {"c", 0, 2}},
			want: []diffRow{
				{0, 4, 0, 7, 0, "total"},
				{1, 4, 1, 5, 0, "a"},
				{2, 3, 3, 5, 5, "b"},
				{1, 0, 0, 2, 2, "c"},
			},
		},
		{
			name:    "siblings by both sides' total",
			samples: []diffSample{{"x", 10, 0}, {"y", 1, 12}},
			want:    []diffRow{{0, 11, 0, 12, 0, "total"}, {1, 1, 1, 12, 12, "y"}, {1, 10, 10, 0, 0, "x"}},
		},
		{
			name:    "one side empty",
			samples: []diffSample{{"a;b", 0, 4}},
			want:    []diffRow{{0, 0, 0, 4, 0, "total"}, {1, 0, 0, 4, 0, "a"}, {2, 0, 0, 4, 4, "b"}},
		},
		{name: "no values", samples: nil, want: []diffRow{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := buildDiff(tc.samples)
			frame := d.Frame(0, "ns")
			require.Equal(t, "response", frame.Name)
			require.Equal(t, data.VisTypeFlameGraph, string(frame.Meta.PreferredVisualization))
			for _, f := range frame.Fields[1:] {
				if f.Name != "label" {
					require.Equal(t, "ns", f.Config.Unit, f.Name)
				}
			}
			require.Equal(t, tc.want, diffRows(t, frame))
		})
	}
}

// refDiffNode is the reference diff tree: pointers and maps.
type refDiffNode struct {
	label               string
	left, right         int64
	selfLeft, selfRight int64
	children            map[string]*refDiffNode
	key                 int64 // the node's rank, or its descendants' largest
}

func refDiff(samples []diffSample) *refDiffNode {
	root := &refDiffNode{label: "total", children: map[string]*refDiffNode{}}
	for _, s := range samples {
		node := root
		node.left, node.right = node.left+s.left, node.right+s.right
		if s.stack != "" {
			for _, label := range strings.Split(s.stack, ";") {
				child, ok := node.children[label]
				if !ok {
					child = &refDiffNode{label: label, children: map[string]*refDiffNode{}}
					node.children[label] = child
				}
				node = child
				node.left, node.right = node.left+s.left, node.right+s.right
			}
		}
		node.selfLeft += s.left
		node.selfRight += s.right
	}
	root.rank(root.left, root.right)
	return root
}

// rank sets every node's key: s × (1 + ChangeWeight × ((r − l) / s)²),
// s = max(l, r) of the shares l and r, in units of 2^-50, or a
// descendant's if larger.
func (n *refDiffNode) rank(totalLeft, totalRight int64) int64 {
	sh := func(v, total int64) float64 {
		if total == 0 {
			return 0
		}
		return math.Abs(float64(v) / float64(total))
	}
	l, r := sh(n.left, totalLeft), sh(n.right, totalRight)
	n.key = 0
	if s := max(l, r); s > 0 {
		n.key = int64(s * (1 + ChangeWeight*((r-l)/s)*((r-l)/s)) * (1 << 50))
	}
	for _, c := range n.children {
		n.key = max(n.key, c.rank(totalLeft, totalRight))
	}
	return n.key
}

func (n *refDiffNode) count() int {
	count := 1
	for _, c := range n.children {
		count += c.count()
	}
	return count
}

func (n *refDiffNode) keys(out []int64) []int64 {
	for _, c := range n.children {
		out = c.keys(append(out, c.key))
	}
	return out
}

func (n *refDiffNode) rows(level, cut int64, out []diffRow) []diffRow {
	out = append(out, diffRow{level, n.left, n.selfLeft, n.right, n.selfRight, n.label})
	var kept []*refDiffNode
	var foldedLeft, foldedRight int64
	anyFolded := false
	for _, c := range n.children {
		if c.key >= cut {
			kept = append(kept, c)
			continue
		}
		foldedLeft, foldedRight, anyFolded = foldedLeft+c.left, foldedRight+c.right, true
	}
	slices.SortFunc(kept, func(a, b *refDiffNode) int {
		if c := cmp.Compare(b.left+b.right, a.left+a.right); c != 0 {
			return c
		}
		return strings.Compare(a.label, b.label)
	})
	for _, c := range kept {
		out = c.rows(level+1, cut, out)
	}
	if anyFolded {
		out = append(out, diffRow{level + 1, foldedLeft, foldedLeft, foldedRight, foldedRight, "other"})
	}
	return out
}

func (n *refDiffNode) smallestCut(limit int) int64 {
	if limit == 0 || n.count() <= limit {
		return math.MinInt64
	}
	for _, cut := range append(slices.Compact(slices.Sorted(slices.Values(n.keys(nil)))), math.MaxInt64) {
		if len(n.rows(0, cut, nil)) <= limit {
			return cut
		}
	}
	return math.MaxInt64
}

// refDiffSamples pairs random stacks: some on one side only, most on
// both with different values.
func refDiffSamples(seed uint64, count int) []diffSample {
	left, right := refSamples(seed, count, 0), refSamples(seed+1000, count, 0)
	out := make([]diffSample, 0, 2*count)
	for i := range left {
		out = append(out, diffSample{left[i].stack, left[i].value, 0}, diffSample{right[i].stack, 0, right[i].value})
		if i%3 == 0 {
			out = append(out, diffSample{left[i].stack, 0, left[i].value * int64(1+i%4)})
		}
	}
	return out
}

// TestDiffAgainstReference renders random diff trees whole and at every
// row limit and compares each frame with the reference rendering at the
// smallest fitting threshold.
func TestDiffAgainstReference(t *testing.T) {
	for seed := range uint64(30) {
		samples := refDiffSamples(seed, 30)
		ref := refDiff(samples)
		d := buildDiff(samples)
		require.Equal(t, ref.count(), d.Nodes())
		for maxNodes := 0; maxNodes <= ref.count()+1; maxNodes++ {
			limit := max(maxNodes, 2)
			if maxNodes == 0 {
				limit = 0
			}
			want := ref.rows(0, ref.smallestCut(limit), nil)
			got := diffRows(t, d.Frame(maxNodes, ""))
			require.Equal(t, want, got, "seed %d maxNodes %d", seed, maxNodes)
			if limit > 0 {
				require.LessOrEqual(t, len(got), limit)
			}
			requireDiffConsistent(t, got)
		}
	}
	for seed := range uint64(4) {
		samples := refDiffSamples(100+seed, 600)
		ref := refDiff(samples)
		d := buildDiff(samples)
		for _, limit := range []int{0, 2, 10, 50, 200} {
			require.Equal(t, ref.rows(0, ref.smallestCut(limit), nil), diffRows(t, d.Frame(limit, "")), "seed %d limit %d", seed, limit)
		}
	}
}

// requireDiffConsistent checks the nested set on both sides: a row's value
// is its self plus its children's values.
func requireDiffConsistent(t *testing.T, rows []diffRow) {
	t.Helper()
	for i, r := range rows {
		var childLeft, childRight int64
		for j := i + 1; j < len(rows) && rows[j].Level > r.Level; j++ {
			if rows[j].Level == r.Level+1 {
				childLeft += rows[j].Value
				childRight += rows[j].ValueRight
			}
		}
		require.Equal(t, r.Value, r.Self+childLeft, "row %d %s: left", i, r)
		require.Equal(t, r.ValueRight, r.SelfRt+childRight, "row %d %s: right", i, r)
	}
}

// TestDiffTruncationKeepsWhatChanged: a function that grew 10× while
// small on both sides, below the threshold of either side's own flame
// graph at the same max nodes, is kept in the diff, with its ancestors.
func TestDiffTruncationKeepsWhatChanged(t *testing.T) {
	var samples []diffSample
	var left, right []sample
	add := func(stack string, l, r int64) {
		samples = append(samples, diffSample{stack, l, r})
		left, right = append(left, sample{stack, l}), append(right, sample{stack, r})
	}
	// 200 unchanged functions of sizes 100..2090 under two parents.
	for i := range 200 {
		add(fmt.Sprintf("main;worker%d;fn%03d", i%2, i), int64(100+10*i), int64(100+10*i))
	}
	add("main;worker1;grew", 30, 300)
	const maxNodes = 60
	for name, side := range map[string][]sample{"left": left, "right": right} {
		for _, r := range rows(t, buildTree(side).Frame(maxNodes, "")) {
			require.NotEqual(t, "grew", r.Label, "the %s side's own flame graph folds it into other", name)
		}
	}
	got := diffRows(t, buildDiff(samples).Frame(maxNodes, ""))
	require.LessOrEqual(t, len(got), maxNodes)
	requireDiffConsistent(t, got)
	var found bool
	for _, r := range got {
		if r.Label == "grew" {
			found = true
			require.Equal(t, diffRow{3, 30, 30, 300, 300, "grew"}, r)
		}
	}
	require.True(t, found, "the function that grew 10× is shown:\n%v", got)
	require.Equal(t, diffRow{0, 30 + 200*100 + 10*199*200/2, 0, 300 + 200*100 + 10*199*200/2, 0, "total"}, got[0], "totals stay exact")
}

// TestDiffOfOneSideIsTheFlameGraph: with nothing on the right, the diff
// frame's left fields are the plain flame graph, untruncated.
func TestDiffOfOneSideIsTheFlameGraph(t *testing.T) {
	for seed := range uint64(10) {
		samples := refSamples(seed, 200, 0)
		var diff []diffSample
		for _, s := range samples {
			diff = append(diff, diffSample{s.stack, s.value, 0})
		}
		want := rows(t, buildTree(samples).Frame(0, ""))
		got := diffRows(t, buildDiff(diff).Frame(0, ""))
		require.Len(t, got, len(want))
		for i := range want {
			require.Equal(t, want[i], row{got[i].Level, got[i].Value, got[i].Self, got[i].Label}) //nolint:testifylint // want is the plain flame graph
			require.Zero(t, got[i].ValueRight)
		}
	}
}

// BenchmarkDiffTree builds the diff of two 50k-stack sets (the stacks of
// BenchmarkTree against a reseeded draw) truncated to 16384 nodes.
func BenchmarkDiffTree(b *testing.B) {
	left, right := randomStacks(42, 50000, 8000, 10, 50), randomStacks(43, 50000, 8000, 10, 50)
	var nodes int
	for b.Loop() {
		names := NewNames(0)
		d := NewDiffTree(names)
		for _, set := range []stackSet{left, right} {
			path := make([]int32, 0, 64)
			for i, stack := range set.stacks {
				path = path[:0]
				for _, id := range stack {
					path = append(path, names.ID(set.names.Label(id)))
				}
				if set.names == left.names {
					d.Add(path, set.values[i], 0)
				} else {
					d.Add(path, 0, set.values[i])
				}
			}
		}
		d.Frame(16384, "ns")
		nodes = d.Nodes()
	}
	b.ReportMetric(float64(nodes), "nodes")
}
