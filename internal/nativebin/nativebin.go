// Package nativebin builds small native programs in tests and asks outside
// tools what their addresses mean: the oracle that symbol extraction and
// query-time resolution are checked against.
//
// Building (gcc and g++, every file linked with -Wl,--build-id unless the
// Spec says otherwise, into t.TempDir()):
//
//	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
//	bin.Path        // the file
//	bin.BuildID     // GNU build id, lowercase hex, from its .note.gnu.build-id
//	bin.Func(t, nativebin.FuncWorkOuter) // Sym{Name, Addr, Size} from the file's own symbol table
//	bin.Inside(t, nativebin.FuncWorkOuter) // start, an address in the middle, the last byte
//	bin.InlinedAddrs(t)  // addresses inside DW_TAG_inlined_subroutine ranges (DWARF)
//	bin.LineAddrs(t)     // every address the DWARF line table starts a row at
//
// Kinds: PIE and NoPIE executables, Shared libraries (-shared -fPIC). The
// default flags are -g -O2; ProgramC, ProgramCXX and LibraryC carry
// always_inline helpers, so their DWARF has inlined subroutines (two levels
// deep in ProgramC, across a header), and ProgramCXX has namespaces and
// templates whose names need demangling.
//
// Derived files, each a new Binary with the same BuildID and symbol table
// read from the original:
//
//	nativebin.Stripped(t, bin)   // objcopy --strip-all: .dynsym only (no .symtab, no DWARF)
//	nativebin.NoDebug(t, bin)    // objcopy --strip-debug: .symtab, no DWARF
//	nativebin.DebugOnly(t, bin)  // objcopy --only-keep-debug: the separate debug file
//
// Oracles:
//
//	nativebin.Symbolize(t, path, addrs) // llvm-symbolizer --output-style=JSON --inlines --demangle
//	nativebin.SymbolizeWith(t, stripped, addrs, "--debug-file-directory="+nativebin.DebugDir(t, dbg))
//	nativebin.GoAddr2line(t, path, addrs) // go tool addr2line, for Go binaries (no inline levels)
//	nativebin.Cxxfilt(t, names)           // c++filt, for names llvm-symbolizer 14 leaves mangled
//
// Symbolize returns, per address, the inline stack innermost first, as
// llvm-symbolizer prints it (Function "" and Line 0 where it knows
// nothing). BuildGo builds a Go program (go build, default flags) and reads
// its Go build id and symbols the same way.
//
// Every function skips the test, with the reason, when a tool it needs
// (gcc, g++, objcopy, llvm-symbolizer, go) is not installed.
// Tests own the files in their TempDir; nothing here is shared between
// tests.
package nativebin

import (
	"bufio"
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Kind is what Build links.
type Kind int

// Kinds of files.
const (
	// PIE is a position-independent executable (-fPIE -pie).
	PIE Kind = iota
	// NoPIE is an executable at a fixed address (-fno-pie -no-pie).
	NoPIE
	// Shared is a shared library (-shared -fPIC).
	Shared
)

func (k Kind) String() string {
	switch k {
	case PIE:
		return "pie"
	case NoPIE:
		return "nopie"
	case Shared:
		return "shared"
	}
	return "kind" + strconv.Itoa(int(k))
}

// DefaultFlags are the compiler flags when Spec.Flags is nil.
var DefaultFlags = []string{"-g", "-O2"}

// Spec says what to build.
type Spec struct {
	// Name is the output file's name; default "prog" ("libprog.so" for
	// Shared).
	Name string
	// Sources maps file names to their text; .c files are compiled with
	// gcc, .cc/.cpp/.cxx with g++ (which then also links); others (headers)
	// are only written.
	Sources map[string]string
	// Kind is PIE, NoPIE or Shared.
	Kind Kind
	// Flags are the compiler flags; nil means DefaultFlags.
	Flags []string
	// NoBuildID links with --build-id=none.
	NoBuildID bool
}

// Sym is one function symbol of the built file.
type Sym struct {
	// Name as in the symbol table (mangled for C++).
	Name string
	// Addr and Size are st_value and st_size: ELF virtual addresses.
	Addr, Size uint64
}

// Binary is a built file.
type Binary struct {
	// Path is the file.
	Path string
	// Kind is what was built.
	Kind Kind
	// BuildID is the GNU build id in lowercase hex (for BuildGo: the Go
	// build id when there is no GNU one); "" when the file has none.
	BuildID string
	// Syms are the function symbols (STT_FUNC with a size) of the
	// unstripped file, by name.
	Syms map[string]Sym
}

// Require skips the test unless every named tool is on PATH.
func Require(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("nativebin: %s is not installed (%v); CI installs it with scripts/setup.sh", tool, err)
		}
	}
}

