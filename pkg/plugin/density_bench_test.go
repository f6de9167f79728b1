package plugin

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"
)

// BenchmarkDensity loads the peer benchmark's two workloads (sparse:
// FLAMEHOUSE_PEER_HOURS of 10 events/s; dense: FLAMEHOUSE_PEER_DENSE_SECONDS
// of 10k events/s in node reports) through Flamehouse's in-process ingest
// alone, merges every table and prints where the bytes on disk go: per
// table and, for the tables that grow with events, per column and skip
// index, as bytes per event. It is BenchmarkPeer's disk measurement
// without the other two paths, and with the detail that shows what a
// schema change buys:
//
//	go test ./pkg/plugin -run '^$' -bench Density -benchtime 1x
//
// With FLAMEHOUSE_DENSITY_LAYOUTS=1 it also copies the samples table and
// the four rollups into candidate layouts and prints their sizes (see
// candidateLayouts).
func BenchmarkDensity(b *testing.B) {
	sparse := newPeerWorkload(b)
	perEvent := map[string]float64{}
	for _, w := range []*peerWorkload{sparse, newDenseWorkload(b, sparse)} {
		l := w.generate(b)
		s := newOursSide(b)
		s.load(b, l, w.senders)
		s.measureDisk(b)
		fmt.Print(densityReport(b, w, l, s))
		if os.Getenv("FLAMEHOUSE_DENSITY_LAYOUTS") != "" {
			fmt.Print(candidateLayouts(b, s, l.events))
		}
		perEvent[w.name+"-B/event"] = float64(s.diskBytes()) / float64(l.events)
	}
	for b.Loop() {
	}
	for unit, v := range perEvent { // after the loop, which resets what was reported
		b.ReportMetric(v, unit)
	}
}

// densityReport reads the per-column and per-index sizes of the side's
// database next to the tables' totals.
func densityReport(b *testing.B, w *peerWorkload, l *peerLoad, s *peerSide) string {
	b.Helper()
	ctx := context.Background()
	perEvent := func(n int64) float64 { return float64(n) / float64(l.events) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%s %s: %d events, %d requests, %.0f events/s until acked\n", w.name, w.spanName(), l.events, l.requests,
		float64(l.events)/s.loadTook.Seconds())
	fmt.Fprintf(&sb, "%-36s %12s %12s %10s\n", "table", "rows", "bytes", "B/event")
	for _, d := range s.disk {
		fmt.Fprintf(&sb, "%-36s %12d %12d %10.3f\n", d.table, d.rows, d.bytes, perEvent(d.bytes))
	}
	fmt.Fprintf(&sb, "%-36s %12s %12d %10.3f\n", "all tables", "", s.diskBytes(), perEvent(s.diskBytes()))
	fmt.Fprint(&sb, informationFloor(b, s, perEvent))
	parts := []struct{ kind, sql string }{
		{"column", "SELECT table, name, toInt64(data_compressed_bytes) FROM system.columns WHERE database = ? AND data_compressed_bytes > 0"},
		{"index", "SELECT table, name, toInt64(data_compressed_bytes) FROM system.data_skipping_indices WHERE database = ? AND data_compressed_bytes > 0"},
	}
	for _, p := range parts {
		rows, err := s.conn.Query(ctx, p.sql+" ORDER BY table, data_compressed_bytes DESC", s.db)
		require.NoError(b, err)
		for rows.Next() {
			var table, name string
			var n int64
			require.NoError(b, rows.Scan(&table, &name, &n))
			if perEvent(n) >= 0.01 {
				fmt.Fprintf(&sb, "  %-6s %-34s %-22s %10.3f\n", p.kind, table, name, perEvent(n))
			}
		}
		require.NoError(b, rows.Err())
		rows.Close()
	}
	return sb.String()
}

// informationFloor estimates the least the raw samples table can take
// while keeping what a user can filter on: per row, the joint entropy of
// its sample attributes and series (the generator draws thread, CPU and
// pod at random for each event), plus 24 random bytes per trace link.
// Timestamps, stacks and values are left out, so the true floor is
// higher; rows are sorted by minute, stack and second, which orders
// almost nothing among equal keys, so a compressor cannot save the
// entropy of the order.
func informationFloor(b *testing.B, s *peerSide, perEvent func(int64) float64) string {
	b.Helper()
	var rows, links uint64
	var bits float64
	require.NoError(b, s.conn.QueryRow(context.Background(),
		"SELECT count(), entropy(cityHash64(SampleAttributes, SeriesId)), countIf(TraceId != '') FROM "+s.db+".otel_profile_samples").
		Scan(&rows, &bits, &links))
	attrs := int64(float64(rows) * bits / 8)
	link := int64(links) * 24
	return fmt.Sprintf("information floor of otel_profile_samples: attributes and series %.2f bits/row = %.3f B/event, "+
		"trace links %.3f B/event, together %.3f B/event (timestamps, stacks and values not counted)\n",
		bits, perEvent(attrs), perEvent(link), perEvent(attrs+link))
}

