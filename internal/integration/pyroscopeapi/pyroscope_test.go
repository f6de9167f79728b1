package pyroscopeapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// requireEnv set to 1 (CI) turns a missing Pyroscope into a failure.
const requireEnv = "FLAMEHOUSE_E2E_REQUIRE"

// pyroscopeXZ is the shared harness's Pyroscope binary.
func pyroscopeXZ() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "pyroscope", "pyroscope-linux-amd64.xz"))
}

// pyroscope is a running Grafana Pyroscope on free loopback ports.
type pyroscope struct {
	url  string
	cmd  *exec.Cmd
	logs *bytes.Buffer
	mu   *sync.Mutex
}

// startPyroscope unpacks the harness's binary once into the user cache and
// runs it in single-binary mode on free ports with a data directory of the
// test's own, its readiness delays off and the limits a test of past data
// needs lifted; it returns once /ready answers (60 to 90 s on 2 cores).
// Without the binary the test skips, or fails under FLAMEHOUSE_E2E_REQUIRE=1.
func startPyroscope(t *testing.T) *pyroscope {
	t.Helper()
	xz := pyroscopeXZ()
	if _, err := os.Stat(xz); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("Grafana Pyroscope not found at %s, and %s=1 requires it", xz, requireEnv)
		}
		t.Skipf("Grafana Pyroscope not found: %s is missing (../shared/pyroscope)", xz)
	}
	bin := unpack(t, xz)
	dir := t.TempDir()
	ports := freePorts(t, 4)
	httpPort, grpcPort, memberPort, raftPort := ports[0], ports[1], ports[2], ports[3]
	grpcAddr, raft := "127.0.0.1:"+strconv.Itoa(grpcPort), "127.0.0.1:"+strconv.Itoa(raftPort)
	args := []string{
		"-config.show_banner=false", "-self-profiling.disable-push=true",
		"-storage.backend", "filesystem", "-storage.filesystem.dir", filepath.Join(dir, "store"),
		"-pyroscopedb.data-path", filepath.Join(dir, "v1"),
		"-server.http-listen-address", "127.0.0.1", "-server.http-listen-port", strconv.Itoa(httpPort),
		"-server.grpc-listen-address", "127.0.0.1", "-server.grpc-listen-port", strconv.Itoa(grpcPort),
		"-memberlist.bind-addr", "127.0.0.1", "-memberlist.bind-port", strconv.Itoa(memberPort), "-memberlist.advertise-addr", "127.0.0.1",
		"-metastore.address", grpcAddr, "-query-backend.address", grpcAddr,
		"-metastore.data-dir", filepath.Join(dir, "metastore"), "-metastore.raft.dir", filepath.Join(dir, "raft"),
		"-metastore.raft.snapshots-dir", filepath.Join(dir, "raft"),
		"-metastore.raft.bind-address", raft, "-metastore.raft.advertise-address", raft, "-metastore.raft.server-id", raft,
		// One process has no ring to wait for.
		"-ingester.min-ready-duration=0s", "-segment-writer.min-ready-duration=0s", "-metastore.min-ready-duration=0s",
		// Queries read the storage its default write path fills (else a
		// tenant's first queries go to the empty v1 storage).
		"-enable-query-backend-from", "2000-01-01T00:00:00Z",
		// The test's profiles are dated up to an hour back.
		"-validation.reject-older-than", "0", "-querier.max-query-length", "0", "-querier.max-query-lookback", "0",
	}
	for _, flag := range []string{
		"compactor.ring.instance-addr", "distributor.ring.instance-addr", "ingester.lifecycler.addr",
		"overrides-exporter.ring.instance-addr", "query-frontend.instance-addr", "query-scheduler.ring.instance-addr",
		"segment-writer.lifecycler.addr", "store-gateway.sharding-ring.instance-addr",
	} {
		args = append(args, "-"+flag, "127.0.0.1")
	}
	p := &pyroscope{url: "http://127.0.0.1:" + strconv.Itoa(httpPort), logs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	p.cmd = exec.CommandContext(context.Background(), bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = lockedWriter{p}, lockedWriter{p}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start pyroscope: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(4 * time.Minute)
	for {
		resp, err := http.Get(p.url + "/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-exited:
			t.Fatalf("pyroscope exited before it was ready; log:\n%s", p.log())
		case <-time.After(time.Second):
		}
		if time.Now().After(deadline) {
			t.Fatalf("pyroscope not ready after 4 minutes; log:\n%s", p.log())
		}
	}
}

type lockedWriter struct{ p *pyroscope }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.logs.Len() > 1<<20 {
		return len(b), nil
	}
	return w.p.logs.Write(b)
}

func (p *pyroscope) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// unpack unpacks the .xz into the user cache under its hash, once (a lock
// file keeps parallel test binaries apart).
func unpack(t *testing.T, xz string) string {
	t.Helper()
	f, err := os.Open(xz)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "flamehouse", "pyroscope")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "pyroscope-"+hex.EncodeToString(h.Sum(nil))[:16])
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(bin); err == nil && fi.Mode()&0o100 != 0 {
		return bin
	}
	out, err := os.OpenFile(bin+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), "xz", "-dc", xz)
	cmd.Stdout = out
	runErr := cmd.Run()
	if err := out.Close(); err != nil || runErr != nil {
		t.Fatalf("unpack %s: %v %v", xz, runErr, err)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// freePorts returns n distinct free loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return ports
}

func (p *pyroscope) String() string { return "pyroscope at " + p.url }
