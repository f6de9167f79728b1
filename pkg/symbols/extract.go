package symbols

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Executable is what a file holds for the symbol store: its build id, its
// loadable segments, what kinds of symbols it had and its code as
// flattened ranges.
type Executable struct {
	// BuildID is the GNU build id as lowercase hex, or, for a Go binary
	// without one, the Go build id.
	BuildID string
	// GoBuildID is the Go build id when the file has one ("" otherwise).
	GoBuildID string
	// Size is the file's size in bytes.
	Size int64
	// HasSymtab, HasDynsym, HasDwarf and HasGoPclntab say what the file held.
	HasSymtab, HasDynsym, HasDwarf, HasGoPclntab bool
	// Segments are the PT_LOAD program headers, executable or not.
	Segments []Segment
	// Ranges are the code's address ranges, sorted by Start and not
	// overlapping.
	Ranges []Range
	// Warnings say what could not be read and was skipped (a line table the
	// standard library cannot decode, say); the rest is still usable.
	Warnings []string
}

// Segment is one PT_LOAD program header.
type Segment struct {
	// Offset, Vaddr and Filesz are p_offset, p_vaddr and p_filesz.
	Offset, Vaddr, Filesz uint64
	// Memsz is p_memsz; Exec is set for segments with PF_X.
	Memsz uint64
	Exec  bool
}

// Range is the inline stack of every address in [Start, End), ELF virtual
// addresses.
type Range struct {
	Start, End uint64
	// Frames are innermost first; the last one is the function the code
	// belongs to. Ranges of one Executable may share backing arrays: do not
	// modify.
	Frames []Frame
}

// Frame is one level of an inline stack.
type Frame struct {
	// Function is the demangled name, as llvm-symbolizer prints it.
	Function string
	// File and Line are the innermost level's line-table position, and for
	// an outer level the call site of the level inside it; "" and 0 when
	// unknown (symbol-table ranges).
	File string
	Line uint32
}

// Sources returns what the file held, e.g. "symtab, dynsym, DWARF".
func (e *Executable) Sources() string {
	var out []string
	for _, s := range []struct {
		has  bool
		name string
	}{{e.HasSymtab, "symtab"}, {e.HasDynsym, "dynsym"}, {e.HasDwarf, "DWARF"}, {e.HasGoPclntab, "Go pclntab"}} {
		if s.has {
			out = append(out, s.name)
		}
	}
	if len(out) == 0 {
		return "no symbols"
	}
	return strings.Join(out, ", ")
}

// Limits bound what Extract reads.
type Limits struct {
	// MaxFileBytes is the largest file accepted. Default 1 GiB.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// MaxRanges is the most ranges one file may produce. Default 10,000,000.
	MaxRanges int `yaml:"max_ranges"`
}

// Default limits.
const (
	DefaultMaxFileBytes = 1 << 30
	DefaultMaxRanges    = 10_000_000
	// maxDebugExpansion bounds the decompressed size of a file's DWARF
	// sections, as a multiple of MaxFileBytes.
	maxDebugExpansion = 8
	// maxInlineDepth bounds an inline stack.
	maxInlineDepth = 64
)

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{MaxFileBytes: DefaultMaxFileBytes, MaxRanges: DefaultMaxRanges}
}

// Validate reports every problem at once.
func (l Limits) Validate() error {
	var err error
	if l.MaxFileBytes <= 0 {
		err = errors.Join(err, errors.New("max_file_bytes must be positive"))
	}
	if l.MaxRanges <= 0 {
		err = errors.Join(err, errors.New("max_ranges must be positive"))
	}
	return err
}

// Options steer Extract.
type Options struct {
	// Limits bound the file; zero fields take the defaults.
	Limits Limits
	// ExpectBuildID, when set, is the build id the file must have (GNU
	// build id in hex, or Go build id); case does not matter.
	ExpectBuildID string
	// AllowNoSymbols returns a file without symbols (a stripped executable
	// that exports nothing) with its build id and segments and no ranges,
	// instead of ErrNoSymbols: Put then only gives its segments to the
	// stored debug file of the same build id.
	AllowNoSymbols bool
}

