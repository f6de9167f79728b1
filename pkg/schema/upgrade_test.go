package schema_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// fillVersion3 writes rows as the version 3 writer wrote them (the samples
// with their seven label columns) into a database migrated to version 3:
// 40 minutes of samples over 4 series, 50 stacks, trace links and sample
// attributes, the stacks they name and their series.
func fillVersion3(t *testing.T, conn clickhouse.Conn, cfg schema.Config, base time.Time) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value,
		TraceId, SpanId, SampleAttributes, ServiceNamespace, K8sNamespaceName, K8sPodName, K8sNodeName)
		SELECT toDateTime(%d) + intDiv(number, 10) AS ts, 't1', 'checkout', 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
			cityHash64(number %% 50) AS stack, cityHash64(number %% 4) AS series, toInt64(1000 + number %% 997),
			if(number %% 20 = 0, lower(hex(cityHash64(number, 1))) || lower(hex(cityHash64(number, 2))), ''),
			if(number %% 20 = 0, lower(hex(cityHash64(number, 3))), ''),
			map('thread.id', toString(number %% 16), 'cpu.logical_number', toString(number %% 7)),
			'shop', 'prod', concat('checkout-', toString(number %% 4)), concat('node-', toString(number %% 2))
		FROM numbers(24000)`, cfg.Qualified(schema.Samples), base.Unix())))
	require.NoError(t, conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (TenantId, ServiceName, StackId, FrameIds, LastSeen)
		SELECT 't1', 'checkout', cityHash64(number), arrayMap(i -> cityHash64(i * 7 + number %% 3), range(5 + number %% 20)), today()
		FROM numbers(50)`, cfg.Qualified(schema.Stacks))))
	require.NoError(t, conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (TenantId, ServiceName, SeriesId, ResourceAttributes, LastSeen)
		SELECT 't1', 'checkout', cityHash64(number), map('k8s.pod.name', concat('checkout-', toString(number)), 'k8s.node.name',
			concat('node-', toString(number %% 2))), today()
		FROM numbers(4)`, cfg.Qualified(schema.Series))))
}

// upgradeSnapshot is what must survive an upgrade: every row's content in
// aggregate, the rollups' sums and the stacks' frames.
type upgradeSnapshot struct {
	Rows, Sum, Traced, AttrHash, ByStackSeries uint64
	Minute, Hour, ServiceMinute, ServiceHour   uint64
	Stacks                                     uint64
	PodSums                                    map[string]int64
}

func snapshot(t *testing.T, conn clickhouse.Conn, cfg schema.Config) upgradeSnapshot {
	t.Helper()
	ctx := context.Background()
	var s upgradeSnapshot
	q := func(sql string, dst ...any) { require.NoError(t, conn.QueryRow(ctx, sql).Scan(dst...), sql) }
	samples := cfg.Qualified(schema.Samples)
	q("SELECT count(), toUInt64(sum(Value)), countIf(TraceId != ''), groupBitXor(cityHash64(Timestamp, StackId, toUInt64(SeriesId), Value, TraceId, SpanId, SampleAttributes)) FROM "+samples,
		&s.Rows, &s.Sum, &s.Traced, &s.AttrHash)
	q("SELECT groupBitXor(cityHash64(StackId, toUInt64(SeriesId), v)) FROM (SELECT StackId, SeriesId, sum(Value) AS v FROM "+samples+" GROUP BY StackId, SeriesId)", &s.ByStackSeries)
	rollup := func(table string, bySeries bool) uint64 {
		series := "0"
		if bySeries {
			series = "toUInt64(SeriesId)"
		}
		var h uint64
		q(fmt.Sprintf("SELECT groupBitXor(cityHash64(Timestamp, StackId, %[1]s, v)) FROM (SELECT Timestamp, StackId, %[1]s AS SeriesId, sum(Value) AS v FROM %[2]s GROUP BY ALL)",
			series, cfg.Qualified(table)), &h)
		return h
	}
	s.Minute, s.Hour = rollup(schema.SamplesMinute, true), rollup(schema.SamplesHour, true)
	s.ServiceMinute, s.ServiceHour = rollup(schema.ServiceMinute, false), rollup(schema.ServiceHour, false)
	q("SELECT groupBitXor(cityHash64(StackId, arrayMap(x -> toUInt64(x), FrameIds))) FROM "+cfg.Qualified(schema.Stacks), &s.Stacks)
	// A label filter, as the datasource runs it: through the series.
	rows, err := conn.Query(ctx, "SELECT r.K8sPodName, toInt64(sum(Value)) FROM "+samples+" AS s INNER JOIN "+cfg.Qualified(schema.Series)+
		" AS r ON toUInt64(s.SeriesId) = r.SeriesId GROUP BY r.K8sPodName")
	require.NoError(t, err)
	defer rows.Close()
	s.PodSums = map[string]int64{}
	for rows.Next() {
		var pod string
		var v int64
		require.NoError(t, rows.Scan(&pod, &v))
		s.PodSums[pod] = v
	}
	require.NoError(t, rows.Err())
	return s
}

// waitForMutations waits until the database's mutations are done and
// fails on one that cannot be applied.
func waitForMutations(t *testing.T, conn clickhouse.Conn, db string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var pending uint64
		var reason string
		require.NoError(t, conn.QueryRow(context.Background(),
			"SELECT count(), any(latest_fail_reason) FROM system.mutations WHERE database = ? AND NOT is_done", db).Scan(&pending, &reason))
		require.Empty(t, reason, "a mutation failed")
		return pending == 0
	}, 2*time.Minute, 100*time.Millisecond)
}

// atVersion is a fresh database migrated to a schema version, and its
// migrator, for an upgrade from there.
func atVersion(t *testing.T, version int) (clickhouse.Conn, schema.Config, *schema.Migrator) {
	t.Helper()
	conn := chtest.Get(t).Open(t)
	cfg := freshConfig(t, conn)
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	_, err = m.MigrateTo(context.Background(), version)
	require.NoError(t, err)
	return conn, cfg, m
}

// TestUpgradeToVersion4 fills a database of schema version 3 as that
// version's writer did, upgrades it to version 4 in place and checks that
// every row, rollup, stack and label filter answers as before — after the
// mutations and after the parts are merged — and that version 4 rows go
// in beside the old ones.
func TestUpgradeToVersion4(t *testing.T) {
	conn, cfg, m := atVersion(t, 3)
	ctx := context.Background()
	base := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	fillVersion3(t, conn, cfg, base)
	before := snapshot(t, conn, cfg)
	require.Equal(t, uint64(24000), before.Rows)
	require.Len(t, before.PodSums, 4)

	report, err := m.MigrateTo(ctx, 4)
	require.NoError(t, err)
	require.Equal(t, []string{"0004_dense_columns"}, report.Applied)
	waitForMutations(t, conn, cfg.Database)
	require.Equal(t, before, snapshot(t, conn, cfg), "after the mutations")

	columnType := func(table, column string) string {
		var typ string
		err := conn.QueryRow(ctx, "SELECT type FROM system.columns WHERE database = ? AND table = ? AND name = ?", cfg.Database, cfg.Name(table), column).Scan(&typ)
		if err != nil {
			return ""
		}
		return typ
	}
	require.Equal(t, "LowCardinality(UInt64)", columnType(schema.Samples, "SeriesId"))
	require.Equal(t, "LowCardinality(UInt64)", columnType(schema.SamplesMinute, "SeriesId"))
	require.Equal(t, "Array(LowCardinality(UInt64))", columnType(schema.Stacks, "FrameIds"))
	for _, gone := range []string{"ServiceNamespace", "K8sPodName", "K8sNodeName", "K8sContainerName"} {
		require.Empty(t, columnType(schema.Samples, gone), "%s is read from profile_series", gone)
	}

	for _, table := range schema.Tables {
		if table != schema.Profiles { // version 5
			require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+cfg.Qualified(table)+" FINAL"))
		}
	}
	require.Equal(t, before, snapshot(t, conn, cfg), "after merging the old parts")

	// Version 4 rows (no label columns) go into the same tables and views.
	require.NoError(t, conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value,
		TraceId, SpanId, SampleAttributes)
		SELECT toDateTime(%d) + number, 't1', 'checkout', 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', cityHash64(number %% 50),
			cityHash64(number %% 4), 5, '', '', map()
		FROM numbers(600)`, cfg.Qualified(schema.Samples), base.Unix())))
	after := snapshot(t, conn, cfg)
	require.Equal(t, before.Rows+600, after.Rows)
	require.Equal(t, before.Sum+3000, after.Sum)
	for pod, v := range before.PodSums {
		require.Equal(t, v+750, after.PodSums[pod], pod)
	}
	var mismatches uint64
	require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf(`SELECT count() FROM (
		SELECT toStartOfMinute(Timestamp) AS b, StackId, toUInt64(SeriesId) AS s, sum(Value) AS v FROM %s GROUP BY b, StackId, s) AS raw
		FULL OUTER JOIN (SELECT Timestamp AS b, StackId, toUInt64(SeriesId) AS s, sum(Value) AS v FROM %s GROUP BY b, StackId, s) AS r
		USING (b, StackId, s) WHERE raw.v != r.v`, cfg.Qualified(schema.Samples), cfg.Qualified(schema.SamplesMinute))).Scan(&mismatches))
	require.Zero(t, mismatches, "the minute rollup still equals the raw table")
}

