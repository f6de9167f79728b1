package symbols_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// extractFile runs symbols.Extract on a file.
func extractFile(t testing.TB, path string) *symbols.Executable {
	t.Helper()
	exe, err := extractPath(path, symbols.Options{})
	require.NoError(t, err, path)
	return exe
}

func extractPath(path string, opts symbols.Options) (*symbols.Executable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return symbols.ExtractWith(f, st.Size(), opts)
}

// lookup returns the inline stack of the range holding va, nil when none.
func lookup(exe *symbols.Executable, va uint64) []symbols.Frame {
	i := sort.Search(len(exe.Ranges), func(i int) bool { return exe.Ranges[i].End > va })
	if i < len(exe.Ranges) && exe.Ranges[i].Start <= va {
		return exe.Ranges[i].Frames
	}
	return nil
}

// checkRangesSorted asserts the ranges' invariant: sorted, non-empty, not
// overlapping, every one with at least one frame.
func checkRangesSorted(t *testing.T, exe *symbols.Executable) {
	t.Helper()
	require.NotEmpty(t, exe.Ranges)
	for i, r := range exe.Ranges {
		require.Less(t, r.Start, r.End, "range %d", i)
		require.NotEmpty(t, r.Frames, "range %d", i)
		if i > 0 {
			require.LessOrEqual(t, exe.Ranges[i-1].End, r.Start, "ranges %d and %d overlap", i-1, i)
		}
	}
}

// sameFile compares a stored file name with the oracle's: equal once
// cleaned (debug/dwarf joins directory and name with path.Join, which
// resolves "dir/../"; llvm-symbolizer prints the parts as they are), or
// equal base names when one of them is relative (a relative compile
// directory, as in Debian's packages).
func sameFile(got, want string) bool {
	if got == want || filepath.Clean(got) == filepath.Clean(want) {
		return true
	}
	if filepath.IsAbs(got) && filepath.IsAbs(want) {
		return false
	}
	return filepath.Base(got) == filepath.Base(want)
}

func fmtFrames[F any](frames []F) string {
	var b strings.Builder
	for i, f := range frames {
		if i > 0 {
			b.WriteString(" <- ")
		}
		fmt.Fprintf(&b, "%+v", f)
	}
	return b.String()
}

// compareWithLLVM checks, for every address, the stored inline stack
// against llvm-symbolizer's answer for oracleFile: the same number of
// levels, the same function names and lines, the same files. Addresses
// llvm-symbolizer knows nothing about must have no range. It returns the
// number of addresses compared with a stack of more than one level.
func compareWithLLVM(t *testing.T, exe *symbols.Executable, oracleFile string, addrs []uint64) (inlined int) {
	t.Helper()
	want := demangleLeftovers(t, nativebin.Symbolize(t, oracleFile, addrs))
	var bad []string
	for i, va := range addrs {
		got := lookup(exe, va)
		w := want[i]
		if len(w) == 1 && w[0].Function == "" {
			if got != nil {
				bad = append(bad, fmt.Sprintf("%#x: llvm-symbolizer knows nothing, stored %s", va, fmtFrames(got)))
			}
			continue
		}
		if len(w) > 1 {
			inlined++
		}
		ok := len(got) == len(w)
		for k := 0; ok && k < len(w); k++ {
			ok = got[k].Function == w[k].Function && got[k].Line == w[k].Line && sameFile(got[k].File, w[k].File)
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%#x:\n\tstored %s\n\tllvm   %s", va, fmtFrames(got), fmtFrames(w)))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d addresses differ from llvm-symbolizer on %s; first ones:\n%s", len(bad), len(addrs), oracleFile,
			strings.Join(bad[:min(len(bad), 12)], "\n"))
	}
	return inlined
}

