package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
func BenchmarkDensity(b *testing.B) {
	sparse := newPeerWorkload(b)
	perEvent := map[string]float64{}
	for _, w := range []*peerWorkload{sparse, newDenseWorkload(b, sparse)} {
		l := w.generate(b)
		s := newOursSide(b)
		s.load(b, l, w.senders)
		s.measureDisk(b)
		fmt.Print(densityReport(b, w, l, s))
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
	link := int64(links) * 24 //nolint:gosec // G115: row counts fit
	return fmt.Sprintf("information floor of otel_profile_samples: attributes and series %.2f bits/row = %.3f B/event, "+
		"trace links %.3f B/event, together %.3f B/event (timestamps, stacks and values not counted)\n",
		bits, perEvent(attrs), perEvent(link), perEvent(attrs+link))
}
