package flame

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// DiffTree is the call tree of two profiles, a left one (the baseline) and
// a right one (the comparison), merged by label: each node has a left and
// a right value. It renders Grafana's diff flame graph frame.
//
// Its stacks are stored and replayed like a Tree's; each stack carries a
// left and a right value, so a stack seen on one side only has 0 on the
// other.
type DiffTree struct {
	tree       *Tree // the stacks, with their left values
	right      []int64
	totalRight int64
}

// ChangeWeight is how much a node's change counts against its size when a
// diff flame graph is truncated (see DiffTree.Frame): a node that is new
// or gone ranks like one 1 + ChangeWeight times its size.
const ChangeWeight = 9

// keyScale turns a rank (at most 1 + ChangeWeight for non-negative values)
// into an integer key with 50 bits of precision.
const keyScale = 1 << 50

// NewDiffTree returns an empty diff tree. Labels of the stacks added to it
// must be ids from names.
func NewDiffTree(names *Names) *DiffTree {
	return &DiffTree{tree: NewTree(names)}
}

// Add adds a stack (labels root first) with its left and right values;
// empty stacks add to the root's self.
func (d *DiffTree) Add(stack []int32, left, right int64) {
	d.tree.Add(stack, left)
	d.right = appendDoubling(d.right, right)
	d.totalRight += right
}

// Totals are the root's left and right values.
func (d *DiffTree) Totals() (left, right int64) {
	return d.tree.Total(), d.totalRight
}

// Nodes is the number of nodes of the merged tree, root included.
func (d *DiffTree) Nodes() int {
	return d.tree.Nodes()
}

// key ranks a node of left and right totals for truncation: its size s,
// the larger of its shares of its side's total, times 1 + ChangeWeight·c²,
// c the change of its share relative to s (0 unchanged, 0.5 doubled or
// halved, 0.9 grown 10×, 1 new or gone). Squaring keeps the small relative
// changes of sampling noise from counting. A side without a total has a
// share of 0 everywhere.
func (d *DiffTree) key(left, right int64) int64 {
	return diffKey(share(left, d.tree.Total()), share(right, d.totalRight))
}

func diffKey(shareLeft, shareRight float64) int64 {
	size := max(shareLeft, shareRight)
	if size == 0 {
		return 0
	}
	change := (shareRight - shareLeft) / size
	return int64(size * (1 + ChangeWeight*change*change) * keyScale)
}

func share(v, total int64) float64 {
	if total == 0 {
		return 0
	}
	return math.Abs(float64(v) / float64(total))
}

// Frame renders the tree as Grafana's diff flame graph: the frame of
// Tree.Frame (named "response", fields "level", "value", "self", "label")
// plus "valueRight" and "selfRight", all values in unit. In Grafana's diff
// mode "value" and "self" are the left side's only and "valueRight" and
// "selfRight" the right side's; a bar is as wide as both together, and its
// colour is the change of the node's share of its side's total. Rows are in
// depth-first pre-order from a single root "total"; siblings are ordered by
// both sides' total descending, then label.
//
// maxNodes truncates as Tree.Frame does, with the same bound on rows, but a
// node is kept by its rank instead of its total: its size, the larger of its
// two shares of its side's total, times 1 + ChangeWeight·c², c the change
// of its share relative to that size (see key); or the largest rank of its
// descendants if that is larger. So a node that changed a lot is kept even
// when it is small on both sides, and its ancestors with it. A shown node's children below the threshold fold
// into one "other" child per side's sums. Totals stay exact on both sides.
func (d *DiffTree) Frame(maxNodes int, unit string) *data.Frame {
	t := d.tree
	limit := t.rowLimit(maxNodes)
	out := newFrameBuilder(t.names, t.rowEstimate(limit))
	out.diff = true
	if t.Nodes() != 1 || t.Total() != 0 || d.totalRight != 0 {
		cut := int64(keepAll)
		if limit > 0 && t.Nodes() > limit {
			r := diffRanker{ranker: ranker{capacity: limit}, d: d}
			r.replay()
			cut = r.cut(limit)
		}
		f := diffFolder{d: d, cut: cut, shown: make([]diffShown, 0, t.rowEstimate(limit))}
		f.replay()
		w := diffWalker{names: t.names, shown: f.shown, out: out}
		w.walk()
	}
	return out.frame(unit)
}

// diffOpen is an open node of a ranking replay.
type diffOpen struct {
	left, right int64
	// maxChild and minChild are the largest and smallest keys of its
	// closed children (a child's key covers its descendants).
	maxChild, minChild int64
}

func newDiffOpen() diffOpen {
	return diffOpen{maxChild: math.MinInt64, minChild: math.MaxInt64}
}

// diffRanker ranks the nodes of a diff tree by key in the heap of a
// ranker, whose candidates' "total" is the key.
type diffRanker struct {
	ranker
	d    *DiffTree
	open []diffOpen
}

func (r *diffRanker) replay() {
	t := r.d.tree
	t.sort()
	r.open = append(r.open[:0], newDiffOpen())
	for i := range t.order {
		step := t.step(i)
		r.closeTo(step.shared)
		for range step.open {
			r.open = append(r.open, newDiffOpen())
		}
		r.addTail(len(step.tail), step.value, r.d.right[step.stack])
	}
	r.closeTo(0)
	root := r.open[0]
	r.root = candidate{total: max(r.d.key(root.left, root.right), root.maxChild), minChild: root.minChild, count: 1}
}

