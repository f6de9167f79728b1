package peer

import (
	"context"
	"fmt"
	"math"
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
//	go test ./internal/integration/peer -run '^$' -bench Density -benchtime 1x
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
		s.measureDisk(b, w)
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
	fmt.Fprint(&sb, informationFloor(b, s, l.events))
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

// peerFloor is the information floor of a side's raw samples table.
type peerFloor struct {
	bits   float64 // joint entropy of a row's sample attributes and series
	attrs  int64   // bytes the attributes and series need at least
	links  int64   // bytes of the random trace links
	events int64
	// columns is what the table's columns that the floor counts take on
	// disk (SampleAttributes, SeriesId, TraceId, SpanId); 0 where its parts
	// are compact (one file for all columns, no per-column sizes).
	columns int64
}

// informationFloor estimates the least the raw samples table can take
// while keeping what a user can filter on: per row, the joint entropy of
// its sample attributes and series (the generator draws thread, CPU and
// pod at random for each event), plus 24 random bytes per trace link.
// Timestamps, stacks and values are left out, so the true floor is
// higher; rows are sorted by minute, stack and second, which orders
// almost nothing among equal keys, so a compressor cannot save the
// entropy of the order.
func informationFloor(b *testing.B, s *peerSide, events int64) peerFloor {
	b.Helper()
	var rows, links uint64
	f := peerFloor{events: events}
	require.NoError(b, s.conn.QueryRow(context.Background(),
		"SELECT count(), entropy(cityHash64(SampleAttributes, SeriesId)), countIf(TraceId != '') FROM "+s.db+".otel_profile_samples").
		Scan(&rows, &f.bits, &links))
	f.attrs = int64(float64(rows) * f.bits / 8)
	f.links = int64(links) * 24
	// Compact parts keep no per-column sizes: measure a wide copy.
	ctx := clickhouse.Context(context.Background(), clickhouse.WithSettings(clickhouse.Settings{"allow_suspicious_low_cardinality_types": 1}))
	wideCopy(ctx, b, s, "otel_profile_samples", "floor_samples", nil, "")
	f.columns = columnBytes(ctx, b, s, "floor_samples", "SampleAttributes", "SeriesId", "TraceId", "SpanId")
	require.NoError(b, s.conn.Exec(ctx, "DROP TABLE "+s.db+".floor_samples"))
	return f
}

// wideCopy copies a table of the side into a new table, its CREATE
// statement edited by edit (nil: as it is) and filled by from ("": every
// row of the table), merged into wide parts, which keep per-column sizes.
// Copies keep every column, codec and row, so their answers are the
// table's.
func wideCopy(ctx context.Context, b *testing.B, s *peerSide, table, name string, edit func(create string) string, from string) {
	b.Helper()
	exec := func(q string) { require.NoError(b, s.conn.Exec(ctx, q), q) }
	var create string
	require.NoError(b, s.conn.QueryRow(ctx, "SELECT create_table_query FROM system.tables WHERE database = ? AND name = ?", s.db, table).Scan(&create))
	q := strings.Replace(create, s.db+"."+table, s.db+"."+name, 1)
	q = strings.Replace(q, "SETTINGS ", "SETTINGS min_bytes_for_wide_part = 0, ", 1)
	if edit != nil {
		q = edit(q)
	}
	if from == "" {
		from = "SELECT * FROM " + s.db + "." + table
	}
	exec(q)
	exec("INSERT INTO " + s.db + "." + name + " " + from)
	exec("OPTIMIZE TABLE " + s.db + "." + name + " FINAL")
}

// columnBytes is what some columns of a table take on disk.
func columnBytes(ctx context.Context, b *testing.B, s *peerSide, table string, columns ...string) int64 {
	b.Helper()
	var n int64
	require.NoError(b, s.conn.QueryRow(ctx, "SELECT toInt64(sum(data_compressed_bytes)) FROM system.columns "+
		"WHERE database = ? AND table = ? AND has(?, name)", s.db, table, columns).Scan(&n))
	return n
}

// columnsPerEvent is what the columns the floor counts take, in bytes per
// event (NaN where the parts are compact).
func (f peerFloor) columnsPerEvent() float64 {
	if f.columns == 0 {
		return math.NaN()
	}
	return float64(f.columns) / float64(f.events)
}

// perEvent is the floor in bytes per event.
func (f peerFloor) perEvent() float64 { return float64(f.attrs+f.links) / float64(f.events) }

func (f peerFloor) String() string {
	perEvent := func(n int64) float64 { return float64(n) / float64(f.events) }
	return fmt.Sprintf("information floor of otel_profile_samples: attributes and series %.2f bits/row = %.3f B/event, "+
		"trace links %.3f B/event, together %.3f B/event (timestamps, stacks and values not counted); "+
		"the columns it counts (SampleAttributes, SeriesId, TraceId, SpanId) take %.3f B/event, %.2f× the floor\n",
		f.bits, perEvent(f.attrs), perEvent(f.links), f.perEvent(), f.columnsPerEvent(), f.columnsPerEvent()/f.perEvent())
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
// Copies are wideCopy's.
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
			from := ""
			if dense {
				from = "SELECT t.* REPLACE (d.Id AS StackId) FROM " + db + "." + table + " AS t " +
					"INNER JOIN " + db + ".layout_stack_ids AS d ON t.StackId = d.StackId"
			}
			wideCopy(ctx, b, s, table, name, func(q string) string {
				if dense {
					q = stackColumn.ReplaceAllString(q, "`StackId` UInt32 CODEC(ZSTD(3))")
				}
				if bucketed {
					key := orderBy.FindString(q)
					require.NotEmpty(b, key, q)
					q = strings.Replace(q, key, strings.Replace(key, "Timestamp, StackId", bucket+", StackId, Timestamp", 1), 1)
				}
				return q
			}, from)
			column := columnBytes(ctx, b, s, name, "StackId")
			var all int64
			require.NoError(b, s.conn.QueryRow(ctx, "SELECT toInt64(sum(bytes_on_disk)) FROM system.parts "+
				"WHERE database = ? AND table = ? AND active", db, name).Scan(&all))
			fmt.Fprintf(&sb, "  %s %.2f / %.2f", layout, float64(column)/float64(events), float64(all)/float64(events))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