func run(t testing.TB, dir, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...) //nolint:gosec // G204: test tools with the test's own files
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nativebin: %s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// Build compiles and links spec in a new t.TempDir() and reads the
// result's build id and function symbols.
func Build(t testing.TB, spec Spec) Binary {
	t.Helper()
	dir := t.TempDir()
	var srcs []string
	cxx := false
	for _, name := range slices.Sorted(maps.Keys(spec.Sources)) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(spec.Sources[name]), 0o600); err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(name) {
		case ".c":
			srcs = append(srcs, name)
		case ".cc", ".cpp", ".cxx":
			srcs = append(srcs, name)
			cxx = true
		}
	}
	if len(srcs) == 0 {
		t.Fatal("nativebin: Spec.Sources has no .c or .cc file")
	}
	compiler := "gcc"
	if cxx {
		compiler = "g++"
	}
	Require(t, compiler)
	out := spec.Name
	if out == "" {
		out = "prog"
		if spec.Kind == Shared {
			out = "libprog.so"
		}
	}
	args := slices.Clone(spec.Flags)
	if spec.Flags == nil {
		args = slices.Clone(DefaultFlags)
	}
	switch spec.Kind {
	case PIE:
		args = append(args, "-fPIE", "-pie")
	case NoPIE:
		args = append(args, "-fno-pie", "-no-pie")
	case Shared:
		args = append(args, "-fPIC", "-shared")
	}
	if spec.NoBuildID {
		args = append(args, "-Wl,--build-id=none")
	} else {
		args = append(args, "-Wl,--build-id")
	}
	args = append(args, "-o", out)
	args = append(args, srcs...)
	run(t, dir, compiler, args...)
	path := filepath.Join(dir, out)
	return Binary{Path: path, Kind: spec.Kind, BuildID: ReadBuildID(t, path), Syms: ReadSyms(t, path)}
}

// derive writes a derived copy of b next to a new name with a tool.
func derive(t testing.TB, b Binary, suffix, tool string, args ...string) Binary {
	t.Helper()
	Require(t, tool)
	out := filepath.Join(t.TempDir(), filepath.Base(b.Path)+suffix)
	run(t, "", tool, append(args, b.Path, out)...)
	return Binary{Path: out, Kind: b.Kind, BuildID: b.BuildID, Syms: b.Syms}
}

// Stripped returns a copy of b made by objcopy --strip-all (as strip does): the build id note
// and .dynsym stay; .symtab and DWARF go.
func Stripped(t testing.TB, b Binary) Binary {
	t.Helper()
	return derive(t, b, ".stripped", "objcopy", "--strip-all")
}

// NoDebug returns a copy of b made by objcopy --strip-debug: .symtab stays,
// DWARF goes.
func NoDebug(t testing.TB, b Binary) Binary {
	t.Helper()
	return derive(t, b, ".nodebug", "objcopy", "--strip-debug")
}

// DebugOnly returns b's separate debug file, made by objcopy
// --only-keep-debug: DWARF, .symtab and the notes, with the code sections
// as NOBITS.
func DebugOnly(t testing.TB, b Binary) Binary {
	t.Helper()
	return derive(t, b, ".debug", "objcopy", "--only-keep-debug")
}

