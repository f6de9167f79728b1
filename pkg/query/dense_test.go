package query

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
)

// TestEachPathDenseMatchesFrameIDs checks that paths built from the dense
// numbering equal those built by looking up every frame id: frames with
// one label, with inline levels, and frames that are not stored.
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
	require.True(t, fn.dense.of(stacks))
	require.False(t, fn.dense.of(stacks[1:]), "other stacks than those numbered")

	collect := func(fn *frameNames) ([][]string, []int64) {
		names := flame.NewNames()
		var paths [][]string
		var values []int64
		eachPath(stacks, fn, names, func(path []int32, value int64) {
			labels := make([]string, len(path))
			for i, id := range path {
				labels[i] = names.Label(id)
			}
			paths, values = append(paths, labels), append(values, value)
		})
		return paths, values
	}
	densePaths, denseValues := collect(fn)
	plain := *fn
	plain.dense = nil
	idPaths, idValues := collect(&plain)
	require.Equal(t, idPaths, densePaths)
	require.Equal(t, idValues, denseValues)
	require.Len(t, densePaths, len(stacks))
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
