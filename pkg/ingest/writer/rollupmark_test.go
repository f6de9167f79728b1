package writer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// markRows builds rows of one service: n rows over the given stacks in
// turn, all in the minute of start (rows of another minute with minute2).
func markRows(tenant, service string, n, stacks int, minute2 bool) []model.Sample {
	meta := &model.SampleMeta{Series: &model.Series{Tenant: tenant, Service: service, ID: 7}, ProfileType: "process_cpu:cpu:nanoseconds:cpu:nanoseconds"}
	out := make([]model.Sample, n)
	for i := range out {
		ts := start.Unix() + int64(i%60)
		if minute2 && i%2 == 1 {
			ts += 60
		}
		out[i] = model.Sample{Timestamp: ts, StackID: uint64(1 + i%stacks), Value: int64(i + 1), Meta: meta}
	}
	return out
}

func TestMinuteRollupMarks(t *testing.T) {
	cases := []struct {
		name     string
		rows     []model.Sample
		minMerge float64
		want     []bool // per service in the order the rows come
	}{
		// 10 rows on 5 stacks: 2 to 1, exactly the threshold.
		{"merges two to one", markRows("t", "a", 10, 5, false), 2, []bool{true}},
		// 10 rows on 6 stacks: 10 / 6 < 2.
		{"merges less", markRows("t", "a", 10, 6, false), 2, []bool{false}},
		// 10 rows on 5 stacks, but half of them in the next minute: 10
		// rows, 10 keys.
		{"a minute is part of the key", markRows("t", "a", 10, 5, true), 2, []bool{false}},
		{"one rolls up every row", markRows("t", "a", 10, 10, false), 1, []bool{true}},
		{
			"decided per service", append(markRows("t", "busy", 100, 2, false), markRows("t", "sparse", 10, 10, false)...),
			2,
			[]bool{true, false},
		},
		{
			"and per tenant", append(markRows("t1", "s", 100, 2, false), markRows("t2", "s", 10, 10, false)...),
			2,
			[]bool{true, false},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Split over two requests: the decision is per insert, not per
			// request.
			half := len(c.rows) / 2
			ps := []*pending{
				{batch: &model.Batch{Samples: c.rows[:half]}},
				{batch: &model.Batch{Samples: c.rows[half:]}},
			}
			marks := minuteRollupMarks(ps, c.minMerge)
			require.Len(t, marks, len(c.rows))
			want := map[string]bool{}
			var order []string
			for _, s := range c.rows {
				key := s.Meta.Series.Tenant + "/" + s.Meta.Series.Service
				if _, ok := want[key]; !ok {
					want[key] = c.want[len(order)]
					order = append(order, key)
				}
			}
			for i, s := range c.rows {
				require.Equal(t, want[s.Meta.Series.Tenant+"/"+s.Meta.Series.Service], marks[i], "row %d", i)
			}
			require.Equal(t, marks, minuteRollupMarks(ps, c.minMerge), "the same insert, the same marks (a retry)")
		})
	}
}

// TestMarkedRowsAreTheMinuteRollupsRows writes a busy and a sparse service
// in one insert through each encoder: the raw table keeps both with their
// marks, the per-minute rollups hold the busy one's rows only, the hourly
// ones both, so the minute rollup plus the unmarked raw rows sum to the
// raw table.
func TestMarkedRowsAreTheMinuteRollupsRows(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	for name, native := range encoders(t, srv) {
		t.Run(name, func(t *testing.T) {
			tables := migrated(t, conn)
			w := newWriter(t, conn, native, tables, nil)
			busy, sparse := markRows("t", "busy", 100, 2, false), markRows("t", "sparse", 10, 10, false)
			batch := model.NewBatch()
			batch.Samples = append(append(batch.Samples, busy...), sparse...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, w.Write(ctx, batch))

			sumOf := func(rows []model.Sample) (total int64) {
				for _, s := range rows {
					total += s.Value
				}
				return total
			}
			query := func(table, where string) map[string]int64 {
				return chtest.Int64sByKey(t, conn, "SELECT ServiceName, toInt64(sum(Value)) FROM "+tables.Qualified(table)+where+" GROUP BY ServiceName")
			}
			both := map[string]int64{"busy": sumOf(busy), "sparse": sumOf(sparse)}
			require.Equal(t, both, query(schema.Samples, ""))
			require.Equal(t, map[string]int64{"busy": sumOf(busy)}, query(schema.Samples, " WHERE "+schema.MinuteRollupColumn))
			for _, minute := range []string{schema.SamplesMinute, schema.ServiceMinute} {
				require.Equal(t, map[string]int64{"busy": sumOf(busy)}, query(minute, ""), minute)
			}
			for _, hour := range []string{schema.SamplesHour, schema.ServiceHour} {
				require.Equal(t, both, query(hour, ""), hour)
			}
		})
	}
}
