package symbols

import (
	"debug/elf"
	"slices"
)

// symtabRanges returns the function symbols of .symtab, else .dynsym, as
// one-level ranges without file or line, and records which tables exist.
//
// The table is read as llvm-symbolizer reads it, so that names agree:
// among symbols at one address (aliases: glibc's isalnum_l, __isalnum_l
// and __GI___isalnum_l) the one with the largest size wins, and among
// equal sizes the last in the table; a symbol covers its size but not
// past the next symbol's address; one without a size (hand-written code:
// the C runtime's _init, _fini, frame_dummy) reaches the next symbol,
// and here not past its section either.
func (x *extractor) symtabRanges() ([]Range, error) {
	syms, serr := x.f.Symbols()
	if serr == nil && len(syms) > 0 {
		x.exe.HasSymtab = true
	}
	dyn, derr := x.f.DynamicSymbols()
	if derr == nil && len(dyn) > 0 {
		x.exe.HasDynsym = true
	}
	if !x.exe.HasSymtab {
		syms = dyn
	}
	// An unreadable table (a debug file's NOBITS .dynsym, say) counts as
	// absent: the other sources may still name everything.
	type fn struct {
		sym *elf.Symbol
		idx int
	}
	fns := make([]fn, 0, len(syms))
	for i := range syms {
		s := &syms[i]
		typ := elf.ST_TYPE(s.Info)
		if (typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC) || s.Section == elf.SHN_UNDEF || s.Name == "" || s.Value == 0 {
			continue
		}
		fns = append(fns, fn{sym: s, idx: i})
	}
	slices.SortFunc(fns, func(a, b fn) int {
		if c := cmpUint64(a.sym.Value, b.sym.Value); c != 0 {
			return c
		}
		if c := cmpUint64(b.sym.Size, a.sym.Size); c != 0 {
			return c
		}
		return b.idx - a.idx
	})
	fns = slices.CompactFunc(fns, func(a, b fn) bool { return a.sym.Value == b.sym.Value })
	starts := symbolStarts(syms)
	out := make([]Range, 0, len(fns))
	for i, f := range fns {
		s := f.sym
		hi := s.Value + s.Size
		if s.Size == 0 {
			hi = x.zeroSizeEnd(*s, starts)
		}
		if i+1 < len(fns) {
			hi = min(hi, fns[i+1].sym.Value)
		}
		if hi <= s.Value || !x.inCode(s.Value, hi) {
			continue
		}
		frames := x.frames.alloc(1)
		frames[0] = Frame{Function: x.names.function(s.Name)}
		out = append(out, Range{Start: s.Value, End: hi, Frames: frames})
		if err := x.checkRanges(len(out)); err != nil {
			return nil, err
		}
	}
	return normalize(out), nil
}

// symbolStarts returns the sorted, distinct addresses of the defined
// function and object symbols.
func symbolStarts(syms []elf.Symbol) []uint64 {
	var out []uint64
	for _, s := range syms {
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FUNC, elf.STT_GNU_IFUNC, elf.STT_OBJECT, elf.STT_NOTYPE:
			if s.Section != elf.SHN_UNDEF && s.Section < elf.SHN_LORESERVE && s.Value != 0 {
				out = append(out, s.Value)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// zeroSizeEnd returns where a function symbol without a size ends: at the
// next symbol, or at the end of its section when that comes first; its
// own address when its section is unknown or not code.
func (x *extractor) zeroSizeEnd(s elf.Symbol, starts []uint64) uint64 {
	i := int(s.Section)
	if s.Section >= elf.SHN_LORESERVE || i >= len(x.f.Sections) {
		return s.Value
	}
	sec := x.f.Sections[i]
	if sec.Flags&elf.SHF_EXECINSTR == 0 || s.Value < sec.Addr || s.Value >= sec.Addr+sec.Size {
		return s.Value
	}
	end := sec.Addr + sec.Size
	if k, found := slices.BinarySearch(starts, s.Value+1); k < len(starts) || found {
		end = min(end, starts[k])
	}
	return end
}