// dwarfAddrs are the addresses checked in a file with DWARF: every
// function's first, middle and last byte, every line-table row's first
// byte and the one after it, and addresses inside every inlined call site.
func dwarfAddrs(t *testing.T, bin nativebin.Binary) []uint64 {
	t.Helper()
	addrs := bin.FuncAddrs()
	for _, a := range bin.LineAddrs(t) {
		addrs = append(addrs, a, a+1)
	}
	addrs = append(addrs, bin.InlinedAddrs(t)...)
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

// TestExtractMatchesLLVMSymbolizer builds C and C++ programs and a shared
// library in several ways and holds the extracted inline stack of each of
// many addresses to llvm-symbolizer's answer for the same file and address.
func TestExtractMatchesLLVMSymbolizer(t *testing.T) {
	nativebin.Require(t, "gcc", "g++", "objcopy", "llvm-symbolizer")
	for _, tc := range []struct {
		name string
		spec nativebin.Spec
	}{
		{"c-pie", nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE}},
		{"c-nopie", nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.NoPIE}},
		{"c-shared", nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared}},
		{"cxx-pie", nativebin.Spec{Sources: nativebin.ProgramCXX, Kind: nativebin.PIE}},
		{"cxx-O0", nativebin.Spec{Sources: nativebin.ProgramCXX, Kind: nativebin.PIE, Flags: []string{"-g", "-O0"}}},
		{"c-dwarf4", nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE, Flags: []string{"-gdwarf-4", "-O2"}}},
		{"c-compressed", nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE, Flags: []string{"-g", "-O2", "-gz"}}},
		{"cxx-O3", nativebin.Spec{Sources: nativebin.ProgramCXX, Kind: nativebin.NoPIE, Flags: []string{"-g", "-O3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bin := nativebin.Build(t, tc.spec)
			addrs := dwarfAddrs(t, bin)

			t.Run("full", func(t *testing.T) {
				exe := extractFile(t, bin.Path)
				checkRangesSorted(t, exe)
				require.Equal(t, bin.BuildID, exe.BuildID)
				require.True(t, exe.HasDwarf)
				require.True(t, exe.HasSymtab)
				require.Empty(t, exe.Warnings)
				inlined := compareWithLLVM(t, exe, bin.Path, addrs)
				if !strings.Contains(tc.name, "O0") {
					require.Positive(t, inlined, "some addresses lie in inlined code")
				}
			})
			t.Run("debug-only", func(t *testing.T) {
				// The separate debug file answers for the code of the
				// original: same build id, same addresses.
				dbg := nativebin.DebugOnly(t, bin)
				exe := extractFile(t, dbg.Path)
				checkRangesSorted(t, exe)
				require.Equal(t, bin.BuildID, exe.BuildID)
				require.True(t, exe.HasDwarf)
				compareWithLLVM(t, exe, bin.Path, addrs)
			})
			t.Run("stripped-plus-debug-file", func(t *testing.T) {
				// What runs is the stripped file; llvm-symbolizer finds its
				// debug file by build id, as a debugger would.
				stripped := nativebin.Stripped(t, bin)
				dbg := nativebin.DebugOnly(t, bin)
				dir := nativebin.DebugDir(t, dbg)
				want := nativebin.SymbolizeWith(t, stripped.Path, addrs, "--debug-file-directory="+dir)
				// Code without DWARF (the C runtime's _start) is named by
				// the debug file's .symtab, which llvm-symbolizer does not
				// read for a stripped file: there the original file answers.
				// The same holds for the outermost function's name, which
				// llvm-symbolizer takes from the symbol table when it has
				// one ("main.cold", a part of main the compiler moved) and
				// from DWARF otherwise ("main"): the store has the debug
				// file's .symtab, so it answers as for the original file.
				full := nativebin.Symbolize(t, bin.Path, addrs)
				for i := range want {
					if len(want[i]) == 1 && want[i][0].Function == "" || sameBelowOutermost(want[i], full[i]) {
						want[i] = full[i]
					}
				}
				exe := extractFile(t, dbg.Path)
				require.Equal(t, nativebin.ReadBuildID(t, stripped.Path), exe.BuildID)
				compareFrames(t, exe, addrs, want)
			})
			t.Run("symtab-only", func(t *testing.T) {
				nodebug := nativebin.NoDebug(t, bin)
				exe := extractFile(t, nodebug.Path)
				checkRangesSorted(t, exe)
				require.False(t, exe.HasDwarf)
				require.True(t, exe.HasSymtab)
				for _, r := range exe.Ranges {
					require.Len(t, r.Frames, 1)
					require.Empty(t, r.Frames[0].File)
				}
				// Inside sized function symbols llvm-symbolizer names the
				// symbol too (past their end it names the nearest one
				// below, which the store does not).
				compareWithLLVM(t, exe, nodebug.Path, bin.FuncAddrs())
			})
		})
	}
}