// Errors Extract returns, wrapped with what was wrong; test with errors.Is.
var (
	ErrTooLarge        = errors.New("file too large")
	ErrNotELF          = errors.New("not an ELF file")
	ErrMalformed       = errors.New("truncated or malformed ELF file")
	ErrNoBuildID       = errors.New("no build id")
	ErrBuildIDMismatch = errors.New("build id mismatch")
	ErrNoSymbols       = errors.New("no symbols")
	ErrTooManyRanges   = errors.New("too many address ranges")
)

// Extract reads a file's symbols with the default limits.
func Extract(r io.ReaderAt, size int64) (*Executable, error) {
	return ExtractWith(r, size, Options{})
}

// ExtractWith reads a file's build id, segments and symbols. It never
// panics on bad input: a panic inside the standard library's parsers is
// returned as ErrMalformed.
func ExtractWith(r io.ReaderAt, size int64, opts Options) (exe *Executable, err error) {
	lim := opts.Limits
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = DefaultMaxFileBytes
	}
	if lim.MaxRanges <= 0 {
		lim.MaxRanges = DefaultMaxRanges
	}
	if size > lim.MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, size, lim.MaxFileBytes)
	}
	var magic [4]byte
	if n, _ := r.ReadAt(magic[:], 0); n < 4 || !bytes.Equal(magic[:], []byte(elf.ELFMAG)) {
		return nil, fmt.Errorf("%w: it does not start with the ELF magic \\x7fELF", ErrNotELF)
	}
	defer func() {
		if p := recover(); p != nil {
			exe, err = nil, fmt.Errorf("%w: the ELF or DWARF reader failed on it: %v", ErrMalformed, p)
		}
	}()
	f, err := elf.NewFile(io.NewSectionReader(r, 0, size))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err) //nolint:errorlint // one %w: the kind; the cause as text
	}
	if err := checkExtents(f, size); err != nil {
		return nil, err
	}
	x := &extractor{f: f, lim: lim, exe: &Executable{Size: size}, allowNoSymbols: opts.AllowNoSymbols}
	return x.run(opts.ExpectBuildID)
}

// checkExtents refuses files whose sections or segments end past the end
// of the file (a truncated download or upload), with a message that says so.
func checkExtents(f *elf.File, size int64) error {
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL {
			continue
		}
		if end := s.Offset + s.FileSize; end < s.Offset || end > uint64(size) { //nolint:gosec // G115: size >= 0
			return fmt.Errorf("%w: section %s ends at byte %d, past the end of the file (%d bytes); the file is truncated",
				ErrMalformed, s.Name, end, size)
		}
	}
	for i, p := range f.Progs {
		if end := p.Off + p.Filesz; end < p.Off || end > uint64(size) { //nolint:gosec // G115: size >= 0
			return fmt.Errorf("%w: program header %d ends at byte %d, past the end of the file (%d bytes); the file is truncated",
				ErrMalformed, i, end, size)
		}
	}
	return nil
}

// extractor holds one file's reading state.
type extractor struct {
	f   *elf.File
	lim Limits
	exe *Executable
	// names demangles and interns function names.
	names *names
	// frames hands out inline stacks from shared chunks.
	frames frameArena
	// newGoTable reads the Go pclntab again, for another goroutine.
	newGoTable func() (*gosym.Table, error)
	// allowNoSymbols is Options.AllowNoSymbols.
	allowNoSymbols bool
}

