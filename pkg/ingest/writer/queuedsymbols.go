package writer

import (
	"sync"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// queuedSymbols holds one copy of each stack and frame that queued
// requests are to write and that is not yet known written. Requests in
// flight together often carry the same dictionary (a host's libraries, a
// service's hot stacks in every report), and until the first of them
// commits each would otherwise keep a copy of its own: with an empty
// cache (a new writer, a new day) the requests in flight held their whole
// dictionaries each, half of the ingest's live heap in a burst. An entry
// counts the requests that hold it and goes when the last is answered.
type queuedSymbols struct {
	mu     sync.Mutex
	frames map[uint64]*queuedFrame
	stacks map[uint64]*queuedStack
}

type queuedFrame struct {
	frame *model.Frame
	refs  int
}

type queuedStack struct {
	frameIDs []uint64
	refs     int
}

// heldSymbols are the cache keys of the queued stacks and frames one
// request holds.
type heldSymbols struct{ stacks, frames []uint64 }

func newQueuedSymbols() *queuedSymbols {
	return &queuedSymbols{frames: map[uint64]*queuedFrame{}, stacks: map[uint64]*queuedStack{}}
}

// holdStacks returns the stacks of one service that are not known
// written (known[i] false), with shared frame ids: each stack's ids are
// those of the queued copy when a queued request holds one, else a copy
// made here (one array for the batch). keys are the stacks' cache keys;
// held gains those of the stacks returned.
func (q *queuedSymbols) holdStacks(stacks []model.Stack, keys []uint64, known []bool, held *heldSymbols) []model.Stack {
	out := make([]model.Stack, 0, len(stacks)-countTrue(known))
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for i, st := range stacks {
		if !known[i] && q.stacks[keys[i]] == nil {
			n += len(st.FrameIDs)
		}
	}
	fresh := make([]uint64, 0, n) // the new stacks' ids, copied once
	for i, st := range stacks {
		if known[i] {
			continue
		}
		e := q.stacks[keys[i]]
		if e == nil {
			start := len(fresh)
			fresh = append(fresh, st.FrameIDs...)
			e = &queuedStack{frameIDs: fresh[start:len(fresh):len(fresh)]}
			q.stacks[keys[i]] = e
		}
		e.refs++
		out = append(out, model.Stack{ID: st.ID, FrameIDs: e.frameIDs})
		held.stacks = append(held.stacks, keys[i])
	}
	return out
}

// holdFrames is holdStacks for frames: the queued copy of each frame not
// known written, or a copy made here.
func (q *queuedSymbols) holdFrames(frames []*model.Frame, keys []uint64, known []bool, held *heldSymbols) []*model.Frame {
	out := make([]*model.Frame, 0, len(frames)-countTrue(known))
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for i := range frames {
		if !known[i] && q.frames[keys[i]] == nil {
			n++
		}
	}
	// The new frames, copied into one array that never grows: the queued
	// entries point into it.
	fresh := make([]model.Frame, 0, n)
	for i, f := range frames {
		if known[i] {
			continue
		}
		e := q.frames[keys[i]]
		if e == nil {
			fresh = append(fresh, *f)
			e = &queuedFrame{frame: &fresh[len(fresh)-1]}
			q.frames[keys[i]] = e
		}
		e.refs++
		out = append(out, e.frame)
		held.frames = append(held.frames, keys[i])
	}
	return out
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// release drops a request's holds; entries no request holds go.
func (q *queuedSymbols) release(held heldSymbols) {
	if len(held.stacks) == 0 && len(held.frames) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range held.stacks {
		if e := q.stacks[k]; e != nil {
			if e.refs--; e.refs <= 0 {
				delete(q.stacks, k)
			}
		}
	}
	for _, k := range held.frames {
		if e := q.frames[k]; e != nil {
			if e.refs--; e.refs <= 0 {
				delete(q.frames, k)
			}
		}
	}
	// A map keeps the room it grew to; once a burst is over and nothing
	// is held, new maps give that room back.
	if len(q.stacks) == 0 && len(q.frames) == 0 {
		q.stacks, q.frames = map[uint64]*queuedStack{}, map[uint64]*queuedFrame{}
	}
}

// size is the number of queued stacks and frames.
func (q *queuedSymbols) size() (stacks, frames int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.stacks), len(q.frames)
}
