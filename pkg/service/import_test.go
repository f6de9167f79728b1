package service

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

var cpuSink int

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

// recordCPUProfile writes a real CPU profile of this process doing known work.
func recordCPUProfile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, pprof.StartCPUProfile(f))
	end := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(end) {
		cpuSink += spinSquares(200_000) + spinBoth(200_000)
	}
	pprof.StopCPUProfile()
	require.NoError(t, f.Close())
}

// pprofTop runs `go tool pprof -top` and returns flat and cumulative
// nanoseconds per function.
func pprofTop(t *testing.T, path string) (flat, cum map[string]int64) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool is needed to compare with pprof -top")
	out, err := exec.Command(goBin, "tool", "pprof", "-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0", "-unit=ns", path).CombinedOutput()
	require.NoError(t, err, string(out))
	flat, cum = map[string]int64{}, map[string]int64{}
	parse := func(s string) int64 {
		v, err := strconv.ParseInt(strings.TrimSuffix(s, "ns"), 10, 64)
		require.NoError(t, err, s)
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
	require.NotEmpty(t, flat, "pprof -top printed functions:\n%s", out)
	return flat, cum
}

// TestImportMatchesPprofTop imports a real CPU profile with `flamehouse
// import` into a running Flamehouse and checks that per-function flat and
// cumulative CPU time computed from ClickHouse equal `go tool pprof -top`.
func TestImportMatchesPprofTop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	path := filepath.Join(t.TempDir(), "cpu.pb.gz")
	recordCPUProfile(t, path)
	wantFlat, wantCum := pprofTop(t, path)

	cfg := DefaultConfig()
	cfg.Embedded.DataDir, cfg.Embedded.ListenAddress = t.TempDir(), "127.0.0.1:0"
	cfg.Ingest.Receiver.GRPCListenAddress, cfg.Ingest.Receiver.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.SelfProfile.Enabled = false
	cfg.Schema.Retention = schema.Retention{}
	ctx := context.Background()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	defer func() { require.NoError(t, svc.Stop(ctx)) }()
	_, httpAddr := svc.IngestAddresses()

	var out, errOut bytes.Buffer
	code := Main([]string{"import", "-endpoint", "http://" + httpAddr, "-service", "imported", "-attr", "env=test", path}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), `as service "imported"`)

	gotFlat, gotCum := clickhouseTop(t, svc, cfg.Schema)
	require.Equal(t, wantFlat, gotFlat, "flat CPU time per function")
	require.Equal(t, wantCum, gotCum, "cumulative CPU time per function")
}

// clickhouseTop computes flat and cumulative CPU time per function from
// the stored samples, stacks and frames, the way a top table does.
func clickhouseTop(t *testing.T, svc *Service, tables schema.Config) (flat, cum map[string]int64) {
	t.Helper()
	ctx := context.Background()
	names := map[uint64]string{}
	rows, err := svc.Conn().Query(ctx, "SELECT FrameId, any(FunctionName), any(MappingFile) FROM "+tables.Qualified(schema.Frames)+
		" WHERE ServiceName = 'imported' GROUP BY FrameId")
	require.NoError(t, err)
	for rows.Next() {
		var id uint64
		var name, mapping string
		require.NoError(t, rows.Scan(&id, &name, &mapping))
		if name == "" && mapping != "" {
			// pprof's function granularity names an unsymbolized
			// location after its mapping's base name.
			name = "[" + filepath.Base(mapping) + "]"
		}
		names[id] = name
	}
	require.NoError(t, rows.Err())
	rows, err = svc.Conn().Query(ctx, `SELECT s.v, st.FrameIds FROM (
		SELECT StackId, sum(Value) AS v FROM `+tables.Qualified(schema.Samples)+`
		WHERE ServiceName = 'imported' AND ProfileType = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds' GROUP BY StackId) AS s
		INNER JOIN (SELECT StackId, any(FrameIds) AS FrameIds FROM `+tables.Qualified(schema.Stacks)+` GROUP BY StackId) AS st USING (StackId)`)
	require.NoError(t, err)
	flat, cum = map[string]int64{}, map[string]int64{}
	for rows.Next() {
		var v int64
		var frames []uint64
		require.NoError(t, rows.Scan(&v, &frames))
		require.NotEmpty(t, frames)
		flat[names[frames[len(frames)-1]]] += v // frames are root first
		seen := map[string]bool{}
		for _, f := range frames {
			if n := names[f]; !seen[n] {
				seen[n] = true
				cum[n] += v
			}
		}
	}
	require.NoError(t, rows.Err())
	for n, v := range flat {
		if v == 0 {
			delete(flat, n)
		}
	}
	// pprof -top lists every function, with 0 flat for callers only.
	for n := range cum {
		if _, ok := flat[n]; !ok {
			flat[n] = 0
		}
	}
	return flat, cum
}
