package convert

import (
	"sync"
	"unsafe"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// arrayPool keeps arrays of one element type between conversions: a
// stream of similar requests (a node report every few seconds from each
// profiler) then resolves its dictionaries into the same memory instead
// of allocating it per request. Pooled arrays are zero over their whole
// capacity; arrays larger than maxPooledArray bytes are left to the
// garbage collector.
type arrayPool[T any] struct{ pool sync.Pool }

// maxPooledArray bounds the arrays kept, as maxPooledPayload bounds the
// decoders: a rare huge request does not pin its memory.
const maxPooledArray = 16 << 20

// get returns a zeroed array of length n (append to it from [:0], or
// index it). An array from the pool is used when it is large enough; a
// smaller one is dropped, so the pool follows the requests' size, and a
// new one has an eighth more room, as requests of a stream vary a little.
func (a *arrayPool[T]) get(n int) []T {
	if p, _ := a.pool.Get().(*[]T); p != nil && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]T, n, n+n/8) // room for the next, slightly larger request
}

// put clears an array and keeps it for a later get. Nothing may refer to
// it any more.
func (a *arrayPool[T]) put(s []T) {
	s = s[:cap(s)]
	var zero T
	if cap(s) == 0 || uintptr(cap(s))*unsafe.Sizeof(zero) > maxPooledArray {
		return
	}
	clear(s)
	a.pool.Put(&s)
}

// The converter's largest arrays. frames and stackIDs are pointed into by
// the batch's symbols, so they come back once the writer copied the
// symbols it writes (Batch.ReleaseSymbols) or through Result.Release; locs
// and stacks are the converter's own and come back when it is done.
var (
	framesPool   arrayPool[model.Frame]
	stackIDsPool arrayPool[uint64]
	locsPool     arrayPool[locEntry]
	stacksPool   arrayPool[stackEntry]
)

// symbolArrays are the arrays a batch's symbols point into.
type symbolArrays struct {
	frames   []model.Frame
	stackIDs []uint64
}

// put gives the arrays back (once: a second call does nothing); nothing
// may point into them any more.
func (a *symbolArrays) put() {
	framesPool.put(a.frames)
	stackIDsPool.put(a.stackIDs)
	a.frames, a.stackIDs = nil, nil
}

// Release gives the arrays that the batch's stacks and frames point into
// back for later conversions, if the writer has not done so already
// (Batch.ReleaseSymbols), and drops the batch's symbols. Call it only once
// nothing reads the batch's symbols any more: after the writer's Write
// returned nil, or when the batch is not written. A result that is not
// released is freed by the garbage collector, as any other.
func (r *Result) Release() {
	if release := r.Batch.ReleaseSymbols; release != nil {
		release()
	}
	r.Batch.Symbols, r.Batch.ReleaseSymbols = nil, nil
}

// release gives the converter's own arrays back; the batch does not refer
// to them.
func (c *converter) release() {
	locsPool.put(c.locs)
	stacksPool.put(c.stacks)
	c.locs, c.stacks = nil, nil
}
