package flame

import (
	"math"
	"slices"
	"sort"
)

// foldAll is the threshold above every total: the root keeps one "other"
// child holding all of its children.
const foldAll = math.MaxInt64

// candidate is a node that may be kept, with what decides its rows: its own
// total, and its smallest child's total (an "other" row appears under it as
// soon as that child is folded; math.MaxInt64 when it has no children).
type candidate struct {
	total    int64
	minChild int64
}

// rowsAt is the number of rows the node contributes if kept under cut.
func (c candidate) rowsAt(cut int64) int {
	if c.minChild < cut {
		return 2
	}
	return 1
}

// threshold returns the smallest total a node needs to be kept so that the
// frame has at most limit rows, "other" rows included; or foldAll when no
// threshold does. It expects more than limit nodes and limit >= 2.
//
// Rows at a threshold are the root, each kept node, and one "other" row per
// kept node with a folded child. Raising the threshold never adds rows (a
// node that stops being kept removes its own row and adds at most its
// parent's "other" row), so a binary search finds the smallest fitting one.
// Any threshold at or below Pyroscope's (the smallest of the limit largest
// totals) keeps limit nodes plus the root, so the search runs over the
// distinct totals among those limit largest, above which only the nodes
// collected by candidatesFrom can be kept.
func threshold(totals []int64, kids childLists, limit int) int64 {
	largest := largestTotals(totals[1:], limit)
	floor := largest[0]
	root := candidate{total: totals[rootNode], minChild: smallestChild(totals, kids, rootNode)}
	candidates := candidatesFrom(floor, totals, kids)
	cuts := append(distinctAscending(largest), foldAll)
	fits := func(i int) bool { return rowsAt(cuts[i], root, candidates) <= limit }
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

// candidatesFrom returns the non-root nodes whose total is at least floor.
func candidatesFrom(floor int64, totals []int64, kids childLists) []candidate {
	var candidates []candidate
	for node := 1; node < len(totals); node++ {
		if totals[node] >= floor {
			minChild := smallestChild(totals, kids, int32(node)) //nolint:gosec // node ids are int32
			candidates = append(candidates, candidate{total: totals[node], minChild: minChild})
		}
	}
	return candidates
}

func smallestChild(totals []int64, kids childLists, node int32) int64 {
	smallest := int64(math.MaxInt64)
	for _, child := range kids.of(node) {
		smallest = min(smallest, totals[child])
	}
	return smallest
}

// largestTotals returns the k largest values as a min-heap (the smallest
// first). It expects len(values) >= k > 0.
func largestTotals(values []int64, k int) []int64 {
	heap := slices.Clone(values[:k])
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(heap, i)
	}
	for _, v := range values[k:] {
		if v > heap[0] {
			heap[0] = v
			siftDown(heap, 0)
		}
	}
	return heap
}

// siftDown restores the min-heap property below i.
func siftDown(heap []int64, i int) {
	for {
		smallest := i
		for _, child := range [2]int{2*i + 1, 2*i + 2} {
			if child < len(heap) && heap[child] < heap[smallest] {
				smallest = child
			}
		}
		if smallest == i {
			return
		}
		heap[i], heap[smallest] = heap[smallest], heap[i]
		i = smallest
	}
}

// distinctAscending sorts values in place and drops repeats.
func distinctAscending(values []int64) []int64 {
	slices.Sort(values)
	return slices.Compact(values)
}
