package flame

// Tree is a call tree merged by label: the children of a node are unique by
// label.
//
// The tree is never stored node by node. Add appends the stack to a flat
// buffer; the first query sorts the stacks lexicographically by label id
// and notes how many leading labels each shares with the one before it.
// In that order the stacks through a node are adjacent, so replaying them
// (closing the previous stack's nodes below the shared prefix, opening the
// new stack's) is a depth-first traversal of the merged tree: no hash
// lookups, and memory for the stacks plus the open path only. Rendering
// replays the stacks once to rank node totals and once more to collect the
// nodes it keeps. Adding after a query re-sorts on the next one.
type Tree struct {
	names *Names
	total int64

	// The stacks as added. Their labels are stored in chunks, so that
	// growing never copies them; a stack never spans two chunks.
	chunks [][]int32
	stacks []stackRef
	values []int64

	// Valid while sorted: the stacks in lexicographic order, the number of
	// leading labels each shares with the one before it, and the number of
	// nodes they make.
	sorted bool
	order  []int32
	shared []int
	nodes  int
}

// stackRef locates a stack's labels: chunks[chunk][start:end].
type stackRef struct {
	chunk, start, end int32
}

// Chunk sizes, in labels: they double from the first to the largest, so
// that small trees stay small and large ones do not allocate too often.
const (
	firstChunk   = 1 << 10
	largestChunk = 1 << 16
)

// NewTree returns an empty tree. Labels of the stacks added to it must be
// ids from names.
func NewTree(names *Names) *Tree {
	return &Tree{names: names}
}

// Add adds a stack (labels root first) with its value; empty stacks add to
// the root's self.
func (t *Tree) Add(stack []int32, value int64) {
	t.total += value
	chunk := t.chunkFor(len(stack))
	start := len(t.chunks[chunk])
	t.chunks[chunk] = append(t.chunks[chunk], stack...)
	ref := stackRef{chunk: index32(chunk), start: index32(start), end: index32(start + len(stack))}
	t.stacks = appendDoubling(t.stacks, ref)
	t.values = appendDoubling(t.values, value)
	t.sorted = false
}

// chunkFor returns the chunk that takes a stack of n labels, starting one
// if the last is full.
func (t *Tree) chunkFor(n int) int {
	last := len(t.chunks) - 1
	if last >= 0 && len(t.chunks[last])+n <= cap(t.chunks[last]) {
		return last
	}
	size := firstChunk
	if last >= 0 {
		size = min(2*cap(t.chunks[last]), largestChunk)
	}
	t.chunks = append(t.chunks, make([]int32, 0, max(size, n)))
	return last + 1
}

// Total is the root's value (sum of all values added).
func (t *Tree) Total() int64 {
	return t.total
}

// Nodes is the number of nodes, root included.
func (t *Tree) Nodes() int {
	t.sort()
	return t.nodes
}

func (t *Tree) stack(i int32) []int32 {
	ref := t.stacks[i]
	return t.chunks[ref.chunk][ref.start:ref.end]
}

// sort orders the stacks for replay unless that is done already.
func (t *Tree) sort() {
	if t.sorted {
		return
	}
	t.order = t.sortedStacks()
	t.shared = t.sharedPrefixes(t.order)
	t.nodes = 1
	for i, s := range t.order {
		t.nodes += len(t.stack(s)) - t.shared[i]
	}
	t.sorted = true
}

// step is stack i of the sorted order as a replay sees it. The nodes of
// its first shared labels are open already (the previous stack went
// through them). The nodes of the open labels are opened and stay open: the
// next stack goes through them too. The tail is the chain of nodes only
// this stack goes through: each has one child but the last, and all have
// the stack's value as total, so a replay handles the chain at once.
type step struct {
	shared int
	open   []int32
	tail   []int32
	value  int64
	// stack is the stack's index in the order added.
	stack int32
}

func (t *Tree) step(i int) step {
	stack := t.stack(t.order[i])
	kept := t.shared[i]
	if i+1 < len(t.order) {
		kept = max(kept, t.shared[i+1])
	}
	return step{
		shared: t.shared[i],
		open:   stack[t.shared[i]:kept],
		tail:   stack[kept:],
		value:  t.values[t.order[i]],
		stack:  t.order[i],
	}
}
