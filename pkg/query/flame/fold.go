package flame

import "math"

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
// with it. With a focus path, the nodes along it are shown whatever their
// totals, and the nodes below its last node reach subCut instead of cut.
type folder struct {
	cut   int64
	open  []shownNode // the root and the nodes of the current stack
	shown []shownNode

	// focus is the label path from the root's children down (nil: none);
	// matched is how many of the open path's leading labels equal it.
	focus   []int32
	subCut  int64
	matched int
}

// shownNodes returns the nodes shown under cut, in post-order: the root
// last. expected sizes the result (nodes folded later may exceed it).
func (t *Tree) shownNodes(cut int64, expected int) []shownNode {
	f := folder{cut: cut, shown: make([]shownNode, 0, expected)}
	f.replay(t)
	return f.shown
}

// shownFocused is shownNodes with a focus path (see folder).
func (t *Tree) shownFocused(cut, subCut int64, focus []int32, expected int) []shownNode {
	f := folder{cut: cut, subCut: subCut, focus: focus, shown: make([]shownNode, 0, expected)}
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
			if f.focus != nil {
				f.matched = f.match(len(f.open)-1, label, f.matched)
			}
		}
		if f.focus != nil {
			f.addTailFocused(step.tail, step.value)
		} else {
			f.addTail(step.tail, step.value)
		}
	}
	f.closeTo(0)
	f.shown = append(f.shown, f.open[0])
}

// match is the matched count once a node of a label opens at depth (the
// root's children are at 1), matched counting its ancestors.
func (f *folder) match(depth int, label int32, matched int) int {
	if matched == depth-1 && depth-1 < len(f.focus) && f.focus[depth-1] == label {
		return depth
	}
	return matched
}

// cutAt is the total a node at depth needs to be shown when matched of
// its path's leading labels (its own included) equal the focus.
func (f *folder) cutAt(depth, matched int) int64 {
	switch {
	case depth <= matched:
		return math.MinInt64 // on the focus path
	case matched == len(f.focus):
		return f.subCut // below the focus path's last node
	}
	return f.cut
}

// addTailFocused is addTail with a focus path: the chain is shown down to
// its first node below its cut (cutAt), which is folded with the rest.
func (f *folder) addTailFocused(tail []int32, value int64) {
	parent := len(f.open) - 1
	f.open[parent].total += value
	kept, matched := 0, f.matched
	for i, label := range tail {
		depth := parent + 1 + i
		matched = f.match(depth, label, matched)
		if value < f.cutAt(depth, matched) {
			break
		}
		kept++
	}
	if kept == 0 {
		if len(tail) > 0 {
			f.open[parent].folded += value
			f.open[parent].anyFolded = true
		}
		return
	}
	start := f.next()
	for i := kept - 1; i >= 0; i-- {
		n := shownNode{label: tail[i], start: start, total: value}
		if i == kept-1 && kept < len(tail) {
			n.folded, n.anyFolded = value, true
		}
		f.shown = append(f.shown, n)
	}
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
		d := len(f.open) - 1
		node := f.open[d]
		f.open = f.open[:d]
		parent := &f.open[d-1]
		parent.total += node.total
		cut := f.cut
		if f.focus != nil {
			cut = f.cutAt(d, f.matched)
			f.matched = min(f.matched, d-1)
		}
		if node.total >= cut {
			f.shown = append(f.shown, node)
			continue
		}
		f.shown = f.shown[:node.start]
		parent.folded += node.total
		parent.anyFolded = true
	}
}
