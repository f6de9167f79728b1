package flame

// shownNode is a node of a rendered tree. The shown nodes are collected in
// post-order, so a node's subtree is the run of nodes from start up to the
// node itself, and its last child comes right before it.
type shownNode struct {
	label     int32
	start     int32
	total     int64
	folded    int64 // the sum of the folded children's totals
	anyFolded bool
}

// folder replays the stacks to collect the nodes shown under cut: the root,
// and the nodes whose total reaches cut under a shown parent. A node below
// cut is folded into its parent's "other" child and takes its descendants
// with it.
type folder struct {
	cut   int64
	open  []shownNode // the root and the nodes of the current stack
	shown []shownNode
}

// shownNodes returns the nodes shown under cut, in post-order: the root
// last. expected sizes the result (nodes folded later may exceed it).
func (t *Tree) shownNodes(cut int64, expected int) []shownNode {
	f := folder{cut: cut, shown: make([]shownNode, 0, expected)}
	f.replay(t)
	return f.shown
}

func (f *folder) replay(t *Tree) {
	t.sort()
	f.open = append(f.open[:0], shownNode{label: -1})
	for i := range t.order {
		step := t.step(i)
		f.closeTo(step.shared)
		for _, label := range step.open {
			f.open = append(f.open, shownNode{label: label, start: f.next()})
		}
		f.addTail(step.tail, step.value)
	}
	f.closeTo(0)
	f.shown = append(f.shown, f.open[0])
}

// next is the position of the next shown node.
func (f *folder) next() int32 {
	return index32(len(f.shown))
}

// addTail adds a chain of nodes of total value under the deepest open node
// (an empty chain adds value to that node's self): shown whole if value
// reaches the cut, else folded at once.
func (f *folder) addTail(tail []int32, value int64) {
	parent := &f.open[len(f.open)-1]
	parent.total += value
	switch {
	case len(tail) == 0:
	case value >= f.cut:
		start := f.next()
		for i := len(tail) - 1; i >= 0; i-- {
			f.shown = append(f.shown, shownNode{label: tail[i], start: start, total: value})
		}
	default:
		parent.folded += value
		parent.anyFolded = true
	}
}

// closeTo closes the open nodes deeper than depth (the root is at 0),
// keeping or folding each.
func (f *folder) closeTo(depth int) {
	for len(f.open) > depth+1 {
		node := f.open[len(f.open)-1]
		f.open = f.open[:len(f.open)-1]
		parent := &f.open[len(f.open)-1]
		parent.total += node.total
		if node.total >= f.cut {
			f.shown = append(f.shown, node)
			continue
		}
		f.shown = f.shown[:node.start]
		parent.folded += node.total
		parent.anyFolded = true
	}
}
