package symbols

import (
	"debug/elf"
	"debug/gosym"
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

// pclntabRanges reads a Go binary's function and line table with
// debug/gosym: one level per range, the function and the innermost line,
// as go tool addr2line reports them (the table keeps no inline tree that
// debug/gosym exposes; DWARF, when present, is read instead).
func (x *extractor) pclntabRanges() ([]Range, error) {
	sec := x.pclntabSection()
	if sec == nil {
		return nil, nil
	}
	data, err := sec.Data()
	if err != nil {
		x.warn("Go pclntab skipped: %v", err)
		return nil, nil
	}
	var symtab []byte
	if s := x.f.Section(".gosymtab"); s != nil && s.Type != elf.SHT_NOBITS {
		symtab, _ = s.Data()
	}
	tab, err := gosym.NewTable(symtab, gosym.NewLineTable(data, x.goTextStart()))
	if err != nil {
		x.warn("Go pclntab skipped: %v", err)
		return nil, nil
	}
	var out []Range
	for i := range tab.Funcs {
		fn := &tab.Funcs[i]
		if fn.End <= fn.Entry || !x.inCode(fn.Entry, fn.End) {
			continue
		}
		name := x.names.function(fn.Name)
		var cur Range
		for pc := fn.Entry; pc < fn.End; pc++ {
			file, line, _ := tab.PCToLine(pc)
			f := Frame{Function: name, File: x.names.intern(file), Line: clampLine(line)}
			if cur.End == pc && cur.Frames[0] == f {
				cur.End = pc + 1
				continue
			}
			if cur.End > cur.Start {
				out = append(out, cur)
				if err := x.checkRanges(len(out)); err != nil {
					return nil, err
				}
			}
			frames := x.frames.alloc(1)
			frames[0] = f
			cur = Range{Start: pc, End: pc + 1, Frames: frames}
		}
		if cur.End > cur.Start {
			out = append(out, cur)
		}
	}
	return normalize(out), nil
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
