package schema_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// BenchmarkBytesPerSample loads synthetic eBPF-like CPU samples into the
// schema (one service at 10k samples/s, 100 pods, 50k stacks with a
// log-uniform skew, 5% of samples with a trace link, a thread name on
// every sample), the way the ingest writes them: summed per second, series,
// stack, link and sample attributes. It reports bytes on disk per sample
// for the samples table and for each rollup, after merges.
func BenchmarkBytesPerSample(b *testing.B) {
	const samples = 1_000_000 // 100 s at 10k samples/s
	conn := chtest.Get(b).Open(b)
	ctx := context.Background()
	for b.Loop() {
		cfg := schema.DefaultConfig()
		cfg.Database = "bench_bytes"
		require.NoError(b, conn.Exec(ctx, "DROP DATABASE IF EXISTS bench_bytes"))
		m, err := schema.NewMigrator(cfg, conn)
		require.NoError(b, err)
		_, err = m.Migrate(ctx)
		require.NoError(b, err)
		insert := fmt.Sprintf(`INSERT INTO %s (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value,
			TraceId, SpanId, SampleAttributes)
		SELECT ts, '', 'checkout', 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', stack, cityHash64(pod), sum(50000000),
			trace, span, map('thread.name', thread)
		FROM (
			SELECT toDateTime('2026-11-20 12:00:00') + intDiv(number, 10000) AS ts,
				cityHash64(toUInt64(exp(log(50000.) * rand(1) / 4294967295.))) AS stack,
				rand(2) %% 100 AS pod,
				if(rand(3) %% 20 = 0, lower(hex(randomString(16))), '') AS trace,
				if(trace = '', '', lower(hex(randomString(8)))) AS span,
				concat('worker-', toString(rand(4) %% 8)) AS thread
			FROM numbers(%d))
		GROUP BY ts, stack, pod, trace, span, thread`, cfg.Qualified(schema.Samples), samples)
		require.NoError(b, conn.Exec(ctx, insert))
		for _, t := range []string{schema.Samples, schema.SamplesMinute, schema.SamplesHour, schema.ServiceMinute, schema.ServiceHour} {
			require.NoError(b, conn.Exec(ctx, "OPTIMIZE TABLE "+cfg.Qualified(t)+" FINAL"))
			var bytes, rows uint64
			require.NoError(b, conn.QueryRow(ctx, "SELECT sum(bytes_on_disk), sum(rows) FROM system.parts WHERE active AND database = ? AND table = ?",
				cfg.Database, cfg.Name(t)).Scan(&bytes, &rows))
			b.ReportMetric(float64(bytes)/samples, t+"-B/sample")
			b.ReportMetric(float64(rows), t+"-rows")
		}
		require.NoError(b, conn.Exec(ctx, "DROP DATABASE bench_bytes"))
	}
}
