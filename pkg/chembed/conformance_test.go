package chembed_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// The conformance suite drives the embedded server with unmodified
// clickhouse-go over HTTP, the way Flamehouse and the Grafana ClickHouse
// plugin use a real server. With FLAMEHOUSE_CLICKHOUSE_URL set it runs
// against that server instead, which keeps the suite honest.

func TestMain(m *testing.M) { chtest.Main(m) }

func chException(t *testing.T, err error) *clickhouse.Exception {
	t.Helper()
	require.Error(t, err)
	var ex *clickhouse.Exception
	require.ErrorAs(t, err, &ex, "error %v is not a *clickhouse.Exception", err)
	return ex
}

func TestConformancePingAndVersion(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	require.NoError(t, conn.Ping(context.Background()))
	v, err := conn.ServerVersion()
	require.NoError(t, err)
	require.GreaterOrEqual(t, v.Version.Major, uint64(26), "engine must be ClickHouse 26.x or newer")
	var one uint8
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT 1").Scan(&one))
	require.Equal(t, uint8(1), one)
}

// schemaLikeDDL uses every feature the Flamehouse schema relies on.
const schemaLikeDDL = `CREATE TABLE %s.samples (
	Timestamp DateTime64(9) CODEC(Delta(8), ZSTD(1)),
	Day Date DEFAULT toDate(Timestamp),
	TenantId LowCardinality(String) CODEC(ZSTD(1)),
	ServiceName LowCardinality(String) CODEC(ZSTD(1)),
	StackId UInt64 CODEC(ZSTD(1)),
	Value Int64 CODEC(T64, ZSTD(1)),
	Count UInt32,
	Ratio Float64,
	TraceId String CODEC(ZSTD(1)),
	Frames Array(UInt64) CODEC(ZSTD(1)),
	Labels Array(String),
	ResourceAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
	PodName LowCardinality(String) MATERIALIZED ResourceAttributes['k8s.pod.name'],
	INDEX idx_trace TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
	INDEX idx_res_keys mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1
) ENGINE = MergeTree
PARTITION BY toDate(Timestamp)
ORDER BY (TenantId, ServiceName, toStartOfMinute(Timestamp), StackId)
TTL toDateTime(Timestamp) + INTERVAL 30 DAY
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1`

func TestConformanceDDLAndBatchInsertMillionRows(t *testing.T) {
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	conn := srv.Open(t)
	ctx := context.Background()
	require.NoError(t, conn.Exec(ctx, fmt.Sprintf(schemaLikeDDL, db)))

	const rows = 1_000_000
	base := time.Date(2026, 11, 20, 12, 0, 0, 123456789, time.UTC)
	start := time.Now()
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".samples (Timestamp, TenantId, ServiceName, StackId, Value, Count, Ratio, TraceId, Frames, Labels, ResourceAttributes)")
	require.NoError(t, err)
	var wantValue int64
	for i := range rows {
		v := int64(i % 1000)
		wantValue += v
		require.NoError(t, batch.Append(
			base.Add(time.Duration(i)*time.Millisecond),
			"tenant",
			fmt.Sprintf("svc-%d", i%3),
			uint64(i%5000)*0x9E3779B97F4A7C15,
			v,
			uint32(1),
			0.5,
			fmt.Sprintf("%032x", i),
			[]uint64{1, 2, uint64(i % 7)},
			[]string{"a", "b\n\nc"}, // "\n\n" would cut inline INSERT data short in libchdb
			map[string]string{"k8s.pod.name": fmt.Sprintf("pod-%d", i%10), "service.name": "x"},
		))
	}
	appended := time.Since(start)
	require.NoError(t, batch.Send())
	t.Logf("1M-row batch insert: append %s, send %s, total %s", appended, time.Since(start)-appended, time.Since(start))

	var count uint64
	var sum int64
	var pods uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(), sum(Value), uniqExact(PodName) FROM "+db+".samples").Scan(&count, &sum, &pods))
	require.Equal(t, uint64(rows), count)
	require.Equal(t, wantValue, sum)
	require.Equal(t, uint64(10), pods, "MATERIALIZED column computed from the map")

	var ts time.Time
	var frames []uint64
	var labels []string
	var attrs map[string]string
	require.NoError(t, conn.QueryRow(ctx, "SELECT Timestamp, Frames, Labels, ResourceAttributes FROM "+db+".samples WHERE TraceId = ?",
		fmt.Sprintf("%032x", 7)).Scan(&ts, &frames, &labels, &attrs))
	require.True(t, base.Add(7*time.Millisecond).Equal(ts), "DateTime64(9) round-trips to the nanosecond: got %s", ts)
	require.Equal(t, []uint64{1, 2, 0}, frames)
	require.Equal(t, []string{"a", "b\n\nc"}, labels)
	require.Equal(t, "pod-7", attrs["k8s.pod.name"])
}