// TestUpgradeToVersion5 upgrades a version 4 database with samples in
// place: the profiles table is added, the samples and rollups answer as
// before, and a profile row goes in and reads back.
func TestUpgradeToVersion5(t *testing.T) {
	conn, cfg, m := atVersion(t, 4)
	ctx := context.Background()
	base := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	require.NoError(t, conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value,
		TraceId, SpanId, SampleAttributes)
		SELECT toDateTime(%d) + number, 't1', 'checkout', 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', cityHash64(number %% 50),
			cityHash64(number %% 4), 5, '', '', map()
		FROM numbers(600)`, cfg.Qualified(schema.Samples), base.Unix())))
	before := snapshot(t, conn, cfg)

	report, err := m.MigrateTo(ctx, 5)
	require.NoError(t, err)
	require.Equal(t, []string{"0005_profiles"}, report.Applied)
	require.Equal(t, before, snapshot(t, conn, cfg), "the samples and rollups are untouched")

	require.NoError(t, conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (Timestamp, TenantId, ServiceName, ProfileType, SeriesId, ProfileId,
		DurationNanos, Period, FirstSample, LastSample, Events, Total) VALUES
		(fromUnixTimestamp64Nano(%d), 't1', 'checkout', 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', 7, '', 10000000000, 50000000,
		 toDateTime(%d), toDateTime(%d), 200, 1000)`, cfg.Qualified(schema.Profiles), base.UnixNano()+123, base.Unix(), base.Unix()+9)))
	var at time.Time
	var events uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT Timestamp, Events FROM "+cfg.Qualified(schema.Profiles)).Scan(&at, &events))
	require.Equal(t, base.UnixNano()+123, at.UnixNano(), "nanoseconds kept")
	require.Equal(t, uint64(200), events)
}

