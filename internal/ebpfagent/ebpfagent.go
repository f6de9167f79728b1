// Package ebpfagent runs the OpenTelemetry eBPF profiler — the real agent
// most users point at Flamehouse — for integration tests. The agent is a
// test harness kept outside the repository (../shared/ebpf-profiler/, a
// build of its public source, xz-compressed); it is never a dependency and
// never shipped.
//
//	bin := ebpfagent.Require(t)          // unpacked once into a cache directory
//	agent, err := ebpfagent.Start(bin, ebpfagent.Config{CollectionAgent: "127.0.0.1:4317"})
//	defer agent.Stop()
//
// Require skips the test, with the reason, when the agent cannot run here
// (no harness, not root, no BTF, no tracefs); under FLAMEHOUSE_E2E_REQUIRE=1
// (CI) each of those is a failure instead. Start returns once the agent
// has attached its programs ("Attached tracer program", "Attached sched
// monitor" in its log); Stop sends SIGTERM and waits for it to exit.
package ebpfagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flamehouse/flamehouse/internal/harness"
)

const (
	// PathEnv names the agent to run: its .xz archive or an unpacked
	// binary. Default: ArchiveName in the shared harness directory.
	PathEnv = "FLAMEHOUSE_EBPF_PROFILER"
	// CacheEnv names the directory the archive is unpacked into. Default:
	// <user cache dir>/flamehouse/ebpf-profiler.
	CacheEnv = "FLAMEHOUSE_EBPF_PROFILER_CACHE"
	// RequireEnv turns every reason to skip into a failure when it is "1"
	// (CI).
	RequireEnv = "FLAMEHOUSE_E2E_REQUIRE"
	// ArchiveName is the harness's file.
	ArchiveName = "ebpf-profiler-linux-amd64.xz"
	// BTFPath is the kernel's type information, which the agent needs.
	BTFPath = "/sys/kernel/btf/vmlinux"
	// TracefsPath is where the agent finds the sched tracepoints it
	// attaches to; Loadable mounts tracefs there when it is missing.
	TracefsPath = "/sys/kernel/tracing"
)

// ReadyLines are the log messages that say the agent is profiling.
var ReadyLines = []string{"Attached tracer program", "Attached sched monitor"}

// HarnessDir is ../shared/ebpf-profiler next to the repository.
func HarnessDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "ebpf-profiler")
}

// Required reports whether a missing harness must fail the test (CI).
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Require returns the agent's binary, ready to run, after checking that
// this machine can load eBPF. Otherwise it skips the test with the reason,
// or fails it under FLAMEHOUSE_E2E_REQUIRE=1.
func Require(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("ebpfagent: runs the eBPF profiler; skipped under -short")
	}
	bin, err := Available()
	if err != nil {
		if Required() {
			tb.Fatalf("ebpfagent: %v (%s=1: the eBPF profiler test may not skip)", err, RequireEnv)
		}
		tb.Skipf("ebpfagent: %v", err)
	}
	return bin
}

// Available returns the agent's binary, ready to run, or why this
// machine cannot run it (Locate, then Loadable): for a caller that
// decides itself what a missing agent means, as Require does for a test.
func Available() (string, error) {
	bin, err := Locate()
	if err != nil {
		return "", err
	}
	if err := Loadable(); err != nil {
		return "", err
	}
	return bin, nil
}

// Locate returns the agent's binary: PathEnv or the harness's archive,
// unpacked with xz into the cache directory once per archive content.
func Locate() (string, error) {
	path := os.Getenv(PathEnv)
	if path == "" {
		path = filepath.Join(HarnessDir(), ArchiveName)
	}
	if _, err := os.Stat(path); err != nil { //nolint:gosec // G703: the harness the caller names
		return "", fmt.Errorf("no eBPF profiler harness at %s (set %s): %w", path, PathEnv, err)
	}
	if !strings.HasSuffix(path, ".xz") {
		return path, nil
	}
	return unpack(path)
}

// unpack decompresses the archive into the cache directory (CacheEnv, by
// default the user's cache) once per archive content.
func unpack(archive string) (string, error) {
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "flamehouse", "ebpf-profiler")
	}
	return harness.UnpackXZ(archive, dir, "ebpf-profiler")
}

