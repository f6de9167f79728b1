package chembed

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

const (
	// PinnedVersion is the version of the npm package @chdb/lib-linux-x64-gnu
	// that this package is built and tested against (package.json pins it).
	PinnedVersion = "26.5.3"
	// LibraryEnv names the environment variable that overrides where libchdb.so is.
	LibraryEnv = "FLAMEHOUSE_CHDB_LIB"
	// npmLibraryPath is where `npm ci` installs libchdb.so, relative to the repository root.
	npmLibraryPath = "node_modules/@chdb/lib-linux-x64-gnu/libchdb.so"
)

// ErrLibraryNotFound is returned when libchdb.so cannot be located.
var ErrLibraryNotFound = errors.New("libchdb.so not found: run `npm ci` in the repository root " +
	"(it installs @chdb/lib-linux-x64-gnu), or set " + LibraryEnv + " or --chdb-lib to its path")

// FindLibrary resolves the path of libchdb.so. An explicit path wins, then
// the FLAMEHOUSE_CHDB_LIB environment variable, then node_modules in the
// working directory or any parent of it, then next to the running executable.
func FindLibrary(explicit string) (string, error) {
	if explicit != "" {
		return checkFile(explicit)
	}
	if env := os.Getenv(LibraryEnv); env != "" {
		return checkFile(env)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			candidate := filepath.Join(dir, npmLibraryPath)
			if _, err := os.Stat(candidate); err == nil {
				return candidate, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", ErrLibraryNotFound
}

func checkFile(path string) (string, error) {
	if _, err := os.Stat(path); err != nil { //nolint:gosec // G703: the operator names the library
		return "", fmt.Errorf("libchdb at %q: %w", path, err)
	}
	return filepath.Abs(path)
}

// packageVersion reads the version of the npm package that holds the
// library, or "" when the library does not sit in such a package.
func packageVersion(libPath string) string {
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(libPath), "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(raw, &pkg) != nil {
		return ""
	}
	return pkg.Version
}

// Library is a loaded libchdb. It holds typed entry points of the C API.
type Library struct {
	// Path is the absolute path the library was loaded from.
	Path string
	// PackageVersion is the npm package version next to the library ("" if unknown).
	PackageVersion string
	// LoadDuration is how long dlopen took.
	LoadDuration time.Duration

	connect                  func(argc int32, argv unsafe.Pointer) unsafe.Pointer
	closeConn                func(conn unsafe.Pointer)
	queryWithParams          func(conn unsafe.Pointer, q unsafe.Pointer, qlen uintptr, format unsafe.Pointer, flen uintptr, names unsafe.Pointer, nameLens unsafe.Pointer, values unsafe.Pointer, valueLens unsafe.Pointer, count uintptr) unsafe.Pointer
	streamWithParams         func(conn unsafe.Pointer, q unsafe.Pointer, qlen uintptr, format unsafe.Pointer, flen uintptr, names unsafe.Pointer, nameLens unsafe.Pointer, values unsafe.Pointer, valueLens unsafe.Pointer, count uintptr) unsafe.Pointer
	streamFetch              func(conn unsafe.Pointer, stream unsafe.Pointer) unsafe.Pointer
	streamCancel             func(conn unsafe.Pointer, stream unsafe.Pointer)
	resultBuffer             func(res unsafe.Pointer) unsafe.Pointer
	resultLength             func(res unsafe.Pointer) uintptr
	resultError              func(res unsafe.Pointer) unsafe.Pointer
	resultRowsRead           func(res unsafe.Pointer) uint64
	resultBytesRead          func(res unsafe.Pointer) uint64
	resultRowsWritten        func(res unsafe.Pointer) uint64
	resultBytesWritten       func(res unsafe.Pointer) uint64
	resultElapsed            func(res unsafe.Pointer) float64
	destroyResult            func(res unsafe.Pointer)
	setSignalHandlersEnabled func(enabled int32)
}

var (
	loadOnce   sync.Once
	loadedLib  *Library
	errLoadLib error
)

// LoadLibrary dlopens libchdb once per process and binds the C API. Later
// calls return the same library, whatever path they name.
func LoadLibrary(path string) (*Library, error) {
	loadOnce.Do(func() { loadedLib, errLoadLib = loadLibrary(path) })
	return loadedLib, errLoadLib
}

func loadLibrary(path string) (*Library, error) {
	start := time.Now()
	handle, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("load libchdb from %q: %w", path, err)
	}
	lib := &Library{Path: path, PackageVersion: packageVersion(path), LoadDuration: time.Since(start)}
	bindings := []struct {
		fn   any
		name string
	}{
		{&lib.connect, "chdb_connect"},
		{&lib.closeConn, "chdb_close_conn"},
		{&lib.queryWithParams, "chdb_query_with_params_n"},
		{&lib.streamWithParams, "chdb_stream_query_with_params_n"},
		{&lib.streamFetch, "chdb_stream_fetch_result"},
		{&lib.streamCancel, "chdb_stream_cancel_query"},
		{&lib.resultBuffer, "chdb_result_buffer"},
		{&lib.resultLength, "chdb_result_length"},
		{&lib.resultError, "chdb_result_error"},
		{&lib.resultRowsRead, "chdb_result_rows_read"},
		{&lib.resultBytesRead, "chdb_result_bytes_read"},
		{&lib.resultRowsWritten, "chdb_result_rows_written"},
		{&lib.resultBytesWritten, "chdb_result_bytes_written"},
		{&lib.resultElapsed, "chdb_result_elapsed"},
		{&lib.destroyResult, "chdb_destroy_query_result"},
		{&lib.setSignalHandlersEnabled, "chdb_set_signal_handlers_enabled"},
	}
	var missing []string
	for _, b := range bindings {
		if _, err := purego.Dlsym(handle, b.name); err != nil {
			missing = append(missing, b.name)
			continue
		}
		purego.RegisterLibFunc(b.fn, handle, b.name)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("libchdb at %q lacks %v: install @chdb/lib-linux-x64-gnu@%s", path, missing, PinnedVersion)
	}
	return lib, nil
}

// cString returns a NUL-terminated copy of s.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// goString copies a NUL-terminated C string into Go memory.
func goString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}
