package symbols

import (
	"debug/elf"
	"slices"
	"strings"
)

// symtabRanges returns the function symbols of .symtab, else .dynsym, as
// one-level ranges without file or line, and records which tables exist.
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
		lo, hi uint64
		name   string
		rank   int
	}
	fns := make([]fn, 0, len(syms))
	starts := symbolStarts(syms)
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		if (typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC) || s.Section == elf.SHN_UNDEF || s.Name == "" {
			continue
		}
		hi := s.Value + s.Size
		if s.Size == 0 {
			// Hand-written code (the C runtime's _init, _fini,
			// frame_dummy...) has no size: like llvm-symbolizer, let it
			// reach the next symbol, but not past its section.
			hi = x.zeroSizeEnd(s, starts)
			if hi <= s.Value {
				continue
			}
		}
		if !x.inCode(s.Value, hi) {
			continue
		}
		// Among symbols at one address, prefer global, then weak, then local.
		rank := 2
		switch elf.ST_BIND(s.Info) {
		case elf.STB_GLOBAL:
			rank = 0
		case elf.STB_WEAK:
			rank = 1
		}
		fns = append(fns, fn{lo: s.Value, hi: hi, name: s.Name, rank: rank})
	}
	slices.SortFunc(fns, func(a, b fn) int {
		if c := cmpUint64(a.lo, b.lo); c != 0 {
			return c
		}
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]Range, 0, len(fns))
	for _, f := range fns {
		frames := x.frames.alloc(1)
		frames[0] = Frame{Function: x.names.function(f.name)}
		out = append(out, Range{Start: f.lo, End: f.hi, Frames: frames})
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