// closeTo closes the open nodes deeper than depth: their keys are final.
func (r *diffRanker) closeTo(depth int) {
	for len(r.open) > depth+1 {
		node := r.open[len(r.open)-1]
		r.open = r.open[:len(r.open)-1]
		key := max(r.d.key(node.left, node.right), node.maxChild)
		r.open[len(r.open)-1].addChild(node.left, node.right, key)
		r.offer(candidate{total: key, minChild: node.minChild, count: 1})
	}
}

// addTail adds a chain of length nodes with the stack's values under the
// deepest open node (length 0 adds them to that node's self). The chain's
// nodes share one key.
func (r *diffRanker) addTail(length int, left, right int64) {
	parent := &r.open[len(r.open)-1]
	if length == 0 {
		parent.left += left
		parent.right += right
		return
	}
	key := r.d.key(left, right)
	parent.addChild(left, right, key)
	r.offer(candidate{total: key, minChild: key, count: length - 1})
	r.offer(candidate{total: key, minChild: math.MaxInt64, count: 1}) // the leaf
}

func (n *diffOpen) addChild(left, right, key int64) {
	n.left += left
	n.right += right
	n.maxChild = max(n.maxChild, key)
	n.minChild = min(n.minChild, key)
}

// diffShown is a node of a rendered diff tree, collected in post-order as
// shownNode is.
type diffShown struct {
	label                   int32
	start                   int32
	left, right             int64
	foldedLeft, foldedRight int64
	anyFolded               bool
	maxChild                int64
}

// diffFolder replays the stacks to collect the nodes whose key reaches cut
// (keys grow towards the root, so their parents are kept too).
type diffFolder struct {
	d     *DiffTree
	cut   int64
	open  []diffShown
	shown []diffShown
}

func (f *diffFolder) replay() {
	t := f.d.tree
	t.sort()
	f.open = append(f.open[:0], diffShown{label: -1, maxChild: math.MinInt64})
	for i := range t.order {
		step := t.step(i)
		f.closeTo(step.shared)
		for _, label := range step.open {
			f.open = append(f.open, diffShown{label: label, start: index32(len(f.shown)), maxChild: math.MinInt64})
		}
		f.addTail(step.tail, step.value, f.d.right[step.stack])
	}
	f.closeTo(0)
	f.shown = append(f.shown, f.open[0])
}

func (f *diffFolder) addTail(tail []int32, left, right int64) {
	parent := &f.open[len(f.open)-1]
	parent.left += left
	parent.right += right
	if len(tail) == 0 {
		return
	}
	key := f.d.key(left, right)
	parent.maxChild = max(parent.maxChild, key)
	if key < f.cut {
		parent.fold(left, right)
		return
	}
	start := index32(len(f.shown))
	for i := len(tail) - 1; i >= 0; i-- {
		f.shown = append(f.shown, diffShown{label: tail[i], start: start, left: left, right: right})
	}
}

func (f *diffFolder) closeTo(depth int) {
	for len(f.open) > depth+1 {
		node := f.open[len(f.open)-1]
		f.open = f.open[:len(f.open)-1]
		parent := &f.open[len(f.open)-1]
		parent.left += node.left
		parent.right += node.right
		key := max(f.d.key(node.left, node.right), node.maxChild)
		parent.maxChild = max(parent.maxChild, key)
		if key >= f.cut {
			f.shown = append(f.shown, node)
			continue
		}
		f.shown = f.shown[:node.start]
		parent.fold(node.left, node.right)
	}
}

func (n *diffShown) fold(left, right int64) {
	n.foldedLeft += left
	n.foldedRight += right
	n.anyFolded = true
}

// diffWalker emits the shown nodes depth first, as walker does.
type diffWalker struct {
	names    *Names
	shown    []diffShown
	out      *frameBuilder
	children []int32
}

type diffPending struct {
	node                  int32
	level                 int32
	otherLeft, otherRight int64
}

func (w *diffWalker) walk() {
	root := index32(len(w.shown) - 1)
	stack := []diffPending{{node: root}}
	for len(stack) > 0 {
		next := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if next.node == otherNode {
			w.out.addDiffText(next.level, next.otherLeft, next.otherLeft, next.otherRight, next.otherRight, otherLabel)
			continue
		}
		stack = w.visit(stack, next, next.node == root)
	}
}

func (w *diffWalker) visit(stack []diffPending, p diffPending, isRoot bool) []diffPending {
	node := &w.shown[p.node]
	children := w.children[:0]
	var childLeft, childRight int64
	for child := p.node - 1; child >= node.start; child = w.shown[child].start - 1 {
		children = append(children, child)
		childLeft += w.shown[child].left
		childRight += w.shown[child].right
	}
	slices.SortFunc(children, w.displayOrder)
	w.children = children
	selfLeft := node.left - childLeft - node.foldedLeft
	selfRight := node.right - childRight - node.foldedRight
	if isRoot {
		w.out.addDiffText(p.level, node.left, selfLeft, node.right, selfRight, rootLabel)
	} else {
		w.out.addDiffID(p.level, node.left, selfLeft, node.right, selfRight, node.label)
	}
	level := p.level + 1
	if node.anyFolded {
		stack = append(stack, diffPending{node: otherNode, level: level, otherLeft: node.foldedLeft, otherRight: node.foldedRight})
	}
	for i := len(children) - 1; i >= 0; i-- {
		stack = append(stack, diffPending{node: children[i], level: level})
	}
	return stack
}

// displayOrder sorts siblings by both sides' total descending, then label.
func (w *diffWalker) displayOrder(a, b int32) int {
	na, nb := &w.shown[a], &w.shown[b]
	if c := cmp.Compare(nb.left+nb.right, na.left+na.right); c != 0 {
		return c
	}
	if c := strings.Compare(w.names.Label(na.label), w.names.Label(nb.label)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}
