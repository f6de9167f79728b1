package debuginfod

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// copyFile copies src to dst (created with its directories).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o750))
	require.NoError(t, os.WriteFile(dst, data, 0o600))
}

// TestHostIndex: files found by base name and build id in the search dirs
// and among this process's mapped files; never by base name alone.
func TestHostIndex(t *testing.T) {
	lib := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	other := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	root := t.TempDir()
	// Two files named libprog.so: the library in a multiarch subdirectory,
	// another program's file under the same name in the search dir itself.
	libPath := filepath.Join(root, "x86_64-linux-gnu", "libprog.so")
	copyFile(t, lib.Path, libPath)
	copyFile(t, other.Path, filepath.Join(root, "libprog.so"))
	require.NoError(t, os.Symlink("libprog.so", filepath.Join(root, "x86_64-linux-gnu", "libprog.so.1")))
	deep := filepath.Join(root, "a", "b", "c", "d", "libdeep.so")
	copyFile(t, lib.Path, deep)
	elsewhere := filepath.Join(t.TempDir(), "libmapped.so")
	copyFile(t, lib.Path, elsewhere)
	self, err := os.Executable()
	require.NoError(t, err)
	maps := filepath.Join(t.TempDir(), "maps")
	require.NoError(t, os.WriteFile(maps, []byte(
		"7f0000000000-7f0000001000 r--p 00000000 08:01 42 "+elsewhere+"\n"+
			"7f0000002000-7f0000003000 rw-p 00000000 00:00 0 [heap]\n"+
			"00400000-00401000 r-xp 00000000 08:01 43 "+self+"\n"), 0o600))

	x := newHostIndex([]string{root, root, filepath.Join(root, "missing")})
	x.maps = maps
	for _, tc := range []struct {
		name, buildID, file, want string
	}{
		{"the file with the name and the build id", lib.BuildID, "libprog.so", libPath},
		{"the other file of that name", other.BuildID, "libprog.so", filepath.Join(root, "libprog.so")},
		{"a sender's full path: its base name", lib.BuildID, "/container/usr/lib/libprog.so", libPath},
		{"a link's name", lib.BuildID, "libprog.so.1", libPath},
		{"a name with no file of that build id", "00112233445566778899aabbccddeeff00112233", "libprog.so", ""},
		{"below the depth bound", lib.BuildID, "libdeep.so", ""},
		{"a file this process maps", lib.BuildID, "libmapped.so", elsewhere},
		{"no name", lib.BuildID, "", ""},
		{"this process's own executable is not listed", readBuildID(self), filepath.Base(self), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := x.lookup(tc.buildID, tc.file)
			if tc.want == "" {
				require.ErrorIs(t, err, errNotFound)
				return
			}
			require.NoError(t, err)
			want, err := filepath.EvalSymlinks(tc.want)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
	require.Len(t, x.buildIDs, 3, "each candidate's build id is read once: the two libprog.so (one of them libprog.so.1's target) and libmapped.so")
	require.Len(t, x.byName["libprog.so"], 2, "the search dir given twice is listed once")

	bounded := newHostIndex([]string{root})
	bounded.maps, bounded.limit = maps, 1
	bounded.once.Do(bounded.build)
	require.True(t, bounded.truncated)
	require.Equal(t, 1, bounded.files, "one file listed, then the listing stops")
}

// TestHostIndexFetches: a frame whose mapping is a base name (the eBPF
// profiler's) is named from the search dirs; without them it is not.
func TestHostIndexFetches(t *testing.T) {
	lib := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	dir := filepath.Dir(lib.Path)
	for _, tc := range []struct {
		name       string
		searchDirs PathList
		wantReason string
	}{
		{"search dirs", PathList{dir}, ""},
		{"no search dirs: the base name alone finds nothing", nil, ReasonNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostHarnessWith(t, HostConfig{Enabled: true, SearchDirs: tc.searchDirs})
			h.see(lib.BuildID, filepath.Base(lib.Path))
			require.Equal(t, outcome{lib.BuildID, tc.wantReason}, h.wait(t))
			if tc.wantReason != "" {
				require.Empty(t, h.store.all())
				return
			}
			puts := h.store.all()
			require.Len(t, puts, 1)
			require.Equal(t, put{tenant: "acme", source: symbols.SourceHost, file: filepath.Base(lib.Path), buildID: lib.BuildID}, zeroRanges(puts)[0])
			require.InDelta(t, 1, value(t, h.f.m.hostFound.WithLabelValues("executable")), 0)
		})
	}
}

// newHostHarnessWith starts a fetcher with the default servers' config
// (none) and host.
func newHostHarnessWith(t *testing.T, host HostConfig) *harness {
	t.Helper()
	return startHostHarness(t, DefaultConfig(), host)
}

// debianFile returns a real file of Debian 12 and its build id, skipping
// the test when it is not installed (scripts/setup.sh installs it); under
// FLAMEHOUSE_E2E_REQUIRE=1 a missing file fails.
func debianFile(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.Getenv("FLAMEHOUSE_E2E_REQUIRE") == "1" {
			t.Fatalf("%s: %v (scripts/setup.sh installs it)", path, err)
		}
		t.Skipf("%s is not installed (%v); scripts/setup.sh installs it", path, err)
	}
	defer func() { _ = f.Close() }()
	id, err := symbols.ReadBuildID(f)
	require.NoError(t, err)
	require.NotEmpty(t, id, path)
	return id
}

// TestHostIndexRealFiles: the default search dirs find Debian's own
// libc.so.6, libpython3.11.so.1.0 and python3.11 by the base names the
// eBPF profiler sends, and the fetcher stores their exported functions
// (.dynsym) with source "ingest host".
func TestHostIndexRealFiles(t *testing.T) {
	files := map[string]string{ // base name as the agent sends it -> Debian's path
		"libc.so.6":            "/usr/lib/x86_64-linux-gnu/libc.so.6",
		"libpython3.11.so.1.0": "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
		"python3.11":           "/usr/bin/python3.11",
	}
	x := newHostIndex(DefaultSearchDirs())
	start := time.Now()
	x.once.Do(x.build)
	t.Logf("index of %s: %d names of %d files in %s", strings.Join(DefaultSearchDirs(), ","), len(x.byName), x.files, time.Since(start).Round(time.Millisecond))
	require.False(t, x.truncated)
	for name, path := range files {
		id := debianFile(t, path)
		got, err := x.lookup(id, name)
		require.NoError(t, err, name)
		want, err := filepath.EvalSymlinks(path)
		require.NoError(t, err)
		require.Equal(t, want, got, name)
		_, err = x.lookup("00112233445566778899aabbccddeeff00112233", name)
		require.ErrorIs(t, err, errNotFound, "%s under another build id", name)

		h := newHostHarnessWith(t, HostConfig{Enabled: true, SearchDirs: DefaultSearchDirs()})
		h.see(id, name)
		require.Equal(t, outcome{id, ""}, h.wait(t), name)
		puts := h.store.all()
		require.NotEmpty(t, puts, name)
		last := puts[len(puts)-1]
		require.Equal(t, symbols.SourceHost, last.source, name)
		require.Equal(t, name, last.file)
		require.Positive(t, last.ranges, "%s: its exported functions", name)
		t.Logf("%s (%s): %d ranges stored", name, want, last.ranges)
	}
}