// openELF opens an ELF file for the rest of the test.
func openELF(t testing.TB, path string) *elf.File {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("nativebin: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// ReadBuildID returns the file's GNU build id (lowercase hex), "" when it
// has none. It reads the notes itself (not through pkg/symbols).
func ReadBuildID(t testing.TB, path string) string {
	t.Helper()
	f := openELF(t, path)
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			t.Fatalf("nativebin: %s: section %s: %v", path, s.Name, err)
		}
		for len(data) >= 12 {
			namesz, descsz, typ := f.ByteOrder.Uint32(data), f.ByteOrder.Uint32(data[4:]), f.ByteOrder.Uint32(data[8:])
			data = data[12:]
			nameEnd := int((namesz + 3) &^ 3)
			descEnd := nameEnd + int((descsz+3)&^3)
			if descEnd > len(data) {
				break
			}
			if typ == 3 && string(bytes.TrimRight(data[:namesz], "\x00")) == "GNU" {
				return hex.EncodeToString(data[nameEnd : nameEnd+int(descsz)])
			}
			data = data[descEnd:]
		}
	}
	return ""
}

// ReadSyms returns the file's sized function symbols by name: .symtab, or
// .dynsym when there is none.
func ReadSyms(t testing.TB, path string) map[string]Sym {
	t.Helper()
	f := openELF(t, path)
	syms, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		syms, err = f.DynamicSymbols()
	}
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		t.Fatalf("nativebin: %s: symbols: %v", path, err)
	}
	out := map[string]Sym{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Value != 0 {
			out[s.Name] = Sym{Name: s.Name, Addr: s.Value, Size: s.Size}
		}
	}
	return out
}

// Func returns the named function symbol (the symbol table's name, mangled
// for C++), failing the test when there is none.
func (b Binary) Func(t testing.TB, name string) Sym {
	t.Helper()
	s, ok := b.Syms[name]
	if !ok {
		t.Fatalf("nativebin: %s has no function symbol %q (has %v)", b.Path, name, slices.Sorted(maps.Keys(b.Syms)))
	}
	return s
}

// Inside returns three addresses inside the named function: its first
// byte, one in the middle and its last byte.
func (b Binary) Inside(t testing.TB, name string) []uint64 {
	t.Helper()
	s := b.Func(t, name)
	return []uint64{s.Addr, s.Addr + s.Size/2, s.Addr + s.Size - 1}
}

