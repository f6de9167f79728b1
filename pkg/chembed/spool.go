package chembed

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
)

// spoolDirName is the directory under the data directory that holds INSERT
// data while the engine reads it.
const spoolDirName = "flamehouse_spool"

// prepareSpoolDir creates the spool directory and removes files that a
// crashed run left behind.
func prepareSpoolDir(dataDir string) error {
	dir := filepath.Join(dataDir, spoolDirName)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clean spool directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create spool directory: %w", err)
	}
	return nil
}

// spooler writes INSERT data to files, within a quota shared by all
// requests.
type spooler struct {
	dir   string
	quota int64
	used  atomic.Int64
}

func newSpooler(dataDir string, quota int64) *spooler {
	return &spooler{dir: filepath.Join(dataDir, spoolDirName), quota: quota}
}

// errSpoolFull is returned when concurrent inserts exhaust the spool quota.
var errSpoolFull = newException(CodeNotEnoughSpace,
	"the INSERT spool is full (max_spool_bytes); retry later").withStatus(http.StatusServiceUnavailable)

// write copies data into a new spool file and returns its path. The path is
// returned even on error so that the caller can remove the partial file.
func (s *spooler) write(data io.Reader) (path string, err error) {
	var name [12]byte
	_, _ = rand.Read(name[:])
	path = filepath.Join(s.dir, "ins-"+hex.EncodeToString(name[:])+".bin")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600) //nolint:gosec // G304: the name is random hex in our spool directory
	if err != nil {
		return path, fmt.Errorf("create spool file: %w", err)
	}
	_, copyErr := io.Copy(&quotaWriter{f: f, s: s}, data)
	closeErr := f.Close()
	switch {
	case errors.Is(copyErr, errSpoolFull):
		return path, errSpoolFull
	case copyErr != nil:
		return path, bodyError(copyErr)
	case closeErr != nil:
		return path, fmt.Errorf("write spool file: %w", closeErr)
	}
	return path, nil
}

// remove deletes a spool file and returns its bytes to the quota.
func (s *spooler) remove(path string) {
	if path == "" {
		return
	}
	// The path is one that write created in the spool directory.
	if info, err := os.Stat(path); err == nil { //nolint:gosec // G703: see above
		s.used.Add(-info.Size())
	}
	_ = os.Remove(path) //nolint:gosec // G703: see above
}

// quotaWriter writes to a spool file while charging the shared quota.
type quotaWriter struct {
	f *os.File
	s *spooler
}

func (w *quotaWriter) Write(p []byte) (int, error) {
	if w.s.used.Add(int64(len(p))) > w.s.quota {
		w.s.used.Add(-int64(len(p)))
		return 0, errSpoolFull
	}
	n, err := w.f.Write(p)
	if n < len(p) {
		w.s.used.Add(-int64(len(p) - n))
	}
	if err != nil {
		return n, fmt.Errorf("write spool file: %w", err)
	}
	return n, nil
}
