package debuginfod

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// BenchmarkHostExtraction measures what the host source does for the
// README demo's libraries, each found the way the fetcher finds it (the
// mapping path, or the debug dir by build id) and read by ExtractWith with
// the build id check: libchdb.so (559 MB, .dynsym), Debian's libc.so.6
// (.dynsym) and, when libc6-dbg is installed, libc's debug file (DWARF).
// Files that are not on this host are skipped. Reports the ranges per
// extraction and, with the allocations, the bytes allocated.
func BenchmarkHostExtraction(b *testing.B) {
	const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	chdb, _ := chembed.FindLibrary("")
	libcID := ""
	if exe := extractPath(b, libc, ""); exe != nil {
		libcID = exe.BuildID
	}
	for _, tc := range []struct {
		name, path, artifact string
		dirs                 []string
	}{
		{name: "libchdb.so", path: chdb, artifact: "executable"},
		{name: "libc.so.6", path: libc, artifact: "executable"},
		{name: "libc6-dbg", artifact: "debuginfo", dirs: []string{DefaultDebugDir}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			buildID := libcID
			if tc.path == chdb {
				exe := extractPath(b, chdb, "")
				if exe == nil {
					b.Skip("libchdb.so not found (npm install)")
				}
				buildID = exe.BuildID
			}
			if buildID == "" {
				b.Skip(libc + " not on this host")
			}
			h := &hostSource{dirs: tc.dirs, maxBytes: DefaultMaxFileBytes}
			it := item{key: key{"bench", buildID}, file: tc.path}
			if _, _, release, err := h.open(it, tc.artifact); err != nil {
				b.Skipf("%s: not on this host (%v)", tc.name, err)
			} else {
				release()
			}
			b.ReportAllocs()
			var ranges int
			for b.Loop() {
				file, size, release, err := h.open(it, tc.artifact)
				if err != nil {
					b.Fatal(err)
				}
				exe, err := symbols.ExtractWith(file, size, symbols.Options{ExpectBuildID: buildID, AllowNoSymbols: tc.artifact == "debuginfo"})
				release()
				if err != nil {
					b.Fatal(err)
				}
				ranges = len(exe.Ranges)
			}
			b.ReportMetric(float64(ranges), "ranges")
		})
	}
}

// extractPath reads a file's symbols, nil when it is not there.
func extractPath(b *testing.B, path, buildID string) *symbols.Executable {
	b.Helper()
	if path == "" {
		return nil
	}
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	exe, err := symbols.ExtractWith(f, st.Size(), symbols.Options{ExpectBuildID: buildID})
	if err != nil {
		b.Fatal(err)
	}
	return exe
}