func (x *extractor) run(expect string) (*Executable, error) {
	exe := x.exe
	gnu := gnuBuildID(x.f)
	exe.GoBuildID = goBuildID(x.f)
	exe.BuildID = gnu
	if exe.BuildID == "" {
		exe.BuildID = exe.GoBuildID
	}
	if exe.BuildID == "" {
		return nil, fmt.Errorf("%w: the file has no GNU build id note (.note.gnu.build-id) and no Go build id; "+
			"link it with a build id (gcc and clang: -Wl,--build-id), since symbols are stored and found by it", ErrNoBuildID)
	}
	if expect != "" && !strings.EqualFold(expect, exe.BuildID) && !strings.EqualFold(expect, gnu) && !strings.EqualFold(expect, exe.GoBuildID) {
		return nil, fmt.Errorf("%w: the file's build id is %s, not %s", ErrBuildIDMismatch, exe.BuildID, strings.ToLower(expect))
	}
	for _, p := range x.f.Progs {
		if p.Type == elf.PT_LOAD {
			exe.Segments = append(exe.Segments, Segment{
				Offset: p.Off, Vaddr: p.Vaddr, Filesz: p.Filesz, Memsz: p.Memsz, Exec: p.Flags&elf.PF_X != 0,
			})
		}
	}
	x.names = newNames()
	x.exe.HasGoPclntab = x.pclntabSection() != nil
	st, err := x.symtabRanges()
	if err != nil {
		return nil, err
	}
	dw, err := x.dwarfRanges()
	if err != nil {
		return nil, err
	}
	// A Go binary's pclntab names its functions as the Go tools do
	// ("runtime.gogo", where the ELF symbol is "runtime.gogo.abi0") and
	// gives lines for code DWARF does not describe (assembly,
	// autogenerated wrappers), read only there when DWARF is present.
	physical := st
	var gp []Range
	if tab := x.goTable(); tab != nil {
		names, err := x.goFuncRanges(tab)
		if err != nil {
			return nil, err
		}
		if len(names) > 0 {
			physical = names
		}
		if len(dw) > 0 {
			// Go's DWARF has no line rows for autogenerated code (wrappers,
			// package init), where the pclntab says "<autogenerated>:1".
			dw = slices.DeleteFunc(dw, func(r Range) bool {
				return len(r.Frames) == 1 && r.Frames[0].Line == 0 && r.Frames[0].File == ""
			})
		}
		if gp, err = x.goLineRanges(tab, dw); err != nil {
			return nil, err
		}
	}
	var sets [][]Range
	if len(dw) > 0 {
		// Code DWARF has lines for but no function (assembly) is named by
		// the symbol table, or left out.
		named := slices.DeleteFunc(x.outermostFromSymtab(dw, physical), func(r Range) bool {
			return r.Frames[len(r.Frames)-1].Function == ""
		})
		sets = append(sets, named)
	}
	sets = append(sets, gp, st)
	exe.Ranges = merge(sets)
	if len(exe.Ranges) > x.lim.MaxRanges {
		return nil, fmt.Errorf("%w: %d, the limit is %d", ErrTooManyRanges, len(exe.Ranges), x.lim.MaxRanges)
	}
	if len(exe.Ranges) == 0 && !x.allowNoSymbols {
		return nil, fmt.Errorf("%w: the file has no function symbols, DWARF or Go pclntab (stripped?); "+
			"upload its separate debug file or an unstripped copy", ErrNoSymbols)
	}
	return exe, nil
}

// outermostFromSymtab names the outermost level of DWARF ranges after the
// function symbol that covers them, when there is one, as llvm-symbolizer
// does: the symbol table names the physical function (a compiler's clone
// such as "f(int) (.constprop.0)" or "f(int) (.cold)", where DWARF names
// only its origin). Both inputs are sorted and non-overlapping.
func (x *extractor) outermostFromSymtab(dw, st []Range) []Range {
	if len(st) == 0 {
		return dw
	}
	out := make([]Range, 0, len(dw))
	emit := func(start, end uint64, frames []Frame, name string) {
		if last := len(frames) - 1; frames[last].Function != name {
			renamed := x.frames.alloc(len(frames))
			copy(renamed, frames)
			renamed[last].Function = name
			frames = renamed
		}
		out = append(out, Range{Start: start, End: end, Frames: frames})
	}
	j := 0
	for _, r := range dw {
		for j < len(st) && st[j].End <= r.Start {
			j++
		}
		start := r.Start
		outer := r.Frames[len(r.Frames)-1].Function
		for k := j; start < r.End; k++ {
			if k >= len(st) || st[k].Start >= r.End {
				emit(start, r.End, r.Frames, outer)
				break
			}
			if st[k].Start > start {
				emit(start, st[k].Start, r.Frames, outer)
				start = st[k].Start
			}
			end := min(st[k].End, r.End)
			emit(start, end, r.Frames, st[k].Frames[0].Function)
			start = end
		}
	}
	return normalize(out)
}

