package service

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkStartEmbedded starts the main job (engine, HTTP interface,
// schema migration) on a fresh data directory and stops it. It reports the
// library load and engine connect times of the first start and the
// process's resident memory once the engine is idle.
func BenchmarkStartEmbedded(b *testing.B) {
	ctx := context.Background()
	var rss float64
	var connect, start time.Duration
	for b.Loop() {
		cfg := DefaultConfig()
		cfg.Embedded.DataDir = b.TempDir()
		cfg.Embedded.ListenAddress = "127.0.0.1:0"
		t0 := time.Now()
		svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), SchemaOnly)
		require.NoError(b, err)
		start += time.Since(t0)
		connect += svc.engine.ConnectDuration
		time.Sleep(200 * time.Millisecond) // let start-up threads settle before sampling memory
		rss = max(rss, residentMiB(b))
		require.NoError(b, svc.Stop(ctx))
		b.ReportMetric(float64(svc.engine.Library().LoadDuration.Milliseconds()), "dlopen-ms")
	}
	b.ReportMetric(float64(start.Milliseconds())/float64(b.N), "start-ms/op")
	b.ReportMetric(float64(connect.Milliseconds())/float64(b.N), "connect-ms/op")
	b.ReportMetric(rss, "idle-rss-MiB")
}

// residentMiB reads this process's resident set size.
func residentMiB(b *testing.B) float64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	require.NoError(b, err)
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			require.NoError(b, err)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
