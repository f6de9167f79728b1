package ebpfagent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/ebpfagent"
	"github.com/flamehouse/flamehouse/internal/nativebin"
)

// The workloads run one loop each: every round a pseudo-random draw picks
// the alpha function one time in four and the beta function otherwise,
// and both run the same amount of the same work (spin). So each sample
// that lands in alpha or beta is alpha's with probability 1/4, whatever
// else the machine does, and the count of alpha samples among n is
// binomial(n, 1/4). A round is far shorter than the sampling period, so
// samples do not lock onto the loop's rhythm.
const (
	// alphaShare is alpha's expected share of alpha+beta.
	alphaShare = 0.25
	// toleranceSigmas is the tolerance of a measured share, in binomial
	// standard deviations: sqrt(p(1-p)/n) for n samples.
	toleranceSigmas = 4.5
)

// Function names as the flame graph shows them.
const (
	cAlpha, cBeta, cGamma = "work_alpha", "work_beta", "io_gamma"
	goAlpha, goBeta       = "main.alpha", "main.beta"
	pyAlpha, pyBeta       = "py_alpha", "py_beta"
)

// cSource is the native workload: work_alpha and work_beta in user space
// (alpha a quarter of their rounds), and io_gamma (a fifth of all rounds)
// reading /dev/zero, so that the kernel's copy shows under it as kernel
// frames.
const cSource = `#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

static volatile uint64_t sink;
static char buf[1 << 16];

__attribute__((noinline)) static uint64_t spin(uint64_t n, uint64_t x) {
	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 29;
	}
	return x;
}
__attribute__((noinline)) void work_alpha(uint64_t n) { sink += spin(n, sink) + 1; }
__attribute__((noinline)) void work_beta(uint64_t n) { sink += spin(n, sink) + 2; }
__attribute__((noinline)) void io_gamma(int fd) {
	for (int i = 0; i < 4; i++) sink += read(fd, buf, sizeof buf);
}

int main(void) {
	int fd = open("/dev/zero", O_RDONLY);
	uint64_t r = 88172645463325252ULL;
	for (;;) {
		r ^= r << 13; r ^= r >> 7; r ^= r << 17;
		if (r % 5 == 0) io_gamma(fd);
		else if ((r >> 8) % 4 == 0) work_alpha(20000);
		else work_beta(20000);
	}
}
`

// goSource is the Go workload (frames named by the agent from the
// pclntab, frame type go).
const goSource = `package main

var sink uint64

// alpha and beta run the same loop themselves. With a shared leaf (as the
// C and Python programs have), a first run stored the leaf's samples under
// main.main without main.alpha or main.beta between them: the agent's
// unwinding of Go's frameless leaf functions skips the caller.

//go:noinline
func alpha(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 29
	}
	sink += x + 1
}

//go:noinline
func beta(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 29
	}
	sink += x + 2
}

func main() {
	r := uint64(88172645463325252)
	for {
		r ^= r << 13
		r ^= r >> 7
		r ^= r << 17
		if r%4 == 0 {
			alpha(20000)
		} else {
			beta(20000)
		}
	}
}
`

// pySource is the Python workload (frames named by the agent, frame type
// cpython, with the interpreter's own native frames between them).
const pySource = `def spin(n, x):
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x

def py_alpha(n):
    return spin(n, 1)

def py_beta(n):
    return spin(n, 2)

r = 88172645
while True:
    r = (r * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
    if (r >> 33) % 4 == 0:
        py_alpha(300)
    else:
        py_beta(300)
`

// pythonPath is Debian's interpreter (scripts/setup.sh installs it).
const pythonPath = "/usr/bin/python3.11"

// workload is a running workload process.
type workload struct {
	name string // the executable's base name: service unknown_service:<name>
	pid  int
	cmd  *exec.Cmd
}

// startWorkload runs path (with args) until the test ends.
func startWorkload(t *testing.T, name, path string, args ...string) *workload {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), path, args...)
	require.NoError(t, cmd.Start())
	w := &workload{name: name, pid: cmd.Process.Pid, cmd: cmd}
	t.Cleanup(w.stop)
	return w
}

func (w *workload) stop() {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	_ = w.cmd.Wait()
}

// buildWorkloads builds the C program (its stripped copy runs), the Go
// program and the Python script, each under a name of its own.
func buildWorkloads(t *testing.T) (c nativebin.Binary, cPath, goPath, pyScript string) {
	t.Helper()
	nativebin.Require(t, "gcc", "objcopy")
	if _, err := os.Stat(pythonPath); err != nil {
		if ebpfagent.Required() {
			t.Fatalf("%s: %v (scripts/setup.sh installs python3.11)", pythonPath, err)
		}
		t.Skipf("%s is not installed (%v); scripts/setup.sh installs it", pythonPath, err)
	}
	dir := t.TempDir()
	c = nativebin.Build(t, nativebin.Spec{Name: "fhagent-c", Sources: map[string]string{"work.c": cSource}, Kind: nativebin.PIE})
	cPath = filepath.Join(dir, "fhagent-c")
	copyExecutable(t, nativebin.Stripped(t, c).Path, cPath)
	goPath = filepath.Join(dir, "fhagent-go")
	copyExecutable(t, nativebin.BuildGo(t, goSource).Path, goPath)
	pyScript = filepath.Join(dir, "fhagent.py")
	require.NoError(t, os.WriteFile(pyScript, []byte(pySource), 0o600))
	return c, cPath, goPath, pyScript
}

func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o700))
}
