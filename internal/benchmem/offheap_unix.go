//go:build unix

package benchmem

import (
	"fmt"
	"os"
	"syscall"
)

// OffHeap copies bodies into one anonymous memory mapping outside the Go
// heap and returns them there. A benchmark's pre-marshaled requests then do
// not count in the live heap that sets the garbage collector's target, so
// the heap figures are the receiving side's, as with a sender in another
// process.
func OffHeap(bodies [][]byte) ([][]byte, error) {
	total := 0
	for _, b := range bodies {
		total += len(b)
	}
	if total == 0 {
		return bodies, nil
	}
	region, err := syscall.Mmap(-1, 0, total, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(bodies))
	off := 0
	for i, b := range bodies {
		out[i] = region[off : off+copy(region[off:], b) : off+len(b)]
		off += len(b)
	}
	return out, nil
}

// MapFile maps a file read-only outside the Go heap (its pages are the
// page cache's) and returns its bytes and their release.
func MapFile(path string) (data []byte, release func() error, err error) {
	f, err := os.Open(path) //nolint:gosec // G304: the benchmark's own file
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() == 0 {
		return nil, func() error { return nil }, nil
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
