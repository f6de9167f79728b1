package symbols

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, which older compilers
// write instead of DW_AT_linkage_name (debug/dwarf has no constant).
const attrMIPSLinkageName dwarf.Attr = 0x2007

// maxRefChain bounds the DW_AT_abstract_origin / DW_AT_specification
// chain followed for a name.
const maxRefChain = 8

// scopeNode is a subprogram (depth 0) or an inlined subroutine in it.
type scopeNode struct {
	name   string
	parent int32 // index of the enclosing node, -1 for a subprogram
	depth  int32
	// callFile and callLine are where an inlined subroutine was called
	// from, in its parent.
	callFile string
	callLine uint32
}

// interval is one address range of a node.
type interval struct {
	lo, hi uint64
	node   int32
}

// lineSeg is one line-table row's address range.
type lineSeg struct {
	lo, hi uint64
	file   string
	line   uint32
}

// dieInfo is what naming needs of a DIE that others refer to.
type dieInfo struct {
	linkage, name string
	ref           dwarf.Offset
	hasRef        bool
}

// dwarfReader reads one file's DWARF into ranges.
type dwarfReader struct {
	x    *extractor
	d    *dwarf.Data
	refs *dwarf.Reader
	dies map[dwarf.Offset]dieInfo
	// per compile unit
	nodes     []scopeNode
	intervals []interval
	segs      []lineSeg
	files     []*dwarf.LineFile
	out       []Range
	scratch   []Frame
}

// dwarfRanges returns the ranges of every compile unit's subprograms and
// inlined subroutines, with lines from the line tables. A file without
// DWARF gives none; DWARF the standard library cannot read is skipped
// with a warning, so that the symbol table still names the code.
func (x *extractor) dwarfRanges() ([]Range, error) {
	info := x.f.Section(".debug_info")
	if info == nil {
		info = x.f.Section(".zdebug_info")
	}
	if info == nil || info.Size == 0 {
		return nil, nil
	}
	var total uint64
	for _, s := range x.f.Sections {
		if strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			total += s.Size
		}
	}
	if limit := uint64(maxDebugExpansion) * uint64(x.lim.MaxFileBytes); total > limit { //nolint:gosec // G115: positive
		return nil, fmt.Errorf("%w: its DWARF sections hold %d bytes decompressed, more than %d", ErrTooLarge, total, limit)
	}
	d, err := x.f.DWARF()
	if err != nil {
		x.warn("DWARF skipped: %v", err)
		return nil, nil
	}
	x.exe.HasDwarf = true
	dr := &dwarfReader{x: x, d: d, refs: d.Reader(), dies: map[dwarf.Offset]dieInfo{}}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil {
			x.warn("DWARF read stopped early: %v", err)
			break
		}
		if cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit && cu.Tag != dwarf.TagPartialUnit {
			r.SkipChildren()
			continue
		}
		if err := dr.unit(r, cu); err != nil {
			return nil, err
		}
	}
	return normalize(dr.out), nil
}

// unit reads one compile unit: its line table, then its DIE tree, then
// flattens both into ranges.
func (dr *dwarfReader) unit(r *dwarf.Reader, cu *dwarf.Entry) error {
	dr.nodes, dr.intervals, dr.segs, dr.files = dr.nodes[:0], dr.intervals[:0], dr.segs[:0], nil
	dr.lines(cu)
	if cu.Children {
		if err := dr.walk(r); err != nil {
			return err
		}
	}
	return dr.flatten()
}

// lines reads a compile unit's line table into address segments.
func (dr *dwarfReader) lines(cu *dwarf.Entry) {
	lr, err := dr.d.LineReader(cu)
	if err != nil {
		dr.x.warn("line table of %s skipped: %v", unitName(cu), err)
		return
	}
	if lr == nil {
		return
	}
	var prev dwarf.LineEntry
	var have bool
	var le dwarf.LineEntry
	for {
		err := lr.Next(&le)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			dr.x.warn("line table of %s cut short: %v", unitName(cu), err)
			break
		}
		if have && le.Address > prev.Address {
			dr.segs = append(dr.segs, lineSeg{lo: prev.Address, hi: le.Address, file: dr.fileName(prev.File), line: clampLine(prev.Line)})
		}
		prev, have = le, !le.EndSequence
	}
	dr.files = lr.Files()
	slices.SortFunc(dr.segs, func(a, b lineSeg) int { return cmpUint64(a.lo, b.lo) })
}

