package chembed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
)

// BenchmarkRoundTripSelectOne measures one clickhouse-go query through the
// embedded HTTP interface: session preparation, hello-free request, result.
func BenchmarkRoundTripSelectOne(b *testing.B) {
	conn := chtest.Get(b).Open(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var one uint8
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchInsert1M inserts one clickhouse-go batch of a million rows
// of profile-sample shape (Native over HTTP, spooled, INSERT FROM INFILE)
// and reports rows per second and the Send time alone.
func BenchmarkBatchInsert1M(b *testing.B) {
	srv := chtest.Get(b)
	conn := srv.Open(b)
	db := srv.NewDatabase(b)
	ctx := context.Background()
	require.NoError(b, conn.Exec(ctx, "CREATE TABLE "+db+`.s (Timestamp DateTime, ServiceName LowCardinality(String),
		StackId UInt64, SeriesId UInt64, Value Int64, TraceId String) ENGINE = MergeTree ORDER BY (ServiceName, StackId, Timestamp)`))
	const rows = 1_000_000
	base := time.Now().Truncate(time.Hour)
	var send time.Duration
	for b.Loop() {
		batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".s")
		require.NoError(b, err)
		for i := range rows {
			require.NoError(b, batch.Append(base.Add(time.Duration(i%3600)*time.Second), "checkout",
				uint64(i%50000)*0x9E3779B97F4A7C15, uint64(i%100), int64(50_000_000), ""))
		}
		start := time.Now()
		require.NoError(b, batch.Send())
		send += time.Since(start)
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(send.Seconds()/float64(b.N), "send-s/op")
	var n uint64
	require.NoError(b, conn.QueryRow(ctx, "SELECT count() FROM "+db+".s").Scan(&n))
	require.Equal(b, uint64(rows*b.N), n, "all %d rows arrived", rows*b.N)
}