// Loadable returns why this machine cannot run the agent, or nil: it needs
// root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN), the kernel's BTF and tracefs,
// which it mounts when it is missing, as the harness's README does.
func Loadable() error {
	if os.Geteuid() != 0 {
		return errors.New("the eBPF profiler needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN); run the tests as root")
	}
	if _, err := os.Stat(BTFPath); err != nil {
		return fmt.Errorf("no kernel BTF, which the eBPF profiler needs: %w", err)
	}
	if _, err := os.Stat(filepath.Join(TracefsPath, "events")); err == nil {
		return nil
	}
	if err := syscall.Mount("nodev", TracefsPath, "tracefs", 0, ""); err != nil {
		return fmt.Errorf("tracefs is not mounted at %s and mounting it failed: %w", TracefsPath, err)
	}
	if _, err := os.Stat(filepath.Join(TracefsPath, "events")); err != nil {
		return fmt.Errorf("tracefs mounted at %s has no events: %w", TracefsPath, err)
	}
	return nil
}

// Config is how Start runs the agent.
type Config struct {
	// CollectionAgent is the OTLP/gRPC receiver, host:port (no TLS).
	CollectionAgent string
	// SamplesPerSecond is the sampling frequency; 0 is the agent's 20.
	SamplesPerSecond int
	// ReporterInterval is how often it sends; 0 is DefaultReporterInterval.
	ReporterInterval time.Duration
	// ReadyTimeout bounds the wait for ReadyLines; 0 is one minute.
	ReadyTimeout time.Duration
	// Args are further flags (see the agent's -h).
	Args []string
}

// DefaultReporterInterval is the report interval Start asks for: the
// agent's own default, written out so that tests can rely on it.
const DefaultReporterInterval = 5 * time.Second

// Agent is a running agent.
type Agent struct {
	cmd     *exec.Cmd
	logs    *logBuffer
	exited  chan struct{}
	waitErr error
	once    sync.Once
	stopErr error
}

// Start runs the agent and returns once it has attached its programs. The
// receiver must already listen: the agent gives up after a few attempts
// to connect. An agent that exits or does not attach in time is stopped
// and the error carries its log.
func Start(bin string, cfg Config) (*Agent, error) {
	if cfg.CollectionAgent == "" {
		return nil, errors.New("ebpfagent: Config.CollectionAgent is required")
	}
	interval := cfg.ReporterInterval
	if interval <= 0 {
		interval = DefaultReporterInterval
	}
	args := []string{"-collection-agent", cfg.CollectionAgent, "-disable-tls", "-reporter-interval", interval.String()}
	if cfg.SamplesPerSecond > 0 {
		args = append(args, "-samples-per-second", strconv.Itoa(cfg.SamplesPerSecond))
	}
	args = append(args, cfg.Args...)
	a := &Agent{logs: newLogBuffer(ReadyLines), exited: make(chan struct{})}
	// The agent's lifetime is Stop's business, not a context's.
	a.cmd = exec.CommandContext(context.Background(), bin, args...) //nolint:gosec // G204: the harness binary with our flags
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		a.waitErr = a.cmd.Wait()
		close(a.exited)
	}()
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	select {
	case <-a.logs.ready:
		return a, nil
	case <-a.exited:
		return nil, fmt.Errorf("the eBPF profiler exited before attaching (%w); log:\n%s", a.waitErr, a.logs)
	case <-time.After(timeout):
		_ = a.Stop()
		return nil, fmt.Errorf("the eBPF profiler did not attach within %s; log:\n%s", timeout, a.logs)
	}
}

// Pid is the agent's process id.
func (a *Agent) Pid() int { return a.cmd.Process.Pid }

// Logs returns what the agent has logged so far.
func (a *Agent) Logs() string { return a.logs.String() }

// Stop sends SIGTERM and waits up to 30 s for the agent to exit, then
// kills it. It returns an error when the agent had to be killed.
func (a *Agent) Stop() error {
	a.once.Do(func() {
		select {
		case <-a.exited:
			return
		default:
		}
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.exited:
		case <-time.After(30 * time.Second):
			_ = a.cmd.Process.Kill()
			<-a.exited
			a.stopErr = fmt.Errorf("the eBPF profiler did not stop within 30 s of SIGTERM; killed; log:\n%s", a.logs)
		}
	})
	return a.stopErr
}

// logBuffer keeps the agent's output and closes ready once every one of
// its lines has been seen.
type logBuffer struct {
	mu      sync.Mutex
	buf     strings.Builder
	partial string
	want    map[string]bool
	ready   chan struct{}
}

var _ io.Writer = (*logBuffer)(nil)

func newLogBuffer(lines []string) *logBuffer {
	b := &logBuffer{want: map[string]bool{}, ready: make(chan struct{})}
	for _, l := range lines {
		b.want[l] = true
	}
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	text := b.partial + string(p)
	lines := strings.Split(text, "\n")
	b.partial = lines[len(lines)-1] // "" after a complete line
	for _, line := range lines {
		for w := range b.want {
			if strings.Contains(line, w) {
				delete(b.want, w)
				if len(b.want) == 0 {
					close(b.ready)
				}
			}
		}
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
