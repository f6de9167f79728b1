package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// UnpackXZ decompresses a harness's .xz archive with xz into dir (created
// if missing) as an executable named prefix-<first 16 hex digits of the
// archive's SHA-256>, unless it is there already, and returns its path.
// Test binaries running side by side each write a temporary file and
// rename it: the last rename wins, and every one is the same file.
func UnpackXZ(archive, dir, prefix string) (string, error) {
	sum, err := fileSHA256(archive)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, prefix+"-"+sum[:16])
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o100 != 0 {
		return bin, nil
	}
	xz, err := exec.LookPath("xz")
	if err != nil {
		return "", fmt.Errorf("xz is not installed (scripts/setup.sh installs xz-utils): %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".unpack-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	cmd := exec.CommandContext(context.Background(), xz, "-dc", archive) //nolint:gosec // G204: xz on the harness's archive
	cmd.Stdout = tmp
	var stderr strings.Builder
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	if err := errors.Join(runErr, tmp.Close()); err != nil {
		return "", fmt.Errorf("xz -dc %s: %w: %s", archive, err, stderr.String())
	}
	if err := os.Chmod(tmp.Name(), 0o700); err != nil { //nolint:gosec // G302: an executable of our own
		return "", err
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// fileSHA256 is a file's SHA-256 in hex.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the harness's own file
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
