package debuginfod

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// HostConfig configures the host source (the service's symbols.host
// section): symbols found on the ingest's own machine, by build id, with
// no upload and no server. Files larger than the debuginfod section's
// max_file_bytes are not read.
type HostConfig struct {
	// Enabled looks for the files of unsymbolized build ids on this host.
	// Default true: a file is used only when its build id is the frame's,
	// so a path a remote sender names can never bring another file's
	// symbols.
	Enabled bool `yaml:"enabled"`
	// DebugDirs are debug-file directories laid out by build id, as the
	// distributions' debug packages install them:
	// <dir>/.build-id/<first 2 hex>/<rest>.debug (the debug file) and
	// <dir>/.build-id/<first 2 hex>/<rest> (the executable, where present).
	// Default [/usr/lib/debug].
	DebugDirs PathList `yaml:"debug_dirs"`
	// SearchDirs are listed by file name, once, together with the files
	// mapped into this process, for mappings that senders name by base
	// name only (the eBPF profiler's "libc.so.6"): a listed file with the
	// frame's name and build id is its executable. Up to MaxSearchDepth
	// directory levels below each, MaxIndexedFiles names in all. Default
	// DefaultSearchDirs(); empty turns the index off.
	SearchDirs PathList `yaml:"search_dirs"`
}

// DefaultDebugDir is where Debian, Ubuntu and Fedora install debug files.
const DefaultDebugDir = "/usr/lib/debug"

// DefaultHostConfig returns the defaults: on, /usr/lib/debug, the
// library and executable directories of DefaultSearchDirs.
func DefaultHostConfig() HostConfig {
	return HostConfig{Enabled: true, DebugDirs: PathList{DefaultDebugDir}, SearchDirs: DefaultSearchDirs()}
}

// RegisterFlags binds the config to flags with the given prefix.
func (c *HostConfig) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.BoolVar(&c.Enabled, prefix+"enabled", c.Enabled, "look for unsymbolized executables' files on this host, by build id (the mapping's path, debug dirs)")
	f.Var(&c.DebugDirs, prefix+"debug-dirs", "debug-file directories laid out by build id (.build-id/xx/rest.debug), comma-separated")
	f.Var(&c.SearchDirs, prefix+"search-dirs", "directories listed by file name for mappings named by base name (build ids checked), comma-separated; empty: none")
}

// Validate reports every problem at once.
func (c *HostConfig) Validate() error {
	var err error
	for i, d := range c.DebugDirs {
		if !filepath.IsAbs(d) {
			err = errors.Join(err, fmt.Errorf("debug_dirs[%d]: %q is not an absolute path", i, d))
		}
	}
	for i, d := range c.SearchDirs {
		if !filepath.IsAbs(d) {
			err = errors.Join(err, fmt.Errorf("search_dirs[%d]: %q is not an absolute path", i, d))
		}
	}
	return err
}

// PathList is a list of paths, comma-separated as a flag value.
type PathList []string

// String is the list as -help shows it.
func (l *PathList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

// Set parses a comma-separated list.
func (l *PathList) Set(s string) error {
	*l = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// hostSource is the files of this host: each debug dir by build id, then
// the frame's mapping path, then the index of the search dirs by base
// name. Whatever it opens goes through symbols.ExtractWith with the build
// id asked for, which refuses a file with any other (ReasonMismatch).
type hostSource struct {
	dirs     []string
	maxBytes int64
	index    *hostIndex // nil: no search dirs
}

func newHostSource(cfg HostConfig, maxBytes int64) *hostSource {
	h := &hostSource{dirs: cfg.DebugDirs, maxBytes: maxBytes}
	if len(cfg.SearchDirs) > 0 {
		h.index = newHostIndex(cfg.SearchDirs)
	}
	return h
}

func (*hostSource) kind() string   { return symbols.SourceHost }
func (*hostSource) String() string { return "host" }

// open returns the first of the artifact's candidate files that exists:
// the debug file <dir>/.build-id/xx/rest.debug; the executable
// <dir>/.build-id/xx/rest, else the mapping's path (absolute paths only),
// else the indexed file with the mapping's base name and the build id.
func (h *hostSource) open(it item, artifact string) (*os.File, int64, func(), error) {
	var candidates []string
	for _, dir := range h.dirs {
		p := filepath.Join(dir, ".build-id", it.buildID[:2], it.buildID[2:])
		if artifact == "debuginfo" {
			p += ".debug"
		}
		candidates = append(candidates, p)
	}
	if artifact == "executable" && filepath.IsAbs(it.file) {
		candidates = append(candidates, filepath.Clean(it.file))
	}
	for _, p := range candidates {
		file, size, err := h.openFile(p)
		switch {
		case errors.Is(err, errNotFound):
			continue
		case err != nil:
			return nil, 0, nil, err
		}
		return file, size, func() { _ = file.Close() }, nil
	}
	if artifact == "executable" && h.index != nil {
		path, err := h.index.lookup(it.buildID, it.file)
		if err != nil {
			return nil, 0, nil, err
		}
		file, size, err := h.openFile(path)
		if err != nil {
			return nil, 0, nil, err
		}
		return file, size, func() { _ = file.Close() }, nil
	}
	return nil, 0, nil, errNotFound
}

// openFile opens a regular file (following symlinks, as the libraries in
// /lib and the .build-id links are) without blocking on a FIFO or device a
// path may name. A missing or unreadable path, or anything but a regular
// file, is errNotFound.
func (h *hostSource) openFile(path string) (*os.File, int64, error) {
	file, err := openRegular(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := file.Stat()
	switch {
	case err != nil:
		_ = file.Close()
		return nil, 0, &fetchError{reason: ReasonBadFile, err: err}
	case st.Size() > h.maxBytes:
		_ = file.Close()
		return nil, 0, &fetchError{reason: ReasonTooLarge, err: fmt.Errorf("%s is %d bytes, the limit is %d", path, st.Size(), h.maxBytes)}
	}
	return file, st.Size(), nil
}

// openRegular opens path when it is a regular file, without blocking on a
// FIFO or device. A missing or unreadable path, or anything but a regular
// file, is errNotFound; other failures are ReasonBadFile.
func openRegular(path string) (*os.File, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) //nolint:gosec // G304: accepted only when its build id is the frame's (ExtractWith)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) {
			return nil, errNotFound
		}
		return nil, &fetchError{reason: ReasonBadFile, err: err}
	}
	st, err := file.Stat()
	switch {
	case err != nil:
		_ = file.Close()
		return nil, &fetchError{reason: ReasonBadFile, err: err}
	case !st.Mode().IsRegular():
		_ = file.Close()
		return nil, errNotFound
	}
	return file, nil
}