func TestConformanceBatchInsertCompressedAndAllColumns(t *testing.T) {
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	ctx := context.Background()
	for _, method := range []clickhouse.CompressionMethod{clickhouse.CompressionNone, clickhouse.CompressionGZIP, clickhouse.CompressionDeflate} {
		t.Run(method.String(), func(t *testing.T) {
			conn := srv.Open(t, func(o *clickhouse.Options) {
				o.Compression = &clickhouse.Compression{Method: method}
			})
			table := db + ".t_" + method.String()
			require.NoError(t, conn.Exec(ctx, "CREATE TABLE "+table+" (a UInt32, b String, c LowCardinality(String)) ENGINE = MergeTree ORDER BY a"))
			batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+table)
			require.NoError(t, err)
			for i := range 10000 {
				require.NoError(t, batch.Append(uint32(i), strings.Repeat("x", i%50), "c"))
			}
			require.NoError(t, batch.Send())
			var n uint64
			require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM "+table+" WHERE c = 'c'").Scan(&n))
			require.Equal(t, uint64(10000), n)
		})
	}
}

func TestConformanceParameters(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	ctx := context.Background()

	var s string
	var n uint64
	// Client-side positional binding.
	require.NoError(t, conn.QueryRow(ctx, "SELECT ?, toUInt64(?)", "it's", uint64(7)).Scan(&s, &n))
	require.Equal(t, "it's", s)
	require.Equal(t, uint64(7), n)
	// Client-side named binding.
	require.NoError(t, conn.QueryRow(ctx, "SELECT @a, toUInt64(@b)", clickhouse.Named("a", "x"), clickhouse.Named("b", uint64(9))).Scan(&s, &n))
	require.Equal(t, "x", s)
	require.Equal(t, uint64(9), n)
	// Server-side typed parameters from Named arguments: values travel as param_*.
	tricky := "tab\there\nnewline 'quote' \\backslash"
	require.NoError(t, conn.QueryRow(ctx, "SELECT {s:String}, {n:UInt64}", clickhouse.Named("s", tricky), clickhouse.Named("n", "42")).Scan(&s, &n))
	require.Equal(t, tricky, s)
	require.Equal(t, uint64(42), n)
	// Server-side parameters through the context.
	pctx := clickhouse.Context(ctx, clickhouse.WithParameters(clickhouse.Parameters{
		"arr": "['a','b']", "m": "{'k':'v'}", "ts": "2026-11-20 12:00:00.123456789",
	}))
	var arr []string
	var m map[string]string
	var ts time.Time
	require.NoError(t, conn.QueryRow(pctx, "SELECT {arr:Array(String)}, {m:Map(String, String)}, {ts:DateTime64(9, 'UTC')}").Scan(&arr, &m, &ts))
	require.Equal(t, []string{"a", "b"}, arr)
	require.Equal(t, map[string]string{"k": "v"}, m)
	require.Equal(t, time.Date(2026, 11, 20, 12, 0, 0, 123456789, time.UTC), ts.UTC())
}