// maxWarnings bounds the warnings kept for one file.
const maxWarnings = 20

func (x *extractor) warn(format string, args ...any) {
	if len(x.exe.Warnings) < maxWarnings {
		x.exe.Warnings = append(x.exe.Warnings, fmt.Sprintf(format, args...))
	}
}

// inCode reports whether [lo, hi) lies in an executable segment; with no
// program headers (a relocatable object) everything does. It drops the
// debug information of code the linker discarded, which points at 0.
func (x *extractor) inCode(lo, hi uint64) bool {
	if len(x.exe.Segments) == 0 {
		return lo < hi
	}
	for _, s := range x.exe.Segments {
		if s.Exec && lo >= s.Vaddr && hi <= s.Vaddr+s.Memsz && lo < hi {
			return true
		}
	}
	return false
}

// checkRanges fails once a file produces more ranges than allowed.
func (x *extractor) checkRanges(n int) error {
	if n > x.lim.MaxRanges {
		return fmt.Errorf("%w: more than %d", ErrTooManyRanges, x.lim.MaxRanges)
	}
	return nil
}

// merge combines range sets in priority order: each set fills only the
// addresses the sets before it left uncovered. Each set must be sorted
// and non-overlapping.
func merge(sets [][]Range) []Range {
	var out []Range
	for _, set := range sets {
		if len(out) == 0 {
			out = append(out, set...)
			continue
		}
		var filled []Range
		i := 0 // index into out: the first range ending after the current position
		for _, r := range set {
			for i < len(out) && out[i].End <= r.Start {
				i++
			}
			start := r.Start
			for j := i; j < len(out) && out[j].Start < r.End && start < r.End; j++ {
				if out[j].Start > start {
					filled = append(filled, Range{Start: start, End: out[j].Start, Frames: r.Frames})
				}
				start = max(start, out[j].End)
			}
			if start < r.End {
				filled = append(filled, Range{Start: start, End: r.End, Frames: r.Frames})
			}
		}
		out = append(out, filled...)
		slices.SortFunc(out, func(a, b Range) int { return cmpUint64(a.Start, b.Start) })
	}
	return out
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// normalize sorts ranges and removes overlaps (the earlier start wins) and
// merges neighbours with equal stacks.
func normalize(rs []Range) []Range {
	slices.SortStableFunc(rs, func(a, b Range) int { return cmpUint64(a.Start, b.Start) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if r.Start < last.End {
				if r.End <= last.End {
					continue
				}
				r.Start = last.End
			}
			if r.Start == last.End && sameFrames(r.Frames, last.Frames) {
				last.End = r.End
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

func sameFrames(a, b []Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// frameArena hands out frame slices from large shared chunks, so that
// millions of ranges do not cost an allocation each.
type frameArena struct {
	chunk []Frame
}

const arenaChunk = 1 << 16

// alloc returns a slice of n frames.
func (a *frameArena) alloc(n int) []Frame {
	if n > arenaChunk/8 {
		return make([]Frame, n)
	}
	if cap(a.chunk)-len(a.chunk) < n {
		a.chunk = make([]Frame, 0, arenaChunk)
	}
	start := len(a.chunk)
	a.chunk = a.chunk[:start+n]
	return a.chunk[start : start+n : start+n]
}