func unitName(cu *dwarf.Entry) string {
	if n, ok := cu.Val(dwarf.AttrName).(string); ok {
		return n
	}
	return fmt.Sprintf("the unit at %#x", cu.Offset)
}

func (dr *dwarfReader) fileName(f *dwarf.LineFile) string {
	if f == nil {
		return ""
	}
	return dr.x.names.intern(f.Name)
}

func clampLine(l int) uint32 {
	if l < 0 {
		return 0
	}
	return uint32(min(l, 1<<31))
}

// walk reads a compile unit's DIE tree, recording subprograms with code
// and the inlined subroutines inside them (through lexical blocks),
// looking into namespaces and types for nested definitions.
func (dr *dwarfReader) walk(r *dwarf.Reader) error {
	// stack holds, per open DIE with children, the node its children
	// belong to (-1: none).
	stack := []int32{-1}
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil {
			dr.x.warn("DWARF read stopped early: %v", err)
			return nil
		}
		if e == nil {
			return nil
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := stack[len(stack)-1]
		ctx := parent
		switch e.Tag {
		case dwarf.TagSubprogram:
			ctx = dr.scope(e, -1)
			if ctx < 0 {
				r.SkipChildren()
				continue
			}
		case dwarf.TagInlinedSubroutine:
			if parent < 0 || dr.nodes[parent].depth+1 >= maxInlineDepth {
				r.SkipChildren()
				continue
			}
			ctx = dr.scope(e, parent)
			if ctx < 0 {
				r.SkipChildren()
				continue
			}
		case dwarf.TagLexDwarfBlock, dwarf.TagNamespace, dwarf.TagClassType, dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagModule:
		default:
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		if e.Children {
			stack = append(stack, ctx)
		}
		if err := dr.x.checkRanges(len(dr.intervals) + len(dr.out)); err != nil {
			return err
		}
	}
	return nil
}

// scope records a subprogram (parent -1) or inlined subroutine with its
// code ranges; it returns the node, or -1 when the DIE has no code here
// (a declaration, an abstract instance, code the linker discarded).
func (dr *dwarfReader) scope(e *dwarf.Entry, parent int32) int32 {
	ranges, err := dr.d.Ranges(e)
	if err != nil || len(ranges) == 0 {
		return -1
	}
	node := int32(len(dr.nodes)) //nolint:gosec // G115: bounded by MaxRanges
	n := scopeNode{name: dr.name(e), parent: parent}
	if parent >= 0 {
		n.depth = dr.nodes[parent].depth + 1
		if idx, ok := e.Val(dwarf.AttrCallFile).(int64); ok && idx >= 0 && idx < int64(len(dr.files)) {
			n.callFile = dr.fileName(dr.files[idx])
		}
		if line, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
			n.callLine = clampLine(int(line))
		}
	}
	added := false
	for _, rg := range ranges {
		if parent < 0 && !dr.x.inCode(rg[0], rg[1]) {
			continue
		}
		if rg[0] < rg[1] {
			dr.intervals = append(dr.intervals, interval{lo: rg[0], hi: rg[1], node: node})
			added = true
		}
	}
	if !added {
		return -1
	}
	dr.nodes = append(dr.nodes, n)
	return node
}

// name returns a DIE's function name as llvm-symbolizer gives it: the
// linkage name (demangled) found first along DW_AT_specification and
// DW_AT_abstract_origin, else the first DW_AT_name along them.
func (dr *dwarfReader) name(e *dwarf.Entry) string {
	info := dieInfoOf(e)
	short := ""
	for range maxRefChain {
		if info.linkage != "" {
			return dr.x.names.function(info.linkage)
		}
		if short == "" {
			short = info.name
		}
		if !info.hasRef {
			break
		}
		info = dr.die(info.ref)
	}
	return dr.x.names.function(short)
}

func dieInfoOf(e *dwarf.Entry) dieInfo {
	var info dieInfo
	info.linkage, _ = e.Val(dwarf.AttrLinkageName).(string)
	if info.linkage == "" {
		info.linkage, _ = e.Val(attrMIPSLinkageName).(string)
	}
	info.name, _ = e.Val(dwarf.AttrName).(string)
	if off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
		info.ref, info.hasRef = off, true
	} else if off, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset); ok {
		info.ref, info.hasRef = off, true
	}
	return info
}

