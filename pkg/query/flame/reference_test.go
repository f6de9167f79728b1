package flame

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// refNode is a node of the reference tree: the obvious pointer-and-map
// implementation the replayed tree is checked against.
type refNode struct {
	label    string
	self     int64
	total    int64
	children map[string]*refNode
}

func refTree(samples []sample) *refNode {
	root := &refNode{label: "total", children: map[string]*refNode{}}
	for _, s := range samples {
		node := root
		node.total += s.value
		if s.stack != "" {
			for _, label := range strings.Split(s.stack, ";") {
				child, ok := node.children[label]
				if !ok {
					child = &refNode{label: label, children: map[string]*refNode{}}
					node.children[label] = child
				}
				node = child
				node.total += s.value
			}
		}
		node.self += s.value
	}
	return root
}

func (n *refNode) count() int {
	count := 1
	for _, child := range n.children {
		count += child.count()
	}
	return count
}

func (n *refNode) totals(out []int64) []int64 {
	for _, child := range n.children {
		out = child.totals(append(out, child.total))
	}
	return out
}

// rows renders the reference tree: children below cut fold into "other".
func (n *refNode) rows(cut int64) []row {
	return n.rowsFocused(0, cut, cut, nil, false, nil)
}

// smallestCut is the smallest threshold whose reference rendering has at
// most limit rows, found by trying every node total.
func (n *refNode) smallestCut(limit int) int64 {
	if limit == 0 || n.count() <= limit {
		return math.MinInt64
	}
	cuts := append(slices.Compact(slices.Sorted(slices.Values(n.totals(nil)))), math.MaxInt64)
	for _, cut := range cuts {
		if len(n.rows(cut)) <= limit {
			return cut
		}
	}
	return math.MaxInt64
}

// refSamples draws stacks over a few labels, with duplicates, prefixes of
// one another and empty stacks; values from minValue up.
func refSamples(seed uint64, count int, minValue int64) []sample {
	r := rand.New(rand.NewPCG(seed, 1))
	labels := []string{"a", "b", "c", "d", "e"}
	samples := make([]sample, count)
	for i := range samples {
		frames := make([]string, r.IntN(6))
		for j := range frames {
			frames[j] = labels[r.IntN(len(labels))]
		}
		samples[i] = sample{strings.Join(frames, ";"), minValue + r.Int64N(20)}
		if i > 0 && r.IntN(5) == 0 {
			samples[i].stack = samples[r.IntN(i)].stack
		}
	}
	return samples
}

// TestAgainstReference renders random trees whole and at every row limit
// and compares each frame with the reference rendering at the smallest
// fitting threshold.
func TestAgainstReference(t *testing.T) {
	for seed := range uint64(30) {
		samples := refSamples(seed, 40, 0)
		ref := refTree(samples)
		tree := buildTree(samples)
		require.Equal(t, ref.count(), tree.Nodes())
		require.Equal(t, ref.total, tree.Total())
		for maxNodes := 0; maxNodes <= ref.count()+1; maxNodes++ {
			limit := maxNodes
			if limit == 1 {
				limit = 2 // the smallest bound Frame honours
			}
			want := ref.rows(ref.smallestCut(limit))
			require.Equal(t, want, rows(t, tree.Frame(maxNodes, "")), "seed %d maxNodes %d", seed, maxNodes)
		}
	}
}

// TestAgainstReferenceLarge does the same with enough stacks for the radix
// sort, at a few limits.
func TestAgainstReferenceLarge(t *testing.T) {
	for seed := range uint64(5) {
		samples := refSamples(seed, 800, 0)
		ref := refTree(samples)
		tree := buildTree(samples)
		require.Equal(t, ref.count(), tree.Nodes())
		for _, limit := range []int{0, 2, 10, 50, 200, 1000} {
			want := ref.rows(ref.smallestCut(limit))
			require.Equal(t, want, rows(t, tree.Frame(limit, "")), "seed %d limit %d", seed, limit)
		}
	}
}

// TestExtremeLabelIDs merges stacks of ids outside the names table,
// including the extremes that collide in the sort keys.
func TestExtremeLabelIDs(t *testing.T) {
	labels := []int32{math.MinInt32, -1, 0, 1, math.MaxInt32}
	r := rand.New(rand.NewPCG(3, 4))
	tree := NewTree(NewNames(0))
	prefixes := map[string]bool{}
	for range 500 {
		stack := make([]int32, r.IntN(5))
		for i := range stack {
			stack[i] = labels[r.IntN(len(labels))]
			prefixes[fmt.Sprint(stack[:i+1])] = true
		}
		tree.Add(stack, 1)
	}
	require.Equal(t, len(prefixes)+1, tree.Nodes())
	got := rows(t, tree.Frame(0, ""))
	require.Len(t, got, tree.Nodes())
	require.Equal(t, int64(500), got[0].Value)
	for _, r := range got[1:] {
		require.Empty(t, r.Label)
	}
}

// TestNegativeValues checks that with negative values, where a child's
// total can exceed its parent's, frames still match the reference at the
// chosen threshold, keep exact totals and respect the row bound.
func TestNegativeValues(t *testing.T) {
	for seed := range uint64(30) {
		samples := refSamples(seed, 40, -10)
		ref := refTree(samples)
		tree := buildTree(samples)
		for limit := 2; limit < ref.count(); limit++ {
			got := rows(t, tree.Frame(limit, ""))
			require.Equal(t, ref.rows(tree.threshold(limit)), got, "seed %d limit %d", seed, limit)
			require.LessOrEqual(t, len(got), limit)
			requireConsistent(t, got, tree.Total())
		}
	}
}
