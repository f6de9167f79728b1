package writer

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
)

// BenchmarkInsertSamples measures the sample insert alone — clickhouse-go
// encoding plus ClickHouse's work (sorting, compression, skip indexes and
// the materialized views) — for a write of two W-service reports
// (≈100k rows, one row per event in this shape).
func BenchmarkInsertSamples(b *testing.B) {
	srv := chtest.Get(b)
	conn := srv.Open(b)
	tables := migrated(b, conn)
	w, err := New(DefaultConfig(), tables, conn, nativeOf(b, srv), slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(b, err)
	b.Cleanup(func() { _ = w.Close(context.Background()) })
	cfg := profilegen.DefaultConfig()
	g := profilegen.New(cfg)
	var ps []*pending
	rows := 0
	for i := range 2 {
		at := start.Add(time.Duration(i) * cfg.ReportInterval)
		opts := convert.DefaultOptions("acme")
		opts.Now = func() time.Time { return at.Add(time.Minute) }
		res, err := convert.Convert(g.Report(at), opts)
		require.NoError(b, err)
		ps = append(ps, &pending{ctx: context.Background(), batch: res.Batch})
		rows += len(res.Batch.Samples)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		for _, p := range ps {
			p.token = "" // a new insert each round, not a deduplicated retry
		}
		n, err := w.insertSamples(ctx, ps)
		require.NoError(b, err)
		require.Equal(b, rows, n)
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkEncodeSamples measures the Native encoding of a W-service
// report's sample rows (client CPU only).
func BenchmarkEncodeSamples(b *testing.B) {
	cfg := profilegen.DefaultConfig()
	at := start
	opts := convert.DefaultOptions("acme")
	opts.Now = func() time.Time { return at.Add(time.Minute) }
	res, err := convert.Convert(profilegen.New(cfg).Report(at), opts)
	require.NoError(b, err)
	ps := []*pending{{ctx: context.Background(), batch: res.Batch}}
	rows := len(res.Batch.Samples)
	var size int
	b.ReportAllocs()
	for b.Loop() {
		size = len(encodeSamples(ps, minuteRollupMarks(ps, DefaultConfig().MinuteRollupMinMerge)))
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(size)/float64(rows), "bytes/row")
}
