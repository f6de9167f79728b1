package symbols_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flamehouse/flamehouse/internal/nativebin"
)

// TestExtractMatchesLLVMSymbolizerOnGlibcDebugFiles holds the extraction
// of real distribution debug files — glibc's, from Debian's libc6-dbg
// (/usr/lib/debug/.build-id, gcc -O2 with inlining everywhere) — to
// llvm-symbolizer on the same files: sampled function symbols and
// line-table rows of each, of the three largest and three smallest files
// (FLAMEHOUSE_SYMBOLS_ALL_DEBUG_FILES=1: of every file). Skipped when
// libc6-dbg is not installed.
func TestExtractMatchesLLVMSymbolizerOnGlibcDebugFiles(t *testing.T) {
	nativebin.Require(t, "llvm-symbolizer")
	files, _ := filepath.Glob("/usr/lib/debug/.build-id/*/*.debug")
	if len(files) == 0 {
		t.Skip("no debug files under /usr/lib/debug/.build-id (Debian package libc6-dbg)")
	}
	// The largest files (libc.so.6's is first), and a few small ones.
	slices.SortFunc(files, func(a, b string) int { return int(fileSize(b) - fileSize(a)) })
	picked := slices.Concat(files[:min(3, len(files))], files[max(0, len(files)-3):])
	picked = slices.Compact(picked)
	if os.Getenv("FLAMEHOUSE_SYMBOLS_ALL_DEBUG_FILES") != "" {
		picked = files // every installed debug file (slow)
	}
	for _, path := range picked {
		t.Run(filepath.Base(path), func(t *testing.T) {
			bin := nativebin.Binary{Path: path, Syms: nativebin.ReadSyms(t, path)}
			exe := extractFile(t, path)
			checkRangesSorted(t, exe)
			addrs := sample(bin.FuncAddrs(), 1500)
			addrs = append(addrs, sample(bin.LineAddrs(t), 1500)...)
			addrs = append(addrs, sample(bin.InlinedAddrs(t), 1000)...)
			slices.Sort(addrs)
			addrs = slices.Compact(addrs)
			inlined := compareWithLLVM(t, exe, path, addrs)
			t.Logf("%s: %d ranges, %d addresses compared, %d in inlined code", filepath.Base(path), len(exe.Ranges), len(addrs), inlined)
		})
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// sample returns at most n evenly spaced elements.
func sample(xs []uint64, n int) []uint64 {
	if len(xs) <= n {
		return xs
	}
	out := make([]uint64, 0, n)
	for i := range n {
		out = append(out, xs[i*len(xs)/n])
	}
	return out
}