// demangleLeftovers replaces the names llvm-symbolizer 14 could not
// demangle (it prints them mangled) with c++filt's demangling, the outside
// oracle for those.
func demangleLeftovers(t *testing.T, answers [][]nativebin.Frame) [][]nativebin.Frame {
	t.Helper()
	var names []string
	for _, frames := range answers {
		for _, f := range frames {
			if strings.HasPrefix(f.Function, "_Z") {
				names = append(names, f.Function)
			}
		}
	}
	if len(names) == 0 {
		return answers
	}
	demangled := nativebin.Cxxfilt(t, names)
	k := 0
	for i := range answers {
		for j := range answers[i] {
			if strings.HasPrefix(answers[i][j].Function, "_Z") {
				answers[i][j].Function = demangled[k]
				k++
			}
		}
	}
	return answers
}

// sameBelowOutermost reports whether two answers differ at most in the
// outermost function's name.
func sameBelowOutermost(a, b []nativebin.Frame) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	last := len(a) - 1
	return slices.Equal(a[:last], b[:last]) && a[last].File == b[last].File && a[last].Line == b[last].Line
}

// compareFrames is compareWithLLVM with the oracle's answers given.
func compareFrames(t *testing.T, exe *symbols.Executable, addrs []uint64, want [][]nativebin.Frame) {
	t.Helper()
	want = demangleLeftovers(t, want)
	var bad []string
	for i, va := range addrs {
		got, w := lookup(exe, va), want[i]
		if len(w) == 1 && w[0].Function == "" {
			if got != nil {
				bad = append(bad, fmt.Sprintf("%#x: llvm-symbolizer knows nothing, stored %s", va, fmtFrames(got)))
			}
			continue
		}
		ok := len(got) == len(w)
		for k := 0; ok && k < len(w); k++ {
			ok = got[k].Function == w[k].Function && got[k].Line == w[k].Line && sameFile(got[k].File, w[k].File)
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%#x:\n\tstored %s\n\tllvm   %s", va, fmtFrames(got), fmtFrames(w)))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d addresses differ from llvm-symbolizer; first ones:\n%s", len(bad), len(addrs),
			strings.Join(bad[:min(len(bad), 12)], "\n"))
	}
}

// TestExtractStrippedSharedLibrary: a stripped shared library keeps its
// exported functions in .dynsym, which name their code.
func TestExtractStrippedSharedLibrary(t *testing.T) {
	nativebin.Require(t, "gcc", "objcopy", "llvm-symbolizer")
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	stripped := nativebin.Stripped(t, bin)
	exe := extractFile(t, stripped.Path)
	require.False(t, exe.HasSymtab)
	require.True(t, exe.HasDynsym)
	require.False(t, exe.HasDwarf)
	require.Equal(t, bin.BuildID, exe.BuildID)
	compareWithLLVM(t, exe, stripped.Path, bin.Inside(t, nativebin.FuncLibEntry))
	// The static helper is in no table the stripped file keeps.
	require.Nil(t, lookup(exe, bin.Func(t, nativebin.FuncLibHelper).Addr))
}