// podSumsBySeriesProjection sums each pod's values in a by-series rollup
// through its by_series projection: ClickHouse refuses the query when it
// does not read it (force_optimize_projection_name). The pod's series are
// looked up first: the setting applies to every read of a query, the
// series lookup's too.
func podSumsBySeriesProjection(t *testing.T, conn clickhouse.Conn, cfg schema.Config, table string, pods []string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	forced := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{
		"optimize_use_projections": 1, "force_optimize_projection_name": "by_series",
	}))
	out := map[string]int64{}
	for _, pod := range pods {
		var series []uint64
		require.NoError(t, conn.QueryRow(ctx, "SELECT groupArray(SeriesId) FROM "+cfg.Qualified(schema.Series)+
			" WHERE TenantId = 't1' AND K8sPodName = ?", pod).Scan(&series))
		var v int64
		require.NoError(t, conn.QueryRow(forced, podFilterSQL(cfg, table, "?"), series).Scan(&v),
			"%s, pod %s, through the by_series projection", table, pod)
		out[pod] = v
	}
	return out
}

// podFilterSQL sums a rollup's values of the series in a set, as the
// datasource filters by a label.
func podFilterSQL(cfg schema.Config, table, series string) string {
	return fmt.Sprintf(`SELECT toInt64(sum(Value)) FROM %s WHERE TenantId = 't1' AND ServiceName = 'checkout'
		AND ProfileType = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds' AND SeriesId IN (%s)`, cfg.Qualified(table), series)
}

