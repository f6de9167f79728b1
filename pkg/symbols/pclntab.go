package symbols

import (
	"debug/elf"
	"debug/gosym"
	"slices"
)

// pclntabSection returns a Go binary's .gopclntab (PIE and external
// linking put it in .data.rel.ro.gopclntab), nil when there is none.
func (x *extractor) pclntabSection() *elf.Section {
	for _, name := range []string{".gopclntab", ".data.rel.ro.gopclntab"} {
		if s := x.f.Section(name); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
			return s
		}
	}
	return nil
}

// goTable reads a Go binary's function and line table with debug/gosym;
// nil when the file has none or it cannot be read (with a warning).
func (x *extractor) goTable() *gosym.Table {
	sec := x.pclntabSection()
	if sec == nil {
		return nil
	}
	data, err := sec.Data()
	if err != nil {
		x.warn("Go pclntab skipped: %v", err)
		return nil
	}
	var symtab []byte
	if s := x.f.Section(".gosymtab"); s != nil && s.Type != elf.SHT_NOBITS {
		symtab, _ = s.Data()
	}
	tab, err := gosym.NewTable(symtab, gosym.NewLineTable(data, x.goTextStart()))
	if err != nil {
		x.warn("Go pclntab skipped: %v", err)
		return nil
	}
	return tab
}

// goFuncRanges returns one range per Go function, named as the Go tools
// name it, without file or line: cheap, for naming the physical function.
func (x *extractor) goFuncRanges(tab *gosym.Table) ([]Range, error) {
	out := make([]Range, 0, len(tab.Funcs))
	for i := range tab.Funcs {
		fn := &tab.Funcs[i]
		if fn.End <= fn.Entry || !x.inCode(fn.Entry, fn.End) {
			continue
		}
		frames := x.frames.alloc(1)
		frames[0] = Frame{Function: x.names.function(fn.Name)}
		out = append(out, Range{Start: fn.Entry, End: fn.End, Frames: frames})
		if err := x.checkRanges(len(out)); err != nil {
			return nil, err
		}
	}
	return normalize(out), nil
}

// goLineRanges returns the functions' ranges with lines: one level per
// range, the function and the innermost line, as go tool addr2line
// reports them (debug/gosym exposes no inline tree; DWARF, when present,
// gives the inline stacks). Only the addresses no range of skip covers
// are read (skip sorted and non-overlapping; nil reads all): the table is
// read address by address, which costs time on large binaries.
func (x *extractor) goLineRanges(tab *gosym.Table, skip []Range) ([]Range, error) {
	var out []Range
	var cur Range
	flush := func() error {
		if cur.End > cur.Start {
			out = append(out, cur)
			cur = Range{}
			return x.checkRanges(len(out))
		}
		return nil
	}
	for i := range tab.Funcs {
		fn := &tab.Funcs[i]
		if fn.End <= fn.Entry || !x.inCode(fn.Entry, fn.End) {
			continue
		}
		name := x.names.function(fn.Name)
		for _, g := range gaps(skip, fn.Entry, fn.End) {
			for pc := g[0]; pc < g[1]; pc++ {
				file, line, _ := tab.PCToLine(pc)
				f := Frame{Function: name, File: x.names.intern(file), Line: clampLine(line)}
				if cur.End == pc && cur.Frames[0] == f {
					cur.End = pc + 1
					continue
				}
				if err := flush(); err != nil {
					return nil, err
				}
				frames := x.frames.alloc(1)
				frames[0] = f
				cur = Range{Start: pc, End: pc + 1, Frames: frames}
			}
		}
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return normalize(out), nil
}

// gaps returns the parts of [lo, hi) that no range of rs (sorted, not
// overlapping) covers.
func gaps(rs []Range, lo, hi uint64) [][2]uint64 {
	i, _ := slices.BinarySearchFunc(rs, lo, func(r Range, v uint64) int {
		if r.End <= v {
			return -1
		}
		return 1
	})
	var out [][2]uint64
	pos := lo
	for ; i < len(rs) && rs[i].Start < hi && pos < hi; i++ {
		if rs[i].Start > pos {
			out = append(out, [2]uint64{pos, rs[i].Start})
		}
		pos = max(pos, rs[i].End)
	}
	if pos < hi {
		out = append(out, [2]uint64{pos, hi})
	}
	return out
}

// goTextStart is the address the pclntab's offsets count from: the
// runtime.text symbol, else the start of .text.
func (x *extractor) goTextStart() uint64 {
	if syms, err := x.f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.text" {
				return s.Value
			}
		}
	}
	if s := x.f.Section(".text"); s != nil {
		return s.Addr
	}
	return 0
}