// TestExtractCXXNames: demangled names, as llvm-symbolizer prints them.
func TestExtractCXXNames(t *testing.T) {
	nativebin.Require(t, "g++", "objcopy")
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramCXX, Kind: nativebin.PIE})
	for _, mode := range []struct {
		name string
		path string
	}{{"dwarf", bin.Path}, {"symtab", nativebin.NoDebug(t, bin).Path}} {
		exe := extractFile(t, mode.path)
		for sym, want := range map[string]string{
			nativebin.SymBoxArea: "shapes::Box<int>::area(int) const",
			nativebin.SymScale:   "shapes::detail::scale(int, double)",
			nativebin.SymTotal:   "int shapes::total<int>(std::vector<shapes::Box<int>, std::allocator<shapes::Box<int> > > const&)",
		} {
			frames := lookup(exe, bin.Func(t, sym).Addr)
			require.NotEmpty(t, frames, "%s %s", mode.name, sym)
			require.Equal(t, want, frames[len(frames)-1].Function, mode.name)
		}
	}
}

// TestExtractGoMatchesAddr2line builds a Go program, with and without
// DWARF, and holds the extracted function and line of each of its
// functions' addresses to go tool addr2line's (which reads the pclntab:
// the outermost function, the innermost file and line).
func TestExtractGoMatchesAddr2line(t *testing.T) {
	nativebin.Require(t, "go")
	for _, tc := range []struct {
		name  string
		flags []string
	}{{"dwarf", nil}, {"pclntab-only", []string{"-ldflags=-w"}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bin := nativebin.BuildGo(t, nativebin.ProgramGo, tc.flags...)
			exe := extractFile(t, bin.Path)
			checkRangesSorted(t, exe)
			require.Equal(t, bin.BuildID, exe.BuildID)
			require.Equal(t, nativebin.ReadGoBuildID(t, bin.Path), exe.GoBuildID)
			require.True(t, exe.HasGoPclntab)
			require.Equal(t, tc.flags == nil, exe.HasDwarf)
			var addrs []uint64
			for name, s := range bin.Syms {
				// Every main.* and runtime function's start, middle and end.
				if strings.HasPrefix(name, "main.") || strings.HasPrefix(name, "runtime.") {
					addrs = append(addrs, s.Addr, s.Addr+s.Size/2, s.Addr+s.Size-1)
				}
			}
			slices.Sort(addrs)
			require.Greater(t, len(addrs), 300)
			want := nativebin.GoAddr2line(t, bin.Path, addrs)
			var bad []string
			for i, va := range addrs {
				got := lookup(exe, va)
				w := want[i]
				if w.Function == "?" {
					continue // padding between functions
				}
				if len(got) == 0 || got[len(got)-1].Function != w.Function || got[0].Line != w.Line || !sameFile(got[0].File, w.File) {
					bad = append(bad, fmt.Sprintf("%#x: stored %s, addr2line %+v", va, fmtFrames(got), w))
				}
			}
			if len(bad) > 0 {
				t.Errorf("%d of %d addresses differ from go tool addr2line; first ones:\n%s", len(bad), len(addrs),
					strings.Join(bad[:min(len(bad), 12)], "\n"))
			}
			spin := lookup(exe, bin.Func(t, nativebin.GoFuncSpin).Addr)
			require.Equal(t, nativebin.GoFuncSpin, spin[len(spin)-1].Function)
		})
	}
}