// readsBySeries reports whether ClickHouse's plan for a pod filter as the
// datasource writes it (the pod's series by subquery) reads the by_series
// projection.
func readsBySeries(t *testing.T, conn clickhouse.Conn, cfg schema.Config, table string) bool {
	t.Helper()
	rows, err := conn.Query(context.Background(), "EXPLAIN "+podFilterSQL(cfg, table,
		"SELECT SeriesId FROM "+cfg.Qualified(schema.Series)+" WHERE TenantId = 't1' AND K8sPodName = 'checkout-1'"))
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(t, rows.Err())
	return strings.Contains(strings.Join(plan, "\n"), "ReadFromMergeTree (by_series)")
}

// TestUpgradeToVersion6 upgrades a version 4 database with samples of four
// pods in place to version 6: every row, rollup and label filter answers
// as before, and the by-series rollups answer a pod filter through their
// by_series projection with the raw table's sums — for the parts written
// before the upgrade (built by the migration's mutation), after merging
// them, and for rows written after it.
func TestUpgradeToVersion6(t *testing.T) {
	conn, cfg, m := atVersion(t, 4)
	ctx := context.Background()
	require.False(t, readsBySeries(t, conn, cfg, schema.SamplesMinute), "version 4 has no by_series projection")
	base := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	insert := func(from time.Time, n int) {
		require.NoError(t, conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value,
			TraceId, SpanId, SampleAttributes)
			SELECT toDateTime(%d) + intDiv(number, 40), 't1', 'checkout', 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', cityHash64(number %% 4999),
				cityHash64(number %% 4), toInt64(1 + number %% 7), '', '', map()
			FROM numbers(%d)`, cfg.Qualified(schema.Samples), from.Unix(), n)))
	}
	// Two hours at 40 rows a second over 4,999 stacks: each by-series
	// rollup holds several granules (the hour's some 40k rows), so that
	// reading one pod's series through the projection reads fewer of them
	// than the table's own order (ClickHouse picks a projection only then).
	insert(base, 40*7200)
	require.NoError(t, conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (TenantId, ServiceName, SeriesId, ResourceAttributes, LastSeen)
		SELECT 't1', 'checkout', cityHash64(number), map('k8s.pod.name', concat('checkout-', toString(number))), today()
		FROM numbers(4)`, cfg.Qualified(schema.Series))))
	before := snapshot(t, conn, cfg)
	require.Len(t, before.PodSums, 4)
	pods := make([]string, 0, len(before.PodSums))
	for pod := range before.PodSums {
		pods = append(pods, pod)
	}

	report, err := m.MigrateTo(ctx, 6)
	require.NoError(t, err)
	require.Equal(t, []string{"0005_profiles", "0006_series_projections"}, report.Applied)
	waitForMutations(t, conn, cfg.Database)
	require.Equal(t, before, snapshot(t, conn, cfg), "after the upgrade's mutations")
	for _, table := range []string{schema.SamplesMinute, schema.SamplesHour} {
		require.True(t, readsBySeries(t, conn, cfg, table), "%s: a pod filter reads the by_series projection", table)
		require.Equal(t, before.PodSums, podSumsBySeriesProjection(t, conn, cfg, table, pods), "%s: the parts written before the upgrade", table)
	}

	insert(base, 40*600) // the same seconds again: rows that merge with the old ones
	after := snapshot(t, conn, cfg)
	require.NotEqual(t, before.PodSums, after.PodSums)
	for _, table := range []string{schema.SamplesMinute, schema.SamplesHour} {
		require.Equal(t, after.PodSums, podSumsBySeriesProjection(t, conn, cfg, table, pods), "%s: old and new parts", table)
		require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+cfg.Qualified(table)+" FINAL"))
		require.Equal(t, after.PodSums, podSumsBySeriesProjection(t, conn, cfg, table, pods), "%s: merged (the projection rebuilt)", table)
	}
	require.Equal(t, after, snapshot(t, conn, cfg), "merging changes no answer")
}