func TestConformanceSettingsAndDeadline(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	ctx := context.Background()

	var threads string
	sctx := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"max_threads": 1}))
	require.NoError(t, conn.QueryRow(sctx, "SELECT toString(getSetting('max_threads'))").Scan(&threads))
	require.Equal(t, "1", threads)

	// clickhouse-go turns a context deadline into max_execution_time.
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var limit string
	require.NoError(t, conn.QueryRow(dctx, "SELECT toString(getSetting('max_execution_time'))").Scan(&limit))
	require.Contains(t, []string{"34", "35"}, limit, "deadline+5s, whole seconds")

	// A context that expires cancels the request on the client side.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	err := conn.Exec(short, "SELECT sleep(2)")
	require.Error(t, err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestConformanceErrors(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	ctx := context.Background()

	ex := chException(t, conn.Exec(ctx, "SELECT * FROM no_such_table"))
	require.Equal(t, int32(60), ex.Code)
	require.Equal(t, "UNKNOWN_TABLE", ex.CodeName)
	var httpErr *clickhouse.HTTPError
	require.ErrorAs(t, conn.Exec(ctx, "SELECT * FROM no_such_table"), &httpErr)
	require.Equal(t, 404, httpErr.StatusCode)

	ex = chException(t, conn.Exec(ctx, "SELEC 1"))
	require.Equal(t, int32(62), ex.Code)

	ex = chException(t, conn.Exec(ctx, "SELECT throwIf(1, 'boom')"))
	require.Equal(t, int32(395), ex.Code)

	// An error after rows were streamed arrives in-band and is still typed.
	// One thread and small blocks make the engine deliver rows before it fails.
	rows, err := conn.Query(ctx, "SELECT number, throwIf(number = 2000000) FROM numbers(3000000) SETTINGS max_threads = 1, max_block_size = 10000")
	require.NoError(t, err)
	seen := 0
	for rows.Next() {
		seen++
	}
	ex = chException(t, rows.Err())
	require.Equal(t, int32(395), ex.Code)
	require.Positive(t, seen, "some rows arrived before the error")
	require.Error(t, rows.Close(), "clickhouse-go repeats the stream error on Close")

	// The failed statement's partial output does not leak into the next result.
	var one uint8
	require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, uint8(1), one)
}

func TestConformanceResults(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	ctx := context.Background()

	// Multi-block result, streamed.
	rows, err := conn.Query(ctx, "SELECT number, toString(number) FROM numbers(1000000)")
	require.NoError(t, err)
	var n, sum uint64
	for rows.Next() {
		var v uint64
		var s string
		require.NoError(t, rows.Scan(&v, &s))
		n++
		sum += v
	}
	require.NoError(t, rows.Err())
	require.Equal(t, uint64(1000000), n)
	require.Equal(t, uint64(999999*1000000/2), sum)

	// Empty result.
	rows, err = conn.Query(ctx, "SELECT number FROM numbers(10) WHERE number > 100")
	require.NoError(t, err)
	require.False(t, rows.Next())
	require.NoError(t, rows.Err())

	// Types the schema and the datasource read back.
	var (
		u8  uint8
		u64 uint64
		i64 int64
		f64 float64
		lc  string
		dt  time.Time
		day time.Time
		arr []uint64
		mp  map[string]string
	)
	require.NoError(t, conn.QueryRow(ctx, `SELECT toUInt8(200), toUInt64(18446744073709551615), toInt64(-5), 1.5,
		toLowCardinality('lc'), toDateTime64('2026-11-20 10:00:00.000000001', 9, 'UTC'), toDate('2026-11-20'),
		[1, 2, 3]::Array(UInt64), map('a', 'b')::Map(LowCardinality(String), String)`).
		Scan(&u8, &u64, &i64, &f64, &lc, &dt, &day, &arr, &mp))
	require.Equal(t, uint8(200), u8)
	require.Equal(t, uint64(18446744073709551615), u64)
	require.Equal(t, int64(-5), i64)
	require.InDelta(t, 1.5, f64, 0)
	require.Equal(t, "lc", lc)
	require.Equal(t, 1, dt.Nanosecond())
	require.Equal(t, 20, day.Day())
	require.Equal(t, []uint64{1, 2, 3}, arr)
	require.Equal(t, map[string]string{"a": "b"}, mp)
}

func TestConformanceDatabaseSQL(t *testing.T) {
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	opts := srv.Options
	std := clickhouse.OpenDB(&opts)
	t.Cleanup(func() { _ = std.Close() })
	ctx := context.Background()
	require.NoError(t, std.PingContext(ctx))
	_, err := std.ExecContext(ctx, "CREATE TABLE "+db+".kv (k String, v UInt32) ENGINE = MergeTree ORDER BY k")
	require.NoError(t, err)

	tx, err := std.BeginTx(ctx, nil)
	require.NoError(t, err)
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO "+db+".kv")
	require.NoError(t, err)
	for i := range 100 {
		_, err := stmt.ExecContext(ctx, fmt.Sprintf("k%03d", i), uint32(i))
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit())

	var total uint64
	require.NoError(t, std.QueryRowContext(ctx, "SELECT sum(v) FROM "+db+".kv").Scan(&total))
	require.Equal(t, uint64(4950), total)

	var missing string
	err = std.QueryRowContext(ctx, "SELECT k FROM "+db+".kv WHERE k = 'none'").Scan(&missing)
	require.ErrorIs(t, err, sql.ErrNoRows)
}

