//go:build !unix

package benchmem

import "os"

// OffHeap keeps bodies on the Go heap where there is no anonymous mmap.
func OffHeap(bodies [][]byte) ([][]byte, error) { return bodies, nil }

// MapFile reads a file into the Go heap where there is no mmap.
func MapFile(path string) (data []byte, release func() error, err error) {
	data, err = os.ReadFile(path) //nolint:gosec // G304: the benchmark's own file
	return data, func() error { return nil }, err
}
