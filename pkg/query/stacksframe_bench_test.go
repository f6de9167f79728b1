package query

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchStacks is an answer's stacks as the engine hands them to the flame
// graph: 50k stacks of depth 10-50 over 8k frames of skewed popularity
// (the shape of pkg/query/flame's BenchmarkTree), with their labels.
func benchStacks() ([]stackValue, *frameNames) {
	r := rand.New(rand.NewPCG(42, 42^0x5eed))
	popularity := rand.NewZipf(r, 1.2, 1, 8000-1)
	weight := rand.NewZipf(r, 1.5, 1, 10000)
	fn := &frameNames{labels: map[uint64]string{}}
	for id := uint64(1); id <= 8000; id++ {
		fn.labels[id] = fmt.Sprintf("pkg.fn%04d", id)
	}
	stacks := make([]stackValue, 50000)
	for i := range stacks {
		frames := make([]uint64, 10+r.IntN(41))
		for j := range frames {
			frames[j] = 1 + popularity.Uint64()
		}
		stacks[i] = stackValue{id: uint64(i), value: 1 + int64(weight.Uint64()), frames: frames}
	}
	fn.dense = denseFramesOf(stacks)
	return stacks, fn
}

// BenchmarkStacksFrame builds a flame graph frame (16384 nodes) from the
// answer's stacks: label paths from frame ids, the tree, the frame.
func BenchmarkStacksFrame(b *testing.B) {
	stacks, fn := benchStacks()
	r := &Request{Type: TypeProfile, MaxNodes: 16384, ProfileType: ProfileType{SampleUnit: "nanoseconds"}}
	for b.Loop() {
		stacksFrame(r, stacks, fn)
	}
}