// FuncAddrs returns addresses inside every function symbol: each one's
// first byte, middle and last byte, sorted.
func (b Binary) FuncAddrs() []uint64 {
	var out []uint64
	for _, s := range b.Syms {
		out = append(out, s.Addr, s.Addr+s.Size/2, s.Addr+s.Size-1)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// InlinedAddrs returns addresses inside inlined call sites: for every
// DW_TAG_inlined_subroutine range its first byte and its middle, sorted.
// Empty when the file has no DWARF.
func (b Binary) InlinedAddrs(t testing.TB) []uint64 {
	t.Helper()
	var out []uint64
	b.walkDWARF(t, func(d *dwarf.Data, e *dwarf.Entry) {
		if e.Tag != dwarf.TagInlinedSubroutine {
			return
		}
		ranges, err := d.Ranges(e)
		if err != nil {
			t.Fatalf("nativebin: %s: ranges of an inlined subroutine: %v", b.Path, err)
		}
		for _, r := range ranges {
			if r[1] > r[0] && r[0] != 0 {
				out = append(out, r[0], r[0]+(r[1]-r[0])/2)
			}
		}
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// LineAddrs returns every address at which the DWARF line table starts a
// row (not the end-of-sequence rows), sorted. Empty when the file has no
// DWARF.
func (b Binary) LineAddrs(t testing.TB) []uint64 {
	t.Helper()
	var out []uint64
	b.walkDWARF(t, func(d *dwarf.Data, e *dwarf.Entry) {
		if e.Tag != dwarf.TagCompileUnit {
			return
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			return
		}
		var le dwarf.LineEntry
		for {
			if err := lr.Next(&le); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("nativebin: %s: line table: %v", b.Path, err)
				}
				break
			}
			if !le.EndSequence && le.Address != 0 {
				out = append(out, le.Address)
			}
		}
	})
	slices.Sort(out)
	return slices.Compact(out)
}

func (b Binary) walkDWARF(t testing.TB, visit func(*dwarf.Data, *dwarf.Entry)) {
	t.Helper()
	f := openELF(t, b.Path)
	d, err := f.DWARF()
	if err != nil {
		return // no DWARF
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatalf("nativebin: %s: DWARF: %v", b.Path, err)
		}
		if e == nil {
			return
		}
		visit(d, e)
	}
}

// Frame is one level of an oracle's answer.
type Frame struct {
	// Function is the (demangled) function name; "" when unknown
	// (llvm-symbolizer) or "?" (go tool addr2line).
	Function string
	// File is the source file as the tool prints it ("" when unknown);
	// Line is 0 when unknown.
	File string
	Line uint32
}

// llvmSymbol is one level of llvm-symbolizer's JSON answer.
type llvmSymbol struct {
	FunctionName string
	FileName     string
	Line         uint32
}

// Symbolize asks llvm-symbolizer (--output-style=JSON, inlined frames and
// demangling on) what each address of the file is: per address, the inline
// stack innermost first. Addresses are the file's ELF virtual addresses.
func Symbolize(t testing.TB, path string, addrs []uint64) [][]Frame {
	t.Helper()
	return SymbolizeWith(t, path, addrs)
}

// SymbolizeWith is Symbolize with more llvm-symbolizer flags, e.g.
// "--debug-file-directory="+DebugDir(t, debugFile) for a stripped file
// whose debug file llvm-symbolizer should find by build id.
func SymbolizeWith(t testing.TB, path string, addrs []uint64, flags ...string) [][]Frame {
	t.Helper()
	Require(t, "llvm-symbolizer")
	if len(addrs) == 0 {
		return nil
	}
	var in strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&in, "0x%x\n", a)
	}
	args := append([]string{"--output-style=JSON", "--inlines", "--demangle", "--functions=linkage"}, flags...)
	cmd := exec.CommandContext(t.Context(), "llvm-symbolizer", append(args, "--obj="+path)...) //nolint:gosec // G204: the test's own file
	cmd.Stdin = strings.NewReader(in.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nativebin: llvm-symbolizer %s: %v\n%s", path, err, stderr.String())
	}
	var res [][]Frame
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var answer struct {
			Address string
			Error   *struct{ Message string }
			Symbol  []llvmSymbol
		}
		if err := json.Unmarshal(line, &answer); err != nil {
			t.Fatalf("nativebin: llvm-symbolizer answer %q: %v", line, err)
		}
		if answer.Error != nil {
			t.Fatalf("nativebin: llvm-symbolizer %s %s: %s", path, answer.Address, answer.Error.Message)
		}
		frames := make([]Frame, 0, len(answer.Symbol))
		for _, s := range answer.Symbol {
			frames = append(frames, Frame{Function: s.FunctionName, File: s.FileName, Line: s.Line})
		}
		res = append(res, frames)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(res) != len(addrs) {
		t.Fatalf("nativebin: llvm-symbolizer answered %d addresses of %d", len(res), len(addrs))
	}
	return res
}