// candidateLayouts copies the samples table and the four rollups, merged,
// into layouts a schema change could adopt, and prints bytes per event of
// the StackId column and of the whole table for each:
//
//   - hash: the table as it is (StackId a 64-bit hash of the frames), as
//     the baseline of the copies;
//   - dense: StackId a UInt32 numbered by first appearance, as a
//     dictionary shared by every writer would assign it;
//   - bucketed: the rollups ordered by hour (1-minute tables) or day
//     (1-hour tables) before the stack, so that a stack's rows of a bucket
//     sit together; not for the samples table, whose key already starts
//     with the minute;
//   - bucketed+dense: both.
//
// Copies keep every column, codec and row, so their answers are the
// table's.
func candidateLayouts(b *testing.B, s *peerSide, events int64) string {
	b.Helper()
	ctx := clickhouse.Context(context.Background(), clickhouse.WithSettings(clickhouse.Settings{"allow_suspicious_low_cardinality_types": 1}))
	exec := func(q string) { require.NoError(b, s.conn.Exec(ctx, q), q) }
	db := s.db
	exec("CREATE TABLE " + db + ".layout_stack_ids ENGINE = MergeTree ORDER BY StackId AS SELECT StackId, " +
		"toUInt32(row_number() OVER (ORDER BY first, StackId)) AS Id FROM " +
		"(SELECT StackId, min(Timestamp) AS first FROM " + db + ".otel_profile_samples GROUP BY StackId)")
	orderBy := regexp.MustCompile(`ORDER BY \((?:[^()]|\([^()]*\))*\)`)
	stackColumn := regexp.MustCompile("`StackId` UInt64( CODEC\\([^)]*\\)\\))?")
	var sb strings.Builder
	sb.WriteString("candidate layouts (bytes per event: StackId column / whole table):\n")
	for _, table := range []string{
		"otel_profile_samples", "otel_profile_samples_1m", "otel_profile_samples_1h",
		"otel_profile_service_samples_1m", "otel_profile_service_samples_1h",
	} {
		var create string
		require.NoError(b, s.conn.QueryRow(ctx, "SELECT create_table_query FROM system.tables WHERE database = ? AND name = ?", db, table).Scan(&create))
		key := orderBy.FindString(create)
		require.NotEmpty(b, key, create)
		bucket := "toStartOfHour(Timestamp)"
		if strings.HasSuffix(table, "_1h") {
			bucket = "toStartOfDay(Timestamp)"
		}
		fmt.Fprintf(&sb, "  %-34s", table)
		for _, layout := range []string{"hash", "dense", "bucketed", "bucketed+dense"} {
			bucketed, dense := strings.HasPrefix(layout, "bucketed"), strings.HasSuffix(layout, "dense")
			if bucketed && table == "otel_profile_samples" {
				continue
			}
			name := "layout_" + strings.NewReplacer("+", "_").Replace(layout) + "_" + table
			q := strings.Replace(create, db+"."+table, db+"."+name, 1)
			// Per-column sizes are kept for wide parts only.
			q = strings.Replace(q, "SETTINGS ", "SETTINGS min_bytes_for_wide_part = 0, ", 1)
			from := "SELECT * FROM " + db + "." + table
			if dense {
				q = stackColumn.ReplaceAllString(q, "`StackId` UInt32 CODEC(ZSTD(3))")
				from = "SELECT t.* REPLACE (d.Id AS StackId) FROM " + db + "." + table + " AS t " +
					"INNER JOIN " + db + ".layout_stack_ids AS d ON t.StackId = d.StackId"
			}
			if bucketed {
				q = strings.Replace(q, key, strings.Replace(key, "Timestamp, StackId", bucket+", StackId, Timestamp", 1), 1)
			}
			exec(q)
			exec("INSERT INTO " + db + "." + name + " " + from)
			exec("OPTIMIZE TABLE " + db + "." + name + " FINAL")
			var column, all int64
			require.NoError(b, s.conn.QueryRow(ctx, "SELECT toInt64(sum(data_compressed_bytes)) FROM system.columns "+
				"WHERE database = ? AND table = ? AND name = 'StackId'", db, name).Scan(&column))
			require.NoError(b, s.conn.QueryRow(ctx, "SELECT toInt64(sum(bytes_on_disk)) FROM system.parts "+
				"WHERE database = ? AND table = ? AND active", db, name).Scan(&all))
			fmt.Fprintf(&sb, "  %s %.2f / %.2f", layout, float64(column)/float64(events), float64(all)/float64(events))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
