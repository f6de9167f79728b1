package flame

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

const (
	rootLabel  = "total"
	otherLabel = "other"

	// minRowLimit is the smallest row bound Frame can honour for a tree
	// with children: the root and one "other" child holding all of them.
	minRowLimit = 2
	// maxEnumTexts is how many distinct labels a uint16 enum can index.
	maxEnumTexts = math.MaxUint16 + 1
	// keepAll is the threshold that keeps every node.
	keepAll = math.MinInt64
	// otherNode marks a pending "other" row in the depth-first walk.
	otherNode int32 = -1
)

// Frame renders the tree as Grafana's nested-set flame graph frame, named
// "response" and preferring the flame graph visualisation, with the fields
// "level", "value" (the node's total), "self" (both in unit) and "label"
// (an enum whose texts are the distinct labels in first-use order). Rows are
// in depth-first pre-order from a single root labelled "total" at level 0;
// siblings are ordered by total descending, then label ascending.
//
// maxNodes <= 0 renders every node. maxNodes > 0 truncates the Pyroscope
// way, refined so that the "other" rows count within the bound. Let L be
// max(maxNodes, 2) (a root with children needs a child row). A tree of at
// most L nodes is rendered whole. Otherwise a node is shown when its total
// reaches a threshold and its parent is shown; in each shown node the
// children below the threshold are folded into one childless child
// labelled "other", placed last, whose value and self are the folded
// totals' sum. The threshold starts above Pyroscope's (the smallest total
// among the L largest nodes, kept in a min-heap), and is the smallest node
// total at which the rows, "other" rows included, number at most L; if no
// node total does, every child of the root folds into one "other" row.
// So the frame never has more than L rows, and with non-negative values
// (all profiles) it shows as much as the bound allows at one threshold;
// nodes of equal total are shown or folded together. Totals stay exact: the
// root's value is Total() and each row's value is its self plus its
// children's values.
//
// The enum indexes at most 65536 labels: when the names table holds more
// than 65533 (leaving room for "total", "other" and "" for ids it did not
// hand out), L is at most 65536, for maxNodes <= 0 too. A tree without
// stacks, or with empty stacks only whose values sum to zero, gives the
// four fields, the meta and no rows.
func (t *Tree) Frame(maxNodes int, unit string) *data.Frame {
	limit := t.rowLimit(maxNodes)
	out := newFrameBuilder(t.names, t.rowEstimate(limit))
	if !t.empty() {
		newWalker(t, limit, out).walk()
	}
	return out.frame(unit)
}

// FrameFocused renders the tree as Frame does, except below a focus path
// (label ids from the root's children down): the nodes along the path are
// shown whatever their totals, and the subtree under its last node is
// rendered with a row budget of its own, maxNodes, as if it were a tree of
// its own (its rows reaching its own threshold, or the whole tree's when
// that is lower) — "other" opened in place, the rest of the graph as
// Frame shows it. So the frame has at most about twice maxNodes rows (plus
// two per node of the path), and totals stay exact. To open an
// "other" row, focus its parent. found is false when no stack goes
// through the path (the frame is then Frame's); a nil or empty
// path is Frame.
func (t *Tree) FrameFocused(maxNodes int, unit string, focus []int32) (frame *data.Frame, found bool) {
	if len(focus) == 0 {
		return t.Frame(maxNodes, unit), true
	}
	sub := t.subtree(focus)
	if sub == nil {
		return t.Frame(maxNodes, unit), false
	}
	limit := t.focusLimit(maxNodes, len(focus))
	cut, subCut := int64(keepAll), int64(keepAll)
	if limit > 0 && t.Nodes() > limit {
		cut = t.threshold(limit)
	}
	if limit > 0 && sub.Nodes() > limit {
		subCut = min(sub.threshold(limit), cut)
	}
	out := newFrameBuilder(t.names, 2*t.rowEstimate(limit))
	if !t.empty() {
		w := &walker{names: t.names, out: out, shown: t.shownFocused(cut, subCut, focus, 2*t.rowEstimate(limit))}
		w.walk()
	}
	return out.frame(unit), true
}