// Cxxfilt demangles C++ names with binutils' c++filt, one answer per
// name (a name it cannot demangle comes back as it is). llvm-symbolizer 14
// leaves some valid names mangled (expressions in template arguments,
// such as std::enable_if<...::value>); c++filt is then the oracle.
func Cxxfilt(t testing.TB, names []string) []string {
	t.Helper()
	Require(t, "c++filt")
	cmd := exec.CommandContext(t.Context(), "c++filt")
	cmd.Stdin = strings.NewReader(strings.Join(names, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nativebin: c++filt: %v", err)
	}
	res := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(res) != len(names) {
		t.Fatalf("nativebin: c++filt answered %d names for %d", len(res), len(names))
	}
	return res
}

// DebugDir returns a new directory laid out as a debug-file directory
// (.build-id/xx/rest.debug, as in /usr/lib/debug) holding copies of the
// given debug files, for llvm-symbolizer --debug-file-directory.
func DebugDir(t testing.TB, debugFiles ...Binary) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range debugFiles {
		if len(b.BuildID) < 3 {
			t.Fatalf("nativebin: %s has no build id", b.Path)
		}
		data, err := os.ReadFile(b.Path)
		if err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(dir, ".build-id", b.BuildID[:2])
		if err := os.MkdirAll(sub, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, b.BuildID[2:]+".debug"), data, 0o600); err != nil { //nolint:gosec // G703: a hex build id under the test's TempDir
			t.Fatal(err)
		}
	}
	return dir
}

// BuildGo builds a Go program from one main package source file (go build
// with default flags, so with DWARF and the pclntab) in a new TempDir, and
// reads its build ids and symbols. BuildID is the GNU build id when the
// linker wrote one, else the Go build id (see ReadGoBuildID).
func BuildGo(t testing.TB, source string, extraArgs ...string) Binary {
	t.Helper()
	Require(t, "go")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(source), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module nativebinprog\n\ngo 1.22\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"build", "-o", "prog"}, extraArgs...)
	cmd := exec.CommandContext(t.Context(), "go", args...) //nolint:gosec // G204: go build of the test's own source
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nativebin: go build: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "prog")
	id := ReadBuildID(t, path)
	if id == "" {
		id = ReadGoBuildID(t, path)
	}
	return Binary{Path: path, Kind: NoPIE, BuildID: id, Syms: ReadSyms(t, path)}
}

// ReadGoBuildID returns the Go build id from the file's .note.go.buildid
// note, "" when it has none.
func ReadGoBuildID(t testing.TB, path string) string {
	t.Helper()
	f := openELF(t, path)
	s := f.Section(".note.go.buildid")
	if s == nil {
		return ""
	}
	data, err := s.Data()
	if err != nil || len(data) < 16 {
		return ""
	}
	namesz, descsz := binary.LittleEndian.Uint32(data), binary.LittleEndian.Uint32(data[4:])
	start := 12 + int((namesz+3)&^3)
	if start+int(descsz) > len(data) {
		return ""
	}
	return string(data[start : start+int(descsz)])
}

// GoAddr2line asks go tool addr2line what each address of a Go binary is:
// one frame per address (it reports no inline levels), Function "?" and
// Line 0 when unknown.
func GoAddr2line(t testing.TB, path string, addrs []uint64) []Frame {
	t.Helper()
	Require(t, "go")
	var in strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&in, "0x%x\n", a)
	}
	cmd := exec.CommandContext(t.Context(), "go", "tool", "addr2line", path) //nolint:gosec // G204: the test's own file
	cmd.Stdin = strings.NewReader(in.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nativebin: go tool addr2line %s: %v\n%s", path, err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2*len(addrs) {
		t.Fatalf("nativebin: go tool addr2line answered %d lines for %d addresses", len(lines), len(addrs))
	}
	res := make([]Frame, len(addrs))
	for i := range addrs {
		fn, pos := lines[2*i], lines[2*i+1]
		fr := Frame{Function: fn}
		if k := strings.LastIndexByte(pos, ':'); k >= 0 {
			fr.File = pos[:k]
			if n, err := strconv.ParseUint(pos[k+1:], 10, 32); err == nil {
				fr.Line = uint32(n)
			}
		}
		res[i] = fr
	}
	return res
}
