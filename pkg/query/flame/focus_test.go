package flame

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rowsFocused renders the reference tree with a focus path: children on
// the path are shown whatever their totals, children below its last node
// need subCut, the others cut.
func (n *refNode) rowsFocused(level, cut, subCut int64, path []string, inSub bool, out []row) []row {
	out = append(out, row{level, n.total, n.self, n.label})
	var kept []*refNode
	var folded int64
	anyFolded := false
	for _, child := range n.children {
		need := cut
		switch {
		case len(path) > 0 && child.label == path[0]:
			need = math.MinInt64
		case inSub:
			need = subCut
		}
		if child.total >= need {
			kept = append(kept, child)
			continue
		}
		folded += child.total
		anyFolded = true
	}
	slices.SortFunc(kept, func(a, b *refNode) int {
		if c := cmp.Compare(b.total, a.total); c != 0 {
			return c
		}
		return strings.Compare(a.label, b.label)
	})
	for _, child := range kept {
		switch {
		case len(path) > 0 && child.label == path[0]:
			out = child.rowsFocused(level+1, cut, subCut, path[1:], len(path) == 1, out)
		default:
			out = child.rowsFocused(level+1, cut, subCut, nil, inSub, out)
		}
	}
	if anyFolded {
		out = append(out, row{level + 1, folded, folded, "other"})
	}
	return out
}

// node is the reference node at a path, nil when there is none.
func (n *refNode) node(path []string) *refNode {
	for _, label := range path {
		if n = n.children[label]; n == nil {
			return nil
		}
	}
	return n
}

// randomPath walks from the root to a random node, at least one level.
func (n *refNode) randomPath(r *rand.Rand) []string {
	var path []string
	for len(n.children) > 0 {
		labels := slices.Sorted(func(yield func(string) bool) {
			for l := range n.children {
				if !yield(l) {
					return
				}
			}
		})
		label := labels[r.IntN(len(labels))]
		path = append(path, label)
		n = n.children[label]
		if r.IntN(3) == 0 {
			break
		}
	}
	return path
}

// TestFocusAgainstReference renders random trees focused on random nodes
// at every row limit: the rest as Frame renders it, the path shown, the
// subtree under it at the smallest threshold that fits the limit on its
// own (no higher than the whole tree's); totals exact.
func TestFocusAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for seed := range uint64(30) {
		samples := refSamples(seed, 60, 0)
		ref := refTree(samples)
		tree := buildTree(samples)
		for range 4 {
			path := ref.randomPath(r)
			if len(path) == 0 {
				continue
			}
			focus := ids(tree.names, strings.Join(path, ";"))
			sub := ref.node(path)
			for limit := 2; limit <= ref.count()+1; limit++ {
				cut := ref.smallestCut(limit)
				subCut := min(sub.smallestCut(limit), cut)
				want := ref.rowsFocused(0, cut, subCut, path, false, nil)
				frame, found := tree.FrameFocused(limit, "", focus)
				require.True(t, found)
				got := rows(t, frame)
				require.Equal(t, want, got, "seed %d path %v limit %d", seed, path, limit)
				requireConsistent(t, got, tree.Total())
				require.LessOrEqual(t, len(got), 2*limit+2*len(path), "seed %d path %v limit %d", seed, path, limit)
			}
		}
	}
}

// TestFocusOpensOther is the case the option is for: a root with many
// small children folds them into "other"; focusing the root's child that
// holds them shows every one of them, the rest of the graph unchanged.
func TestFocusOpensOther(t *testing.T) {
	samples := []sample{{"main;big", 1000}}
	var handler int64
	for i := range 30 {
		samples = append(samples, sample{"main;handler;fn" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), int64(1 + i)})
		handler += int64(1 + i)
	}
	samples = append(samples, sample{"gc;mark", 400}, sample{"gc;sweep", 300})
	tree := buildTree(samples)
	plain := rows(t, tree.Frame(6, ""))
	require.Contains(t, plain, row{2, handler, handler, "other"}, "main's other holds handler: %v", plain)

	// Opening main's "other" asks for main's subtree.
	frame, found := tree.FrameFocused(6, "", ids(tree.names, "main"))
	require.True(t, found)
	got := rows(t, frame)
	requireConsistent(t, got, tree.Total())
	require.Equal(t, []row{
		{0, tree.Total(), 0, "total"},
		{1, 1000 + handler, 0, "main"},
		{2, 1000, 1000, "big"},
		{2, handler, 0, "handler"},
		{3, 30, 30, "fndx"},
		{3, 29, 29, "fncx"},
		{3, handler - 59, handler - 59, "other"},
		{1, 700, 0, "gc"},
		{2, 700, 700, "other"},
	}, got, "main's subtree in 6 rows of its own, the rest as it was")

	frame, found = tree.FrameFocused(6, "", ids(tree.names, "main;handler"))
	require.True(t, found)
	got = rows(t, frame)
	requireConsistent(t, got, tree.Total())
	var opened []row
	for _, r := range got {
		if r.Level == 3 && strings.HasPrefix(r.Label, "fn") {
			opened = append(opened, r)
		}
	}
	require.Equal(t, []row{{3, 30, 30, "fndx"}, {3, 29, 29, "fncx"}, {3, 28, 28, "fnbx"}, {3, 27, 27, "fnax"}}, opened,
		"handler, shown as the path's end, and its subtree in 6 rows: itself, 4 children, other")
	require.Contains(t, got, row{3, handler - sum(opened), handler - sum(opened), "other"})
	require.Contains(t, got, row{2, 1000, 1000, "big"}, "the rest of the graph is kept")

	whole, found := tree.FrameFocused(100, "", ids(tree.names, "main;handler"))
	require.True(t, found)
	for _, r := range rows(t, whole) {
		require.NotEqual(t, "other", r.Label)
	}

	missing, found := tree.FrameFocused(6, "", ids(tree.names, "main;nothing"))
	require.False(t, found, "a path no stack goes through")
	require.Equal(t, plain, rows(t, missing))
	empty, found := tree.FrameFocused(6, "", nil)
	require.True(t, found)
	require.Equal(t, plain, rows(t, empty))
}

func sum(rs []row) int64 {
	var s int64
	for _, r := range rs {
		s += r.Value
	}
	return s
}

// BenchmarkTreeFocused renders the benchmark tree focused on a node two
// levels down (the subtree's threshold, then the focused replay).
func BenchmarkTreeFocused(b *testing.B) {
	set := randomStacks(42, 50000, 8000, 10, 50)
	focus := set.stacks[0][:2]
	var rows int
	for b.Loop() {
		tree := set.tree()
		frame, _ := tree.FrameFocused(16384, "ns", focus)
		rows = frame.Rows()
	}
	b.ReportMetric(float64(rows), "rows")
}