// die reads the DIE at an offset (cached).
func (dr *dwarfReader) die(off dwarf.Offset) dieInfo {
	if info, ok := dr.dies[off]; ok {
		return info
	}
	var info dieInfo
	dr.refs.Seek(off)
	if e, err := dr.refs.Next(); err == nil && e != nil && e.Offset == off {
		info = dieInfoOf(e)
	}
	dr.dies[off] = info
	return info
}

// flatten turns a unit's nested node intervals and line segments into
// non-overlapping ranges, each with the inline stack of the deepest node
// that covers it and the line of the row that covers it. Code the line
// table covers but no subprogram does (assembly, such as the C runtime's
// crti.S) gets one level without a function name, which the symbol table
// fills in (as llvm-symbolizer names it), or which is dropped.
func (dr *dwarfReader) flatten() error {
	if len(dr.intervals) == 0 && len(dr.segs) == 0 {
		return nil
	}
	points := dr.boundaries()
	ivs := dr.intervals
	slices.SortFunc(ivs, func(a, b interval) int { return cmpUint64(a.lo, b.lo) })
	var active []int // indices into ivs
	next, seg := 0, 0
	start := len(dr.out)
	for k := 0; k+1 < len(points); k++ {
		p, q := points[k], points[k+1]
		active = slices.DeleteFunc(active, func(i int) bool { return ivs[i].hi <= p })
		for ; next < len(ivs) && ivs[next].lo <= p; next++ {
			if ivs[next].hi > p {
				active = append(active, next)
			}
		}
		for seg < len(dr.segs) && dr.segs[seg].hi <= p {
			seg++
		}
		file, line, hasLine := "", uint32(0), false
		if seg < len(dr.segs) && dr.segs[seg].lo <= p {
			file, line, hasLine = dr.segs[seg].file, dr.segs[seg].line, true
		}
		var frames []Frame
		if len(active) == 0 {
			if !hasLine || !dr.x.inCode(p, q) {
				continue
			}
			dr.scratch = append(dr.scratch[:0], Frame{File: file, Line: line})
			frames = dr.scratch
		} else {
			frames = dr.stack(ivs[dr.deepest(ivs, active)].node, file, line)
		}
		if err := dr.appendRange(start, p, q, frames); err != nil {
			return err
		}
	}
	return nil
}

// boundaries are the unit's interval and line segment ends, sorted, each
// once.
func (dr *dwarfReader) boundaries() []uint64 {
	points := make([]uint64, 0, 2*len(dr.intervals)+2*len(dr.segs))
	for _, iv := range dr.intervals {
		points = append(points, iv.lo, iv.hi)
	}
	for _, s := range dr.segs {
		points = append(points, s.lo, s.hi)
	}
	slices.Sort(points)
	return slices.Compact(points)
}

// deepest is the active interval of the deepest node, the one starting
// last among equally deep ones.
func (dr *dwarfReader) deepest(ivs []interval, active []int) int {
	best := active[0]
	for _, i := range active[1:] {
		a, b := &dr.nodes[ivs[i].node], &dr.nodes[ivs[best].node]
		if a.depth > b.depth || (a.depth == b.depth && ivs[i].lo >= ivs[best].lo) {
			best = i
		}
	}
	return best
}

// appendRange adds [p, q) with its frames to the unit's ranges (from
// start), extending the last one when it ends at p with the same frames.
func (dr *dwarfReader) appendRange(start int, p, q uint64, frames []Frame) error {
	if n := len(dr.out); n > start && dr.out[n-1].End == p && sameFrames(dr.out[n-1].Frames, frames) {
		dr.out[n-1].End = q
		return nil
	}
	stored := dr.x.frames.alloc(len(frames))
	copy(stored, frames)
	dr.out = append(dr.out, Range{Start: p, End: q, Frames: stored})
	return dr.x.checkRanges(len(dr.out))
}

// stack builds the inline stack of a node, innermost first, in scratch.
func (dr *dwarfReader) stack(node int32, file string, line uint32) []Frame {
	frames := dr.scratch[:0]
	frames = append(frames, Frame{Function: dr.nodes[node].name, File: file, Line: line})
	for n := node; dr.nodes[n].parent >= 0 && len(frames) < maxInlineDepth; n = dr.nodes[n].parent {
		inner := &dr.nodes[n]
		frames = append(frames, Frame{Function: dr.nodes[inner.parent].name, File: inner.callFile, Line: inner.callLine})
	}
	dr.scratch = frames
	return frames
}
