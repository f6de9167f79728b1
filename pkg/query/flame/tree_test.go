package flame

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	names := NewNames(0)
	a, b := names.ID("a"), names.ID("b")
	require.Equal(t, a, names.ID("a"))
	require.NotEqual(t, a, b)
	require.Equal(t, "a", names.Label(a))
	require.Equal(t, "b", names.Label(b))
	require.Empty(t, names.Label(-1))
	require.Empty(t, names.Label(99))
}

func TestTree(t *testing.T) {
	tests := []struct {
		name    string
		samples []sample
		nodes   int
		total   int64
		want    []row
	}{
		{
			name:    "same label under the same parent merges",
			samples: []sample{{"a;b", 3}, {"a;b", 4}, {"a", 1}},
			nodes:   3,
			total:   8,
			want:    []row{{0, 8, 0, "total"}, {1, 8, 1, "a"}, {2, 7, 7, "b"}},
		},
		{
			name:    "same label under different parents does not merge",
			samples: []sample{{"a;c", 2}, {"b;c", 5}},
			nodes:   5,
			total:   7,
			want: []row{
				{0, 7, 0, "total"},
				{1, 5, 0, "b"},
				{2, 5, 5, "c"},
				{1, 2, 0, "a"},
				{2, 2, 2, "c"},
			},
		},
		{
			name:    "recursion makes a chain",
			samples: []sample{{"a;a;a", 2}, {"a", 1}},
			nodes:   4,
			total:   3,
			want:    []row{{0, 3, 0, "total"}, {1, 3, 1, "a"}, {2, 2, 0, "a"}, {3, 2, 2, "a"}},
		},
		{
			name:    "empty stack adds to the root's self",
			samples: []sample{{"", 4}, {"a", 1}},
			nodes:   2,
			total:   5,
			want:    []row{{0, 5, 4, "total"}, {1, 1, 1, "a"}},
		},
		{
			name:    "siblings by total descending then label ascending",
			samples: []sample{{"m;b", 1}, {"m;c", 5}, {"m;a", 1}, {"n", 6}, {"m;c;d", 1}},
			nodes:   7,
			total:   14,
			want: []row{
				{0, 14, 0, "total"},
				{1, 8, 0, "m"},
				{2, 6, 5, "c"},
				{3, 1, 1, "d"},
				{2, 1, 1, "a"},
				{2, 1, 1, "b"},
				{1, 6, 6, "n"},
			},
		},
		{
			name:    "shared prefixes with the previous stack",
			samples: []sample{{"a;b;c", 1}, {"a;b;d", 2}, {"a;b", 3}, {"a;x;c", 4}, {"a;b;c", 5}},
			nodes:   7,
			total:   15,
			want: []row{
				{0, 15, 0, "total"},
				{1, 15, 0, "a"},
				{2, 11, 3, "b"},
				{3, 6, 6, "c"},
				{3, 2, 2, "d"},
				{2, 4, 0, "x"},
				{3, 4, 4, "c"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree := buildTree(tc.samples)
			require.Equal(t, tc.nodes, tree.Nodes())
			require.Equal(t, tc.total, tree.Total())
			require.Equal(t, tc.want, rows(t, tree.Frame(0, "ns")))
		})
	}
}

func TestTreeIgnoresInsertionOrder(t *testing.T) {
	set := randomStacks(7, 3000, 300, 1, 12)
	want := rows(t, set.tree().Frame(0, "ns"))
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(set.stacks), func(i, j int) {
		set.stacks[i], set.stacks[j] = set.stacks[j], set.stacks[i]
		set.values[i], set.values[j] = set.values[j], set.values[i]
	})
	shuffled := set.tree()
	require.Equal(t, want, rows(t, shuffled.Frame(0, "ns")))
	require.Len(t, want, shuffled.Nodes())
}

func TestTreeWideAndDeep(t *testing.T) {
	names := NewNames(0)
	tree := NewTree(names)
	// Many children under one node, across several chunks of labels.
	for i := range 5000 {
		tree.Add([]int32{names.ID("wide"), names.ID(string(rune(0x4e00 + i)))}, 1)
	}
	// A stack longer than the largest chunk gets a chunk of its own.
	deep := make([]int32, largestChunk+10)
	for i := range deep {
		deep[i] = names.ID("deep")
	}
	tree.Add(deep, 2)
	tree.Add([]int32{names.ID("wide")}, 3)
	require.Equal(t, 1+1+5000+len(deep), tree.Nodes())
	require.Equal(t, int64(5005), tree.Total())
	got := rows(t, tree.Frame(0, ""))
	require.Len(t, got, tree.Nodes())
	require.Equal(t, row{1, 5003, 3, "wide"}, got[1])
	require.Equal(t, row{int64(len(deep)), 2, 2, "deep"}, got[len(got)-1])
}

func TestTreeAddAfterFrame(t *testing.T) {
	names := NewNames(0)
	tree := NewTree(names)
	tree.Add(ids(names, "a;b"), 1)
	require.Equal(t, 3, tree.Nodes())
	require.Len(t, rows(t, tree.Frame(0, "")), 3)
	tree.Add(ids(names, "a;c"), 5)
	tree.Add(ids(names, "d"), 1)
	require.Equal(t, 5, tree.Nodes())
	want := []row{{0, 7, 0, "total"}, {1, 6, 0, "a"}, {2, 5, 5, "c"}, {2, 1, 1, "b"}, {1, 1, 1, "d"}}
	require.Equal(t, want, rows(t, tree.Frame(0, "")))
}
