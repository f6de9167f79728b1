package query

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
)

// TestEachPathDenseMatchesFrameIDs checks that paths built from the dense
// numbering equal those nameIDs.path builds by looking up every frame id
// (the diff's way): frames with one label, with inline levels, and frames
// that are not stored.
func TestEachPathDenseMatchesFrameIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fn := &frameNames{labels: map[uint64]string{}, levels: map[uint64][]string{}}
	for id := uint64(1); id <= 300; id++ {
		switch {
		case id%17 == 0: // not stored: "unknown"
		case id%11 == 0:
			fn.labels[id] = "outer"
			fn.levels[id] = []string{"outer", "inlined-" + string(rune('a'+id%7))}
		default:
			fn.labels[id] = "fn-" + string(rune('a'+id%26)) + string(rune('a'+id/26%26))
		}
	}
	stacks := make([]stackValue, 500)
	for i := range stacks {
		frames := make([]uint64, rng.IntN(40)) // some empty
		for j := range frames {
			frames[j] = 1 + rng.Uint64N(300)
		}
		stacks[i] = stackValue{id: uint64(i), value: int64(1 + rng.IntN(100)), frames: frames}
	}
	fn.dense = denseFramesOf(stacks)

	names := flame.NewNames(0)
	labelsOf := func(path []int32) []string {
		labels := make([]string, len(path))
		for i, id := range path {
			labels[i] = names.Label(id)
		}
		return labels
	}
	var densePaths [][]string
	var denseValues []int64
	eachPath(stacks, fn, names, pathShape{}, func(path []int32, value int64) {
		densePaths, denseValues = append(densePaths, labelsOf(path)), append(denseValues, value)
	})
	ids := newNameIDs(len(fn.labels))
	ids.add(fn, names)
	require.Len(t, densePaths, len(stacks))
	for i, s := range stacks {
		require.Equal(t, labelsOf(ids.path(nil, s.frames, names)), densePaths[i], "stack %d", i)
		require.Equal(t, s.value, denseValues[i], "stack %d", i)
	}
	// Labels that came another way (the exporter's table): numbered here.
	plain := *fn
	plain.dense = nil
	i := 0
	eachPath(stacks, &plain, names, pathShape{}, func(path []int32, _ int64) {
		require.Equal(t, densePaths[i], labelsOf(path), "stack %d", i)
		i++
	})
	require.Equal(t, len(stacks), i)
	// Both special cases occur in the paths compared.
	seen := map[string]bool{}
	for _, p := range densePaths {
		for _, l := range p {
			seen[l] = true
		}
	}
	require.True(t, seen["unknown"], "a frame that is not stored")
	require.True(t, seen["inlined-a"] || seen["inlined-b"] || seen["inlined-c"], "a frame with inline levels")
}
