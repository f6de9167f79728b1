package writer

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// storedSample is a sample row as read back from ClickHouse.
type storedSample struct {
	ts                           time.Time
	tenant, service, profileType string
	stack, series                uint64
	value                        int64
	trace, span                  string
	attrs                        map[string]string
	inMinuteRollups              bool
}

// TestNativeBlockRoundTrip writes rows whose columns need every encoding
// case — no attributes at all, dictionaries beyond 256 and 65,536 entries
// (wider indices), long and non-ASCII strings, negative values — and reads
// back exactly what was written. A shape gives row i its service, sample
// attributes and trace link. Every row has a stack of its own, so no
// rows merge and none is marked for the per-minute rollups.
func TestNativeBlockRoundTrip(t *testing.T) {
	srv := chtest.Get(t)
	native := nativeOf(t, srv)
	if native == nil {
		t.Skip("the server speaks the native protocol: no Native-block inserts to test")
	}
	conn := srv.Open(t)
	long := strings.Repeat("ß", 150) // a two-byte length prefix
	cases := map[string]func(i int) (string, []model.KV, *[2]string){
		"no-attributes": func(i int) (string, []model.KV, *[2]string) {
			return fmt.Sprintf("svc-%d", i%3), nil, nil
		},
		"uint16-indices": func(i int) (string, []model.KV, *[2]string) {
			kvs := []model.KV{{Key: "cpu", Value: strconv.Itoa(i % 7)}, {Key: "thread.id", Value: strconv.Itoa(i)}}
			if i%5 == 0 {
				kvs = nil
			}
			link := &[2]string{fmt.Sprintf("%032x", i), fmt.Sprintf("%016x", i)}
			if i%2 == 0 {
				link = nil
			}
			// 257 services: one past what a one-byte index holds.
			return fmt.Sprintf("%s-日本-%d", long, i%257), kvs, link
		},
		"uint32-indices": func(i int) (string, []model.KV, *[2]string) {
			return "n", []model.KV{{Key: "thread.id", Value: strconv.Itoa(i)}}, nil
		},
	}
	rowsOf := map[string]int{"no-attributes": 10, "uint16-indices": 1000, "uint32-indices": 70_000}
	for name, shape := range cases {
		t.Run(name, func(t *testing.T) {
			tables := migrated(t, conn)
			w := newWriter(t, conn, native, tables, nil)
			n := rowsOf[name]
			batch := model.NewBatch()
			want := make([]storedSample, 0, n)
			base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
			for i := range n {
				service, kvs, link := shape(i)
				series := &model.Series{Tenant: "t", Service: service, ID: uint64(i % 11)}
				meta := &model.SampleMeta{Series: series, ProfileType: "process_cpu:cpu:nanoseconds:cpu:nanoseconds"}
				if link != nil {
					meta.TraceID, meta.SpanID = link[0], link[1]
				}
				s := model.Sample{Timestamp: base.Unix() + int64(i%90), StackID: uint64(i) * 7919, Value: int64(i) - 500, Meta: meta, Attributes: kvs}
				batch.Samples = append(batch.Samples, s)
				attrs := model.KVMap(kvs)
				want = append(want, storedSample{
					ts: time.Unix(s.Timestamp, 0).UTC(), tenant: "t", service: series.Service, profileType: meta.ProfileType,
					stack: s.StackID, series: series.ID, value: s.Value, trace: meta.TraceID, span: meta.SpanID, attrs: attrs,
				})
			}
			_, err := w.insertSamples(context.Background(), []*pending{{ctx: context.Background(), batch: batch}})
			require.NoError(t, err)
			got := readSamples(t, conn, tables)
			sortStored(want)
			sortStored(got)
			require.Len(t, got, len(want))
			for i := range want {
				require.Equal(t, want[i], got[i], "row %d", i)
			}
		})
	}
}

func readSamples(t *testing.T, conn clickhouse.Conn, tables schema.Config) []storedSample {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT "+sampleColumns+" FROM "+tables.Qualified(schema.Samples))
	require.NoError(t, err)
	defer rows.Close()
	var out []storedSample
	for rows.Next() {
		var s storedSample
		require.NoError(t, rows.Scan(&s.ts, &s.tenant, &s.service, &s.profileType, &s.stack, &s.series, &s.value, &s.trace, &s.span,
			&s.attrs, &s.inMinuteRollups))
		s.ts = s.ts.UTC()
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

func sortStored(s []storedSample) {
	slices.SortFunc(s, func(a, b storedSample) int {
		if a.stack != b.stack {
			return cmpUint(a.stack, b.stack)
		}
		return a.ts.Compare(b.ts)
	})
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