// TestExtractBadInput: every kind of bad file gets its named error, and
// nothing panics.
func TestExtractBadInput(t *testing.T) {
	nativebin.Require(t, "gcc", "objcopy")
	good := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	data, err := os.ReadFile(good.Path)
	require.NoError(t, err)
	noID := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, NoBuildID: true})
	noIDData, err := os.ReadFile(noID.Path)
	require.NoError(t, err)
	strippedData, err := os.ReadFile(nativebin.Stripped(t, good).Path)
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		data []byte
		opts symbols.Options
		want error
	}{
		{"empty", nil, symbols.Options{}, symbols.ErrNotELF},
		{"text", []byte("#!/bin/sh\necho hello\n"), symbols.Options{}, symbols.ErrNotELF},
		{"magic-only", []byte("\x7fELF"), symbols.Options{}, symbols.ErrMalformed},
		{"header-only", data[:64], symbols.Options{}, symbols.ErrMalformed},
		{"truncated-half", data[:len(data)/2], symbols.Options{}, symbols.ErrMalformed},
		{"truncated-end", data[:len(data)-1], symbols.Options{}, symbols.ErrMalformed},
		{"no-build-id", noIDData, symbols.Options{}, symbols.ErrNoBuildID},
		{"too-large", data, symbols.Options{Limits: symbols.Limits{MaxFileBytes: int64(len(data) - 1)}}, symbols.ErrTooLarge},
		{"build-id-mismatch", data, symbols.Options{ExpectBuildID: strings.Repeat("ab", 20)}, symbols.ErrBuildIDMismatch},
		{"no-symbols", strippedData, symbols.Options{}, symbols.ErrNoSymbols},
		{"too-many-ranges", data, symbols.Options{Limits: symbols.Limits{MaxRanges: 2}}, symbols.ErrTooManyRanges},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe, err := symbols.ExtractWith(bytes.NewReader(tc.data), int64(len(tc.data)), tc.opts)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, exe)
			require.NotEmpty(t, err.Error())
		})
	}

	t.Run("build-id-match-any-case", func(t *testing.T) {
		exe, err := symbols.ExtractWith(bytes.NewReader(data), int64(len(data)), symbols.Options{ExpectBuildID: strings.ToUpper(good.BuildID)})
		require.NoError(t, err)
		require.Equal(t, good.BuildID, exe.BuildID)
	})
	t.Run("at-the-limit", func(t *testing.T) {
		_, err := symbols.ExtractWith(bytes.NewReader(data), int64(len(data)), symbols.Options{Limits: symbols.Limits{MaxFileBytes: int64(len(data))}})
		require.NoError(t, err)
	})
	t.Run("2GB-default-limit", func(t *testing.T) {
		// The default limit refuses a 2 GB file by its size alone, before
		// reading a byte of it.
		_, err := symbols.Extract(bytes.NewReader(nil), 2<<30)
		require.ErrorIs(t, err, symbols.ErrTooLarge)
	})
}

// TestExtractSegments: the PT_LOAD segments, with which symbols.VA maps a
// mapping's address into the file; a PIE's code lies at its virtual
// address, a non-PIE's above 0x400000.
func TestExtractSegments(t *testing.T) {
	nativebin.Require(t, "gcc")
	for _, kind := range []nativebin.Kind{nativebin.PIE, nativebin.NoPIE, nativebin.Shared} {
		t.Run(kind.String(), func(t *testing.T) {
			src := nativebin.ProgramC
			fn := nativebin.FuncWorkOuter
			if kind == nativebin.Shared {
				src, fn = nativebin.LibraryC, nativebin.FuncLibEntry
			}
			bin := nativebin.Build(t, nativebin.Spec{Sources: src, Kind: kind})
			exe := extractFile(t, bin.Path)
			var exec *symbols.Segment
			for i := range exe.Segments {
				if exe.Segments[i].Exec {
					exec = &exe.Segments[i]
				}
			}
			require.NotNil(t, exec)
			sym := bin.Func(t, fn)
			// A process that mapped the executable segment at 0x7f0000001000
			// from its file offset: the frame's address there maps back.
			const base = 0x7f0000001000
			addr := base + (sym.Addr - exec.Vaddr)
			va, ok := symbols.VA(addr, base, exec.Offset, exe.Segments)
			require.True(t, ok)
			require.Equal(t, sym.Addr, va)
			if kind == nativebin.NoPIE {
				require.GreaterOrEqual(t, sym.Addr, uint64(0x400000))
			}
		})
	}
}
