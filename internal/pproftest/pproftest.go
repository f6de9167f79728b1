// Package pproftest records real CPU profiles of known work and reads
// `go tool pprof -top` for them: the oracle that stored and queried
// profiles are checked against.
package pproftest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
)

// Sink keeps the work of RecordCPU from being optimised away.
var Sink int

//go:noinline
func spinSquares(n int) int {
	s := 0
	for i := range n {
		s += i * i
	}
	return s
}

//go:noinline
func spinXor(n int) int {
	s := 1
	for i := range n {
		s ^= i << 3
	}
	return s
}

//go:noinline
func spinBoth(n int) int { return spinSquares(n/2) + spinXor(n/2) }

// RecordCPU writes a real CPU profile of this process doing known work
// (Spin) for about d.
func RecordCPU(tb testing.TB, path string, d time.Duration) {
	tb.Helper()
	f, err := os.Create(path) //nolint:gosec // G304: a test's own temporary file
	require.NoError(tb, err)
	require.NoError(tb, pprof.StartCPUProfile(f))
	Spin(d)
	pprof.StopCPUProfile()
	require.NoError(tb, f.Close())
}

// Spin does known work (pproftest.spinSquares, spinXor under spinBoth)
// for about d.
func Spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		Sink += spinSquares(200_000) + spinBoth(200_000)
	}
}

// CPUProfile runs f under the Go CPU profiler and returns the profile.
func CPUProfile(tb testing.TB, f func()) *profile.Profile {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, pprof.StartCPUProfile(&buf))
	f()
	pprof.StopCPUProfile()
	p, err := profile.Parse(&buf)
	require.NoError(tb, err)
	return p
}

// Recorded is a real CPU profile of known work: its file, the profile read
// back, and `go tool pprof -top`'s flat and cumulative nanoseconds per
// function.
type Recorded struct {
	Path      string
	Profile   *profile.Profile
	Flat, Cum map[string]int64
}

// Record writes a CPU profile of about 1.5 s of known work (RecordCPU)
// into dir as cpu.pb.gz and reads it back and through pprof -top.
func Record(tb testing.TB, dir string) Recorded {
	tb.Helper()
	r := Recorded{Path: filepath.Join(dir, "cpu.pb.gz")}
	RecordCPU(tb, r.Path, 1500*time.Millisecond)
	r.Flat, r.Cum = Top(tb, r.Path)
	raw, err := os.ReadFile(r.Path)
	require.NoError(tb, err)
	r.Profile, err = profile.ParseData(raw)
	require.NoError(tb, err)
	return r
}

// Top runs `go tool pprof -top` on a profile and returns flat and
// cumulative nanoseconds per function (every function pprof lists), names
// as recorded (-symbolize=none: pprof would drop the parenthesized parts
// of names it takes for C++, which includes Go's generic instances).
func Top(tb testing.TB, path string) (flat, cum map[string]int64) {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(tb, err, "the go tool is needed to compare with pprof -top")
	out, err := exec.CommandContext(tb.Context(), goBin, "tool", "pprof", "-top", "-symbolize=none", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0", "-unit=ns", path).CombinedOutput() //nolint:gosec // G204: fixed arguments and a test file
	require.NoError(tb, err, string(out))
	flat, cum = map[string]int64{}, map[string]int64{}
	parse := func(s string) int64 {
		v, err := strconv.ParseInt(strings.TrimSuffix(s, "ns"), 10, 64)
		require.NoError(tb, err, s)
		return v
	}
	header := false
	for line := range strings.SplitSeq(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "flat" {
			header = true
			continue
		}
		if !header || len(fields) < 6 {
			continue
		}
		name := strings.TrimSuffix(strings.Join(fields[5:], " "), " (inline)")
		flat[name] += parse(fields[0])
		cum[name] += parse(fields[3])
	}
	require.NotEmpty(tb, flat, "pprof -top printed functions:\n%s", out)
	return flat, cum
}
