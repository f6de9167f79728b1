package schema_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

func TestMain(m *testing.M) { chtest.Main(m) }

// freshConfig returns a config for a database of its own, dropped after the test.
func freshConfig(t *testing.T, conn clickhouse.Conn) schema.Config {
	t.Helper()
	var b [5]byte
	_, _ = rand.Read(b[:])
	cfg := schema.DefaultConfig()
	cfg.Database = "schema_" + hex.EncodeToString(b[:])
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+cfg.Database) })
	return cfg
}

// migrated applies the schema for cfg and returns its migrator.
func migrated(t *testing.T, conn clickhouse.Conn, cfg schema.Config) *schema.Migrator {
	t.Helper()
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	_, err = m.Migrate(context.Background())
	require.NoError(t, err)
	return m
}

func TestMigrateCreatesEveryTable(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)

	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"0001_initial", "0002_rollup_dedup", "0003_symbols", "0004_dense_columns"}, report.Applied)
	require.Equal(t, schema.LatestVersion(), report.Version)
	require.Empty(t, report.RetentionChanged, "tables are created with the configured TTL")

	for _, table := range schema.Tables {
		var n uint64
		require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ?",
			cfg.Database, cfg.Name(table)).Scan(&n))
		require.Positive(t, n, "table %s exists", table)
	}
	var engine string
	require.NoError(t, conn.QueryRow(ctx, "SELECT engine_full FROM system.tables WHERE database = ? AND name = ?",
		cfg.Database, cfg.Name(schema.Samples)).Scan(&engine))
	require.Contains(t, engine, "PARTITION BY toDate(Timestamp)")
	require.Contains(t, engine, "ORDER BY (TenantId, ServiceName, ProfileType, toStartOfMinute(Timestamp), StackId, Timestamp)")
	require.Contains(t, engine, "ttl_only_drop_parts = 1")
	require.Contains(t, engine, "non_replicated_deduplication_window = 1000")
	// Version 2: the rollups deduplicate a repeated insert as the samples do.
	for _, rollup := range []string{schema.SamplesMinute, schema.SamplesHour, schema.ServiceMinute, schema.ServiceHour} {
		require.NoError(t, conn.QueryRow(ctx, "SELECT engine_full FROM system.tables WHERE database = ? AND name = ?",
			cfg.Database, cfg.Name(rollup)).Scan(&engine))
		require.Contains(t, engine, "non_replicated_deduplication_window = 1000", rollup)
	}

	version, err := m.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, schema.LatestVersion(), version)
}

func TestMigrateIsIdempotent(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	m := migrated(t, conn, cfg)

	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.Empty(t, report.Applied, "nothing to apply the second time")

	// A migration whose record was lost (interrupted before it was written)
	// runs again without error.
	require.NoError(t, conn.Exec(ctx, "TRUNCATE TABLE "+cfg.Database+".otel_profile_schema_migrations"))
	report, err = m.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"0001_initial", "0002_rollup_dedup", "0003_symbols", "0004_dense_columns"}, report.Applied)
}

func TestMigrateAppliesRetentionChanges(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	migrated(t, conn, cfg)

	cfg.Retention.Samples = 48 * time.Hour
	cfg.Retention.Hour = 0
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{
		"otel_profile_samples", "otel_profile_samples_1h", "otel_profile_service_samples_1h",
		"otel_profile_stacks", "otel_profile_frames", "otel_profile_series", "otel_profile_catalog", "otel_profile_sample_labels",
	}, report.RetentionChanged)

	ttl := func(table string) string {
		var e string
		require.NoError(t, conn.QueryRow(ctx, "SELECT engine_full FROM system.tables WHERE database = ? AND name = ?", cfg.Database, table).Scan(&e))
		return e
	}
	require.Contains(t, ttl("otel_profile_samples"), "TTL Timestamp + toIntervalSecond(172800)")
	require.NotContains(t, ttl("otel_profile_samples_1h"), "TTL ")
	require.NotContains(t, ttl("otel_profile_stacks"), "TTL ", "metadata lives as long as the longest rollup: forever")

	report, err = m.Migrate(ctx)
	require.NoError(t, err)
	require.Empty(t, report.RetentionChanged, "a second run finds nothing to change")
}

