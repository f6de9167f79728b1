// Package harness holds what the packages that run real peer processes in
// tests share (otelcoltest's Collectors, pyroscopetest's Pyroscope): free
// loopback ports, a cache directory that test binaries running side by
// side lock, and a child process's captured output and exit status.
package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Start launches a peer in a temporary directory of the test's and stops
// it when the test ends, failing the test (with the name as prefix) when
// it cannot start or does not stop cleanly.
func Start[P interface{ Stop() error }](tb testing.TB, name string, launch func(dir string) (P, error)) P {
	tb.Helper()
	p, err := launch(tb.TempDir())
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	tb.Cleanup(func() {
		if err := p.Stop(); err != nil {
			tb.Errorf("%s: %v", name, err)
		}
	})
	return p
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr, nil
}

// LockDir takes an exclusive lock on dir/.lock, waiting for it, and
// returns its release. The kernel drops the lock if the process dies.
func LockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600) //nolint:gosec // G304: the cache directory's lock file
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(fd, syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// ExitStatus describes how a child process exited, from its Wait error.
func ExitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// outputLimit is how much of a child's output Output keeps: its last 8 MiB
// (a peer that runs for hours logs more than a failure message needs).
const outputLimit = 8 << 20

// Output collects a child process's stdout and stderr for failure
// messages; it keeps the last outputLimit bytes.
type Output struct {
	mu  sync.Mutex
	buf []byte
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	if len(o.buf) > 2*outputLimit {
		o.buf = append(o.buf[:0], o.buf[len(o.buf)-outputLimit:]...)
	}
	return len(p), nil
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.buf)
}

// Tail is the last n bytes of the output.
func (o *Output) Tail(n int) string {
	s := o.String()
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
