package writer

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

func TestQueuedSymbolsAreSharedUntilTheLastHolderIsAnswered(t *testing.T) {
	q := newQueuedSymbols()
	frame := func(id uint64) *model.Frame { return &model.Frame{ID: id, FunctionName: "f"} }
	// Two requests in flight carry frames 1 and 2, and 2 and 3; stacks 10
	// and 11, and 11.
	var first, second heldSymbols
	in1 := []*model.Frame{frame(1), frame(2)}
	f1 := q.holdFrames(in1, []uint64{1, 2}, []bool{false, false}, &first)
	s1 := q.holdStacks([]model.Stack{{ID: 10, FrameIDs: []uint64{1}}, {ID: 11, FrameIDs: []uint64{1, 2}}}, []uint64{10, 11}, []bool{false, false}, &first)
	// The second also carries frame 4 and stack 12, known written: dropped.
	in2 := []*model.Frame{frame(2), frame(4), frame(3)}
	f2 := q.holdFrames(in2, []uint64{2, 4, 3}, []bool{false, true, false}, &second)
	s2 := q.holdStacks([]model.Stack{{ID: 12, FrameIDs: []uint64{4}}, {ID: 11, FrameIDs: []uint64{1, 2}}}, []uint64{12, 11}, []bool{true, false}, &second)

	require.NotSame(t, in1[0], f1[0], "a new frame is copied out of the caller's memory")
	require.Equal(t, *in1[0], *f1[0])
	require.Same(t, f1[1], f2[0], "frame 2 is held once")
	require.NotSame(t, f1[1], in2[0])
	require.Len(t, f2, 2, "a frame known written is dropped")
	require.Equal(t, uint64(3), f2[1].ID)
	require.Len(t, s2, 1, "a stack known written is dropped")
	require.Equal(t, []uint64{1, 2}, s2[0].FrameIDs)
	require.Same(t, &s1[1].FrameIDs[0], &s2[0].FrameIDs[0], "stack 11's ids are held once")
	stacks, frames := q.size()
	require.Equal(t, [2]int{2, 3}, [2]int{stacks, frames})

	q.release(first)
	stacks, frames = q.size()
	require.Equal(t, [2]int{1, 2}, [2]int{stacks, frames}, "what the second request holds stays")
	var third heldSymbols
	f3 := q.holdFrames([]*model.Frame{frame(2)}, []uint64{2}, []bool{false}, &third)
	require.Same(t, f2[0], f3[0])

	q.release(second)
	q.release(third)
	stacks, frames = q.size()
	require.Zero(t, stacks+frames, "nothing is kept once every holder is answered")
	q.release(second) // a second release of the same holds changes nothing
	stacks, frames = q.size()
	require.Zero(t, stacks+frames)
}