// subtree is the tree of the stacks through a path, the path cut off
// (its last node is the subtree's root); nil when no stack goes through it.
func (t *Tree) subtree(path []int32) *Tree {
	t.sort()
	var sub *Tree
	for _, i := range t.order {
		stack := t.stack(i)
		if len(stack) < len(path) || !slices.Equal(stack[:len(path)], path) {
			if sub != nil {
				break // the stacks through the path are adjacent in order
			}
			continue
		}
		if sub == nil {
			sub = NewTree(t.names)
		}
		sub.Add(stack[len(path):], t.values[i])
	}
	return sub
}

// focusLimit is the row bound of each part of a focused frame: the tree's,
// or, when the enum could run out of texts, half of what it holds less the
// path's rows.
func (t *Tree) focusLimit(maxNodes, path int) int {
	limit := t.rowLimit(maxNodes)
	if t.names.count()+3 > maxEnumTexts {
		limit = min(limit, (maxEnumTexts-3-2*path)/2)
	}
	return max(limit, 0)
}

func (t *Tree) empty() bool {
	return t.Nodes() == 1 && t.total == 0
}

// rowEstimate is an upper bound of the rows rendered under limit, less the
// "other" rows when nothing bounds them.
func (t *Tree) rowEstimate(limit int) int {
	if limit == 0 {
		return t.Nodes()
	}
	return min(t.Nodes(), limit)
}

// rowLimit turns maxNodes into the row bound Frame enforces, 0 meaning none.
func (t *Tree) rowLimit(maxNodes int) int {
	limit := max(maxNodes, 0)
	if limit > 0 {
		limit = max(limit, minRowLimit)
	}
	possibleTexts := t.names.count() + 3 // "total", "other", "" for unknown ids
	if possibleTexts > maxEnumTexts && (limit == 0 || limit > maxEnumTexts) {
		limit = maxEnumTexts
	}
	return limit
}

// walker emits the shown nodes depth first.
type walker struct {
	names    *Names
	shown    []shownNode
	out      *frameBuilder
	children []int32 // scratch space for one node's children
}

// pending is a row still to emit: a shown node, or an "other" row with its
// total.
type pending struct {
	node  int32
	level int32
	other int64
}

func newWalker(t *Tree, limit int, out *frameBuilder) *walker {
	cut := int64(keepAll)
	if limit > 0 && t.Nodes() > limit {
		cut = t.threshold(limit)
	}
	return &walker{names: t.names, shown: t.shownNodes(cut, t.rowEstimate(limit)), out: out}
}

func (w *walker) walk() {
	root := index32(len(w.shown) - 1)
	stack := []pending{{node: root}}
	for len(stack) > 0 {
		next := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if next.node == otherNode {
			w.out.addText(next.level, next.other, next.other, otherLabel)
			continue
		}
		stack = w.visit(stack, next, next.node == root)
	}
}

// visit emits a node's row and pushes the rows below it so that they pop
// in display order: the children, then the "other" row if any child was
// folded.
func (w *walker) visit(stack []pending, p pending, isRoot bool) []pending {
	node := &w.shown[p.node]
	children, childTotal := w.sortedChildren(p.node)
	self := node.total - childTotal - node.folded
	if isRoot {
		w.out.addText(p.level, node.total, self, rootLabel)
	} else {
		w.out.addID(p.level, node.total, self, node.label)
	}
	level := p.level + 1
	if node.anyFolded {
		stack = append(stack, pending{node: otherNode, level: level, other: node.folded})
	}
	for i := len(children) - 1; i >= 0; i-- {
		stack = append(stack, pending{node: children[i], level: level})
	}
	return stack
}

// sortedChildren returns node's shown children in display order, valid
// until the next call, and the sum of their totals.
func (w *walker) sortedChildren(node int32) (children []int32, total int64) {
	children = w.children[:0]
	for child := node - 1; child >= w.shown[node].start; child = w.shown[child].start - 1 {
		children = append(children, child)
		total += w.shown[child].total
	}
	slices.SortFunc(children, w.displayOrder)
	w.children = children
	return children, total
}

