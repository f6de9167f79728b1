package flame

import (
	"math"
	"slices"
	"sort"
)

// foldAll is the threshold above every total: the root keeps one "other"
// child holding all of its children.
const foldAll = math.MaxInt64

// candidate stands for count nodes that may be kept, with what decides
// their rows: their total, and their smallest child's total (an "other" row
// appears under a node as soon as that child is folded; math.MaxInt64 when
// it has no children). A chain of nodes with one child each and the same
// total is one candidate.
type candidate struct {
	total    int64
	minChild int64
	count    int
}

// rowsAt is the number of rows the nodes contribute if kept under cut.
func (c candidate) rowsAt(cut int64) int {
	if c.minChild < cut {
		return 2 * c.count
	}
	return c.count
}

// threshold returns the smallest total a node needs to be kept so that the
// frame has at most limit rows, "other" rows included; or foldAll when no
// threshold does. It expects more than limit nodes and limit >= 2.
//
// Rows at a threshold are the root, each kept node, and one "other" row per
// kept node with a folded child. Raising the threshold never adds rows (a
// node that stops being kept removes its own row and adds at most its
// parent's "other" row), so a binary search finds the smallest fitting one.
// Pyroscope's threshold, the smallest total among the limit largest (the
// floor), keeps those limit nodes and the root: at least one row too many.
// So the threshold is above the floor, where the only nodes that can be
// kept are the ones in the min-heap of the limit largest totals, and the
// search runs over their distinct totals.
//
// Counting every node whose total reaches the threshold over-counts when
// negative values make a child's total exceed its parent's (a child of a
// folded node is not rendered): the bound holds all the same.
func (t *Tree) threshold(limit int) int64 {
	r := ranker{capacity: limit}
	r.replay(t)
	return r.cut(limit)
}

// cut is the smallest threshold of the ranked candidates at which the rows
// number at most limit (see Tree.threshold), or foldAll.
func (r *ranker) cut(limit int) int64 {
	floor := r.heap[0].total
	var candidates []candidate
	var cuts []int64
	for _, c := range r.heap {
		if c.total > floor {
			candidates = append(candidates, c)
			cuts = append(cuts, c.total)
		}
	}
	cuts = append(distinctAscending(cuts), foldAll)
	fits := func(i int) bool { return rowsAt(cuts[i], r.root, candidates) <= limit }
	return cuts[min(sort.Search(len(cuts), fits), len(cuts)-1)]
}

// rowsAt counts the rows of a frame truncated at cut.
func rowsAt(cut int64, root candidate, candidates []candidate) int {
	rows := root.rowsAt(cut)
	for _, c := range candidates {
		if c.total >= cut {
			rows += c.rowsAt(cut)
		}
	}
	return rows
}

// ranker replays the stacks to keep the non-root nodes of largest totals:
// a min-heap (the smallest total first) of candidates holding capacity
// nodes in all.
type ranker struct {
	open     []candidate // the root and the nodes of the current stack
	heap     []candidate
	size     int // the nodes in the heap
	capacity int
	root     candidate
}

func (r *ranker) replay(t *Tree) {
	t.sort()
	r.open = append(r.open[:0], openCandidate())
	for i := range t.order {
		step := t.step(i)
		r.closeTo(step.shared)
		for range step.open {
			r.open = append(r.open, openCandidate())
		}
		r.addTail(len(step.tail), step.value)
	}
	r.closeTo(0)
	r.root = r.open[0]
}

// openCandidate is a node without children or value yet.
func openCandidate() candidate {
	return candidate{minChild: math.MaxInt64, count: 1}
}

// closeTo closes the open nodes deeper than depth (the root is at 0): their
// totals are final, so they go to the parent and to the heap.
func (r *ranker) closeTo(depth int) {
	for len(r.open) > depth+1 {
		node := r.open[len(r.open)-1]
		r.open = r.open[:len(r.open)-1]
		parent := &r.open[len(r.open)-1]
		parent.total += node.total
		parent.minChild = min(parent.minChild, node.total)
		r.offer(node)
	}
}

// addTail adds a chain of length nodes of total value under the deepest
// open node (length 0 adds value to that node's self).
func (r *ranker) addTail(length int, value int64) {
	parent := &r.open[len(r.open)-1]
	parent.total += value
	if length == 0 {
		return
	}
	parent.minChild = min(parent.minChild, value)
	r.offer(candidate{total: value, minChild: value, count: length - 1})
	r.offer(candidate{total: value, minChild: math.MaxInt64, count: 1}) // the leaf
}

// offer keeps as many of c's nodes as rank among the largest totals
// offered so far, first filling the heap, then taking the place of nodes of
// smaller totals.
func (r *ranker) offer(c candidate) {
	if room := r.capacity - r.size; room > 0 && c.count > 0 {
		kept := c
		kept.count = min(room, c.count)
		r.push(kept)
		c.count -= kept.count
	}
	taken := 0
	for c.count > 0 && len(r.heap) > 0 && c.total > r.heap[0].total {
		n := min(c.count, r.heap[0].count)
		c.count -= n
		taken += n
		r.size -= n
		if r.heap[0].count -= n; r.heap[0].count == 0 {
			r.popMin()
		}
	}
	if taken > 0 {
		c.count = taken
		r.push(c)
	}
}

func (r *ranker) push(c candidate) {
	r.heap = append(r.heap, c)
	r.size += c.count
	siftUp(r.heap, len(r.heap)-1)
}

func (r *ranker) popMin() {
	last := len(r.heap) - 1
	r.heap[0] = r.heap[last]
	r.heap = r.heap[:last]
	if last > 0 {
		siftDown(r.heap, 0)
	}
}

// siftUp moves heap[i] up to restore the min-heap property.
func siftUp(heap []candidate, i int) {
	item := heap[i]
	for i > 0 {
		parent := (i - 1) / 2
		if heap[parent].total <= item.total {
			break
		}
		heap[i] = heap[parent]
		i = parent
	}
	heap[i] = item
}

// siftDown moves heap[i] down to restore the min-heap property.
func siftDown(heap []candidate, i int) {
	item := heap[i]
	for {
		child := 2*i + 1
		if child >= len(heap) {
			break
		}
		if right := child + 1; right < len(heap) && heap[right].total < heap[child].total {
			child = right
		}
		if heap[child].total >= item.total {
			break
		}
		heap[i] = heap[child]
		i = child
	}
	heap[i] = item
}

// distinctAscending sorts values in place and drops repeats.
func distinctAscending(values []int64) []int64 {
	slices.Sort(values)
	return slices.Compact(values)
}