func TestMigrateSymbolsRetention(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	cfg.Retention.Symbols = 30 * 24 * time.Hour
	m := migrated(t, conn, cfg)
	engine := func(table string) string {
		var e string
		require.NoError(t, conn.QueryRow(ctx, "SELECT engine_full FROM system.tables WHERE database = ? AND name = ?", cfg.Database, cfg.Name(table)).Scan(&e))
		return e
	}
	require.Contains(t, engine(schema.Symbols), "TTL toDateTime(intDiv(Version, 1000)) + toIntervalSecond(2592000)")
	require.Contains(t, engine(schema.Executables), "TTL UpdatedAt + toIntervalSecond(2592000)")
	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.Empty(t, report.RetentionChanged, "ClickHouse prints the TTLs back as the migration wrote them")

	cfg.Retention.Symbols = 0
	m, err = schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	report, err = m.Migrate(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"otel_profile_symbols", "otel_profile_executables"}, report.RetentionChanged)
	require.NotContains(t, engine(schema.Symbols), "TTL ")

	var cols uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name IN ('MappingStart', 'MappingOffset')",
		cfg.Database, cfg.Name(schema.Frames)).Scan(&cols))
	require.Equal(t, uint64(2), cols, "version 3 places unsymbolized frames' mappings")
}

func TestRollupsFollowSamples(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	migrated(t, conn, cfg)

	base := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+cfg.Qualified(schema.Samples)+
		" (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value, TraceId, SpanId, SampleAttributes)")
	require.NoError(t, err)
	const cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	for i := range 600 {
		ts := base.Add(time.Duration(i) * 10 * time.Second) // 100 minutes
		series := uint64(1 + (i/2)%2)
		require.NoError(t, batch.Append(ts, "t1", "checkout", cpu, uint64(100+i%2), series, int64(1000+i),
			"", "", map[string]string{"thread.name": fmt.Sprintf("worker-%d", i%3)}))
	}
	require.NoError(t, batch.Send())
	require.NoError(t, conn.Exec(ctx, "INSERT INTO "+cfg.Qualified(schema.Series)+
		" (TenantId, ServiceName, SeriesId, ResourceAttributes, LastSeen) VALUES ('t1', 'checkout', 1, map('k8s.pod.name', 'pod-1', 'k8s.namespace.name', 'prod'), today())"))

	// The rollups hold exactly the raw sums, by any grouping they keep.
	for _, rollup := range []struct{ table, bucket string }{{schema.SamplesMinute, "toStartOfMinute"}, {schema.SamplesHour, "toStartOfHour"}} {
		var mismatches uint64
		q := fmt.Sprintf(`SELECT count() FROM (
			SELECT %[1]s(Timestamp) AS b, StackId, SeriesId, sum(Value) AS v FROM %[2]s GROUP BY b, StackId, SeriesId) AS raw
			FULL OUTER JOIN (
			SELECT Timestamp AS b, StackId, SeriesId, sum(Value) AS v FROM %[3]s GROUP BY b, StackId, SeriesId) AS r
			USING (b, StackId, SeriesId) WHERE raw.v != r.v`,
			rollup.bucket, cfg.Qualified(schema.Samples), cfg.Qualified(rollup.table))
		require.NoError(t, conn.QueryRow(ctx, q).Scan(&mismatches))
		require.Zero(t, mismatches, "rollup %s equals the raw table", rollup.table)
	}
	var total int64
	var minuteRows, hourRows uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT sum(Value) FROM "+cfg.Qualified(schema.SamplesHour)).Scan(&total))
	require.Equal(t, int64(600*1000+600*599/2), total)
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM "+cfg.Qualified(schema.SamplesMinute)+" FINAL").Scan(&minuteRows))
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM "+cfg.Qualified(schema.SamplesHour)+" FINAL").Scan(&hourRows))
	require.Less(t, hourRows, minuteRows)
	require.Less(t, minuteRows, uint64(600))

	var pod string
	require.NoError(t, conn.QueryRow(ctx, "SELECT K8sPodName FROM "+cfg.Qualified(schema.Series)+" WHERE SeriesId = 1").Scan(&pod))
	require.Equal(t, "pod-1", pod, "series materialize their k8s columns from the attribute map")
}
