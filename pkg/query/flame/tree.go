package flame

// rootNode is the id of a tree's root. Node ids are dense and every node is
// created after its parent, so a parent's id is always below its children's.
const rootNode int32 = 0

// Tree is a call tree merged by label: the children of a node are unique by
// label. Nodes live in parallel slices indexed by node id; a hash index maps
// (parent, label) to the child's id. Only self values are kept per node:
// totals are summed bottom-up when the tree is rendered.
type Tree struct {
	names  *Names
	label  []int32
	parent []int32
	self   []int64
	total  int64
	kids   childIndex

	// The previous stack and the nodes of its path: consecutive stacks
	// usually share a prefix (always when the input is sorted), which is
	// then walked without hash lookups.
	prevStack []int32
	prevPath  []int32
}

// NewTree returns a tree holding only its root. Labels of the stacks added
// to it must be ids from names.
func NewTree(names *Names) *Tree {
	return &Tree{
		names:  names,
		label:  []int32{-1},
		parent: []int32{-1},
		self:   []int64{0},
	}
}

// Add adds a stack (labels root first) with its value; empty stacks add to
// the root's self.
func (t *Tree) Add(stack []int32, value int64) {
	t.total += value
	shared := t.sharedPrefix(stack)
	t.prevPath = t.prevPath[:shared]
	node := rootNode
	if shared > 0 {
		node = t.prevPath[shared-1]
	}
	for _, label := range stack[shared:] {
		node = t.child(node, label)
		t.prevPath = append(t.prevPath, node)
	}
	t.prevStack = append(t.prevStack[:0], stack...)
	t.self[node] += value
}

// Total is the root's value (sum of all values added).
func (t *Tree) Total() int64 {
	return t.total
}

// Nodes is the number of nodes, root included.
func (t *Tree) Nodes() int {
	return len(t.label)
}

// sharedPrefix is the number of leading labels stack shares with the
// previous stack.
func (t *Tree) sharedPrefix(stack []int32) int {
	limit := min(len(stack), len(t.prevStack))
	for i := range limit {
		if stack[i] != t.prevStack[i] {
			return i
		}
	}
	return limit
}

// child returns the child of parent with label, creating it if needed.
func (t *Tree) child(parent, label int32) int32 {
	next := int32(len(t.label)) //nolint:gosec // 2^31 nodes do not fit in memory
	node := t.kids.findOrInsert(parent, label, next)
	if node == next {
		t.label = append(t.label, label)
		t.parent = append(t.parent, parent)
		t.self = append(t.self, 0)
	}
	return node
}

// subtreeTotals returns each node's total: its self plus its descendants'.
// Children have higher ids than their parents, so one backward pass does.
func (t *Tree) subtreeTotals() []int64 {
	totals := make([]int64, len(t.self))
	copy(totals, t.self)
	for node := len(totals) - 1; node > 0; node-- {
		totals[t.parent[node]] += totals[node]
	}
	return totals
}

// childLists groups node ids by parent (compressed sparse rows): the
// children of p are ids[offsets[p]:offsets[p+1]], in creation order.
type childLists struct {
	offsets []int32
	ids     []int32
}

func (t *Tree) childLists() childLists {
	n := len(t.parent)
	// Count children at offsets[p+2], sum prefixes so that offsets[p+1] is
	// where p's children start, then fill advancing offsets[p+1] to the end.
	offsets := make([]int32, n+2)
	for node := 1; node < n; node++ {
		offsets[t.parent[node]+2]++
	}
	for i := 2; i < len(offsets); i++ {
		offsets[i] += offsets[i-1]
	}
	ids := make([]int32, max(n-1, 0))
	for node := 1; node < n; node++ {
		slot := &offsets[t.parent[node]+1]
		ids[*slot] = int32(node) //nolint:gosec // node < len(t.parent), whose ids are int32
		*slot++
	}
	return childLists{offsets: offsets[:n+1], ids: ids}
}

func (c childLists) of(node int32) []int32 {
	return c.ids[c.offsets[node]:c.offsets[node+1]]
}
