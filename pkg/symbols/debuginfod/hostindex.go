package debuginfod

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// DefaultSearchDirs are the directories the host index lists by file
// name: where Debian and most distributions install executables and
// shared libraries (/lib and /lib64 are links into /usr on merged-/usr
// systems; the index lists each real directory once).
func DefaultSearchDirs() PathList {
	return PathList{"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/bin", "/usr/sbin", "/usr/local/lib", "/usr/local/bin"}
}

// Bounds of the host index.
const (
	// MaxSearchDepth is how many directory levels below a search dir are
	// listed: /usr/lib/x86_64-linux-gnu/libc.so.6 and
	// /usr/lib/chromium/chromium are one level down.
	MaxSearchDepth = 3
	// MaxIndexedFiles bounds the files listed; past it, the rest of the
	// search dirs is not listed.
	MaxIndexedFiles = 200_000
	// selfMaps lists the files mapped into this process.
	selfMaps = "/proc/self/maps"
)

// hostIndex finds the files of this host by base name, for senders that
// name a mapping by its base name only (the eBPF profiler sends
// "libc.so.6", "libpython3.11.so.1.0", "libchdb.so"). It lists the search
// dirs and the files mapped into this process (the embedded engine's
// libchdb.so wherever it was loaded from) once, on first use: names only,
// no file is opened. A lookup then reads the GNU build id of the files
// with the asked-for name, each at most once, and answers the one whose
// build id is the frame's: a base name alone never picks a file.
type hostIndex struct {
	dirs  []string
	depth int
	limit int
	maps  string

	once      sync.Once
	byName    map[string][]string
	files     int
	truncated bool

	mu       sync.Mutex
	buildIDs map[string]string // path -> GNU build id ("" none or unreadable)
}

func newHostIndex(dirs []string) *hostIndex {
	return &hostIndex{dirs: dirs, depth: MaxSearchDepth, limit: MaxIndexedFiles, maps: selfMaps, buildIDs: map[string]string{}}
}

// build lists the search dirs and this process's mapped files.
func (x *hostIndex) build() {
	x.byName = map[string][]string{}
	b := indexBuild{x: x, seenDirs: map[string]bool{}, seenFiles: map[string]bool{}}
	for _, dir := range x.dirs {
		b.walk(dir)
	}
	for _, path := range mappedFiles(x.maps) {
		if !b.add(path) {
			break
		}
	}
}

// indexBuild is one build of a hostIndex: the directories and files (their
// real paths) seen so far.
type indexBuild struct {
	x                   *hostIndex
	seenDirs, seenFiles map[string]bool
}

// addName lists a real path under a name, once.
func (b *indexBuild) addName(name, real string) {
	if !slices.Contains(b.x.byName[name], real) {
		b.x.byName[name] = append(b.x.byName[name], real)
	}
}

// add indexes a regular file under its own name and its real path's; it
// returns false once the index is full.
func (b *indexBuild) add(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return true
	}
	if !b.seenFiles[real] {
		if st, err := os.Stat(real); err != nil || !st.Mode().IsRegular() {
			return true
		}
		if b.x.files >= b.x.limit {
			b.x.truncated = true
			return false
		}
		b.seenFiles[real] = true
		b.x.files++
		b.addName(filepath.Base(real), real)
	}
	b.addName(filepath.Base(path), real) // a link is found by its own name too
	return true
}

// walk indexes the files under a search dir down to the index's depth,
// skipping unreadable directories and those already walked.
func (b *indexBuild) walk(dir string) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil || b.seenDirs[real] {
		return
	}
	b.seenDirs[real] = true
	_ = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.IsDir():
			if path != real && (strings.Count(strings.TrimPrefix(path, real), string(filepath.Separator)) > b.x.depth || b.seenDirs[path]) {
				return fs.SkipDir
			}
			return nil
		case d.Type().IsRegular(), d.Type()&fs.ModeSymlink != 0:
			if !b.add(path) {
				return fs.SkipAll
			}
		}
		return nil
	})
}

// mappedFiles lists the absolute paths /proc/self/maps names, except this
// process's own executable: the ingest is a Go program whose frames the
// eBPF profiler names itself, and reading a large Go binary's pclntab and
// DWARF for the odd native frame in it is not worth it (a test binary
// built with -race took minutes).
func mappedFiles(maps string) []string {
	self, _ := os.Executable()
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	f, err := os.Open(maps) //nolint:gosec // G304: /proc/self/maps, or a test's stand-in
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasPrefix(fields[5], "/") || seen[fields[5]] || fields[5] == self {
			continue
		}
		seen[fields[5]] = true
		out = append(out, fields[5])
	}
	return out
}

// lookup returns the path of a listed file named like file (its base
// name) whose GNU build id is buildID, or errNotFound.
func (x *hostIndex) lookup(buildID, file string) (string, error) {
	x.once.Do(x.build)
	name := filepath.Base(file)
	if file == "" || name == "." || name == "/" {
		return "", errNotFound
	}
	for _, path := range x.byName[name] {
		if x.buildID(path) == buildID {
			return path, nil
		}
	}
	return "", errNotFound
}

// buildID reads a listed file's GNU build id once.
func (x *hostIndex) buildID(path string) string {
	x.mu.Lock()
	id, ok := x.buildIDs[path]
	x.mu.Unlock()
	if ok {
		return id
	}
	id = readBuildID(path)
	x.mu.Lock()
	x.buildIDs[path] = id
	x.mu.Unlock()
	return id
}

// readBuildID is a file's GNU build id, "" when it has none or cannot be
// read (not ELF, a FIFO, gone).
func readBuildID(path string) string {
	file, err := openRegular(path)
	if err != nil {
		return ""
	}
	defer func() { _ = file.Close() }()
	id, err := symbols.ReadBuildID(file)
	if err != nil {
		return ""
	}
	return id
}
