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
// answer's stacks: label paths from frame ids, the tree, the frame. plain
// has frames without types (a Go service's own profiles); the ebpf cases
// type a tenth of the frames kernel and a tenth cpython, the rest native,
// so that most stacks mix interpreted and native frames: marks only, and
// with kernel frames hidden or collapsed.
func BenchmarkStacksFrame(b *testing.B) {
	stacks, plain := benchStacks()
	typed := *plain
	for id := range plain.labels {
		switch id % 10 {
		case 0:
			typed.setKind(id, kindKernel)
		case 1:
			typed.setKind(id, kindInterpreted)
		default:
			typed.setKind(id, kindNative)
		}
	}
	for _, c := range []struct {
		name           string
		fn             *frameNames
		hide, collapse FrameKinds
	}{
		{"plain", plain, 0, 0},
		{"ebpf-marks", &typed, 0, 0},
		{"ebpf-hide-kernel", &typed, 1 << kindKernel, 0},
		{"ebpf-collapse-native", &typed, 0, 1 << kindNative},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := &Request{Type: TypeProfile, MaxNodes: 16384, ProfileType: ProfileType{SampleUnit: "nanoseconds"}, HideFrames: c.hide, CollapseFrames: c.collapse}
			for b.Loop() {
				stacksFrame(r, stacks, c.fn)
			}
		})
	}
}
