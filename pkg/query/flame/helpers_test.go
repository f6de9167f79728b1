package flame

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
)

// sample is a stack written "a;b;c" (root first) with its value.
type sample struct {
	stack string
	value int64
}

// ids interns a stack written "a;b;c"; "" is the empty stack.
func ids(names *Names, stack string) []int32 {
	if stack == "" {
		return nil
	}
	labels := strings.Split(stack, ";")
	out := make([]int32, len(labels))
	for i, label := range labels {
		out[i] = names.ID(label)
	}
	return out
}

func buildTree(samples []sample) *Tree {
	names := NewNames(0)
	tree := NewTree(names)
	for _, s := range samples {
		tree.Add(ids(names, s.stack), s.value)
	}
	return tree
}

// row is one rendered flame graph row with its label resolved.
type row struct {
	Level int64
	Value int64
	Self  int64
	Label string
}

func (r row) String() string {
	return fmt.Sprintf("%d %d %d %s", r.Level, r.Value, r.Self, r.Label)
}

// rows reads a flame graph frame back, resolving enum labels.
func rows(t *testing.T, frame *data.Frame) []row {
	t.Helper()
	require.Len(t, frame.Fields, 4)
	texts := frame.Fields[3].Config.TypeConfig.Enum.Text
	out := make([]row, frame.Rows())
	for i := range out {
		label, ok := frame.Fields[3].At(i).(data.EnumItemIndex)
		require.True(t, ok)
		require.Less(t, int(label), len(texts))
		out[i] = row{
			Level: frame.Fields[0].At(i).(int64),
			Value: frame.Fields[1].At(i).(int64),
			Self:  frame.Fields[2].At(i).(int64),
			Label: texts[label],
		}
	}
	return out
}

// stackSet is a set of random stacks over interned labels.
type stackSet struct {
	names  *Names
	stacks [][]int32
	values []int64
}

// randomStacks draws count stacks of depth minDepth..maxDepth whose frames
// come from a pool of labels with Zipf-skewed popularity (a few hot
// labels, a long tail), with skewed values too.
func randomStacks(seed uint64, count, labels, minDepth, maxDepth int) stackSet {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	popularity := rand.NewZipf(r, 1.2, 1, uint64(labels-1))
	weight := rand.NewZipf(r, 1.5, 1, 10000)
	set := stackSet{names: NewNames(0)}
	pool := make([]int32, labels)
	for i := range pool {
		pool[i] = set.names.ID(fmt.Sprintf("pkg.fn%04d", i))
	}
	for range count {
		stack := make([]int32, minDepth+r.IntN(maxDepth-minDepth+1))
		for i := range stack {
			stack[i] = pool[popularity.Uint64()]
		}
		set.stacks = append(set.stacks, stack)
		set.values = append(set.values, 1+int64(weight.Uint64()))
	}
	return set
}

func (s stackSet) tree() *Tree {
	tree := NewTree(s.names)
	for i, stack := range s.stacks {
		tree.Add(stack, s.values[i])
	}
	return tree
}

func (s stackSet) functions() *Functions {
	fns := NewFunctions(s.names)
	for i, stack := range s.stacks {
		fns.Add(stack, s.values[i])
	}
	return fns
}