// TestConformanceSchemaColumnTypes writes one row into each Flamehouse
// table through clickhouse-go batches and reads it back, covering every
// column type the schema uses: DateTime, Date, DateTime64(3), Bool, UInt32,
// UInt64, Int64, String, LowCardinality(String), Array(UInt64),
// Map(LowCardinality(String), String), Map(LowCardinality(String),
// LowCardinality(String)) and SimpleAggregateFunction(sum, Int64).
func TestConformanceSchemaColumnTypes(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	ctx := context.Background()
	cfg := schema.DefaultConfig()
	cfg.Database = srv.NewDatabase(t)
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	_, err = m.Migrate(ctx)
	require.NoError(t, err)

	ts := time.Now().UTC().Truncate(time.Second)
	day := time.Date(ts.Year(), ts.Month(), ts.Day(), 0, 0, 0, 0, time.UTC)
	insert := func(table, columns string, values ...any) {
		t.Helper()
		batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+cfg.Qualified(table)+" ("+columns+")")
		require.NoError(t, err)
		require.NoError(t, batch.Append(values...))
		require.NoError(t, batch.Send())
	}
	insert(schema.Samples, "Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value, TraceId, SpanId, SampleAttributes",
		ts, "t", "svc", "process_cpu:cpu:nanoseconds:cpu:nanoseconds", uint64(1)<<63+7, uint64(42), int64(-5),
		"0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", map[string]string{"thread.name": "main"})
	insert(schema.Stacks, "TenantId, ServiceName, StackId, FrameIds, LastSeen", "t", "svc", uint64(1)<<63+7, []uint64{3, 2, 1}, day)
	insert(schema.Frames, "TenantId, ServiceName, FrameId, FunctionName, SystemName, FileName, Line, Column, Inlined, MappingFile, BuildId, Address, FrameType, LastSeen",
		"t", "svc", uint64(3), "main.work", "_ZN4main4workE", "main.go", uint32(42), uint32(7), true, "/bin/app", "abc123", uint64(0x401000), "go", day)
	insert(schema.Series, "TenantId, ServiceName, SeriesId, ResourceAttributes, LastSeen", "t", "svc", uint64(42),
		map[string]string{"k8s.pod.name": "pod-0", "service.namespace": "shop"}, day)

	var (
		gotTS    time.Time
		attrs    map[string]string
		value    int64
		stackID  uint64
		frames   []uint64
		lastSeen time.Time
		inlined  bool
		line     uint32
		resource map[string]string
		ns       string
		rolled   int64
		applied  time.Time
	)
	require.NoError(t, conn.QueryRow(ctx, "SELECT Timestamp, SampleAttributes, Value, StackId FROM "+cfg.Qualified(schema.Samples)).
		Scan(&gotTS, &attrs, &value, &stackID))
	require.True(t, ts.Equal(gotTS))
	require.Equal(t, map[string]string{"thread.name": "main"}, attrs)
	require.Equal(t, int64(-5), value)
	require.Equal(t, uint64(1)<<63+7, stackID)
	require.NoError(t, conn.QueryRow(ctx, "SELECT FrameIds, LastSeen FROM "+cfg.Qualified(schema.Stacks)).Scan(&frames, &lastSeen))
	require.Equal(t, []uint64{3, 2, 1}, frames)
	require.True(t, day.Equal(lastSeen))
	require.NoError(t, conn.QueryRow(ctx, "SELECT Inlined, Line FROM "+cfg.Qualified(schema.Frames)).Scan(&inlined, &line))
	require.True(t, inlined)
	require.Equal(t, uint32(42), line)
	require.NoError(t, conn.QueryRow(ctx, "SELECT ResourceAttributes, ServiceNamespace FROM "+cfg.Qualified(schema.Series)).Scan(&resource, &ns))
	require.Equal(t, "pod-0", resource["k8s.pod.name"])
	require.Equal(t, "shop", ns)
	require.NoError(t, conn.QueryRow(ctx, "SELECT Value FROM "+cfg.Qualified(schema.SamplesMinute)).Scan(&rolled))
	require.Equal(t, int64(-5), rolled)
	require.NoError(t, conn.QueryRow(ctx, "SELECT AppliedAt FROM "+cfg.Database+".otel_profile_schema_migrations").Scan(&applied))
	require.WithinDuration(t, time.Now(), applied, time.Hour)
}
