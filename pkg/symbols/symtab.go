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
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		if (typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC) || s.Size == 0 || s.Section == elf.SHN_UNDEF || s.Name == "" {
			continue
		}
		hi := s.Value + s.Size
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