// TestUpgradeToVersion7 upgrades a version 4 database in place to version
// 7: the rows written before keep counting in every rollup (the mark's
// default), rows written after it by an older writer too, and rows a
// version 7 writer leaves out of the per-minute rollups are in the hourly
// ones and in the raw table, so that a minute's raw sums are its minute
// rollup's plus its unmarked raw rows'. A query for unmarked rows skips
// the granules of a busy service by the mark's index.
func TestUpgradeToVersion7(t *testing.T) {
	conn, cfg, m := atVersion(t, 4)
	ctx := context.Background()
	base := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	samples := cfg.Qualified(schema.Samples)
	insert := func(service string, n int, mark string) {
		cols, val := "", ""
		if mark != "" {
			cols, val = ", "+schema.MinuteRollupColumn, ", "+mark
		}
		require.NoError(t, conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value,
			TraceId, SpanId, SampleAttributes%s)
			SELECT toDateTime(%d) + intDiv(number, 20), 't1', '%s', 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', cityHash64(number %% 37),
				cityHash64(number %% 4), toInt64(1 + number %% 7), '', '', map()%s
			FROM numbers(%d)`, samples, cols, base.Unix(), service, val, n)))
	}
	insert("checkout", 20*3600, "")
	before := snapshot(t, conn, cfg)

	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"0005_profiles", "0006_series_projections", "0007_minute_rollup_marks"}, report.Applied)
	waitForMutations(t, conn, cfg.Database)
	require.Equal(t, before, snapshot(t, conn, cfg), "the upgrade changes no answer")

	minuteSums := func(table, where string) map[string]int64 {
		return chtest.Int64sByKey(t, conn, "SELECT ServiceName, toInt64(sum(Value)) FROM "+cfg.Qualified(table)+where+" GROUP BY ServiceName")
	}
	insert("old-writer", 20*600, "")  // a writer that predates version 7
	insert("sparse", 20*600, "false") // left out of the per-minute rollups
	insert("busy", 20*600, "true")    // held by them
	raw := minuteSums(schema.Samples, "")
	unmarked := minuteSums(schema.Samples, " WHERE "+schema.MinuteRollupColumn+" = false")
	require.Equal(t, map[string]int64{"sparse": raw["sparse"]}, unmarked)
	for _, table := range []string{schema.SamplesMinute, schema.ServiceMinute} {
		got := minuteSums(table, "")
		require.NotContains(t, got, "sparse", table)
		for service, v := range unmarked {
			got[service] += v
		}
		require.Equal(t, raw, got, "%s plus the unmarked raw rows: the raw sums", table)
	}
	for _, table := range []string{schema.SamplesHour, schema.ServiceHour} {
		require.Equal(t, raw, minuteSums(table, ""), "%s holds every row", table)
	}

	// The unmarked rows of the busy service: its granules, all marked, are
	// skipped by the index, the sparse service's are read.
	require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+samples+" FINAL"))
	plan := func(service string) string {
		rows, err := conn.Query(ctx, "EXPLAIN indexes = 1 SELECT sum(Value) FROM "+samples+" WHERE ServiceName = '"+service+
			"' AND "+schema.MinuteRollupColumn+" = false") // the form the index analysis reads (not NOT)
		require.NoError(t, err)
		defer rows.Close()
		var lines []string
		for rows.Next() {
			var l string
			require.NoError(t, rows.Scan(&l))
			lines = append(lines, strings.TrimSpace(l))
		}
		return strings.Join(lines, "\n")
	}
	require.Contains(t, plan("checkout"), "idx_in_minute_rollups", "the mark's index is used")
	require.Regexp(t, `idx_in_minute_rollups\n(?:.*\n)*?Granules: 0/`, plan("checkout"), "a busy service's granules are skipped")
}