// displayOrder sorts siblings by total descending, then label ascending
// (then position, which only matters for labels outside the names table).
func (w *walker) displayOrder(a, b int32) int {
	na, nb := &w.shown[a], &w.shown[b]
	if c := cmp.Compare(nb.total, na.total); c != 0 {
		return c
	}
	if c := strings.Compare(w.names.Label(na.label), w.names.Label(nb.label)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// frameBuilder collects the rows of a flame graph frame.
type frameBuilder struct {
	level []int64
	value []int64
	self  []int64
	label []data.EnumItemIndex
	enum  enumTexts
	// diff adds the right side's fields, valueRight and selfRight.
	diff                  bool
	valueRight, selfRight []int64
}

func newFrameBuilder(names *Names, rows int) *frameBuilder {
	return &frameBuilder{
		level: make([]int64, 0, rows),
		value: make([]int64, 0, rows),
		self:  make([]int64, 0, rows),
		label: make([]data.EnumItemIndex, 0, rows),
		enum:  newEnumTexts(names),
	}
}

func (b *frameBuilder) addID(level int32, total, self int64, label int32) {
	b.add(level, total, self, b.enum.ofID(label))
}

func (b *frameBuilder) addText(level int32, total, self int64, label string) {
	b.add(level, total, self, b.enum.ofText(label))
}

func (b *frameBuilder) addDiffID(level int32, total, self, totalRight, selfRight int64, label int32) {
	b.addID(level, total, self, label)
	b.valueRight = append(b.valueRight, totalRight)
	b.selfRight = append(b.selfRight, selfRight)
}

func (b *frameBuilder) addDiffText(level int32, total, self, totalRight, selfRight int64, label string) {
	b.addText(level, total, self, label)
	b.valueRight = append(b.valueRight, totalRight)
	b.selfRight = append(b.selfRight, selfRight)
}

func (b *frameBuilder) add(level int32, total, self int64, label data.EnumItemIndex) {
	b.level = append(b.level, int64(level))
	b.value = append(b.value, total)
	b.self = append(b.self, self)
	b.label = append(b.label, label)
}

func (b *frameBuilder) frame(unit string) *data.Frame {
	labelConfig := &data.FieldConfig{
		TypeConfig: &data.FieldTypeConfig{Enum: &data.EnumFieldConfig{Text: b.enum.texts}},
	}
	frame := data.NewFrame("response",
		data.NewField("level", nil, b.level),
		data.NewField("value", nil, b.value).SetConfig(&data.FieldConfig{Unit: unit}),
		data.NewField("self", nil, b.self).SetConfig(&data.FieldConfig{Unit: unit}),
		data.NewField("label", nil, b.label).SetConfig(labelConfig),
	)
	if b.diff {
		frame.Fields = append(frame.Fields,
			data.NewField("valueRight", nil, nonNil(b.valueRight)).SetConfig(&data.FieldConfig{Unit: unit}),
			data.NewField("selfRight", nil, nonNil(b.selfRight)).SetConfig(&data.FieldConfig{Unit: unit}),
		)
	}
	return frame.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeFlameGraph})
}

// enumTexts assigns enum indexes to labels in first-use order. Label ids
// index a slice; texts outside the names table ("total", "other", "" for
// unknown ids) share the index of an equal name, or get their own.
type enumTexts struct {
	names  *Names
	byID   []enumSlot
	byText map[string]data.EnumItemIndex
	texts  []string
}

type enumSlot struct {
	index data.EnumItemIndex
	used  bool
}

func newEnumTexts(names *Names) enumTexts {
	return enumTexts{
		names:  names,
		byID:   make([]enumSlot, names.count()),
		byText: make(map[string]data.EnumItemIndex),
		texts:  []string{},
	}
}

func (e *enumTexts) ofID(id int32) data.EnumItemIndex {
	if !e.names.valid(id) {
		return e.ofText("")
	}
	slot := &e.byID[id]
	if !slot.used {
		*slot = enumSlot{index: e.add(e.names.Label(id)), used: true}
	}
	return slot.index
}

func (e *enumTexts) ofText(text string) data.EnumItemIndex {
	if id, ok := e.names.Lookup(text); ok {
		return e.ofID(id)
	}
	if index, ok := e.byText[text]; ok {
		return index
	}
	index := e.add(text)
	e.byText[text] = index
	return index
}

func (e *enumTexts) add(text string) data.EnumItemIndex {
	n := len(e.texts)
	if n >= maxEnumTexts {
		panic("flame: more distinct labels than an enum field holds") // rowLimit prevents it
	}
	e.texts = append(e.texts, text)
	return data.EnumItemIndex(n)
}

// nonNil is v, or an empty slice for nil (a field of no rows).
func nonNil(v []int64) []int64 {
	if v == nil {
		return []int64{}
	}
	return v
}
