package query

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"
)

// fakeRows serves rows of (uint64, int64, float64, string), failing with
// err after failAt rows when set.
type fakeRows struct {
	driver.Rows
	rows   [][4]any
	at     int
	failAt int
	err    error
	closed bool
}

func (f *fakeRows) Next() bool {
	if f.err != nil && f.at == f.failAt {
		return false
	}
	f.at++
	return f.at <= len(f.rows)
}

func (f *fakeRows) Scan(dest ...any) error {
	row := f.rows[f.at-1]
	for i, d := range dest {
		switch v := d.(type) {
		case *uint64:
			*v = row[i].(uint64) // the test's rows
		case *int64:
			*v = row[i].(int64)
		case *float64:
			*v = row[i].(float64)
		case *string:
			*v = row[i].(string)
		default:
			return fmt.Errorf("scan into %T", d)
		}
	}
	return nil
}

func (f *fakeRows) Err() error {
	if f.at == f.failAt {
		return f.err
	}
	return nil
}

func (f *fakeRows) Close() error { f.closed = true; return nil }

func testRows(n int) [][4]any {
	out := make([][4]any, n)
	for i := range out {
		out[i] = [4]any{uint64(i), int64(-i), float64(i) / 2, fmt.Sprint("s", i)}
	}
	return out
}

// scanAll reads rows like the engine does.
func scanAll(t *testing.T, r rowReader) [][4]any {
	t.Helper()
	var out [][4]any
	for r.Next() {
		var u uint64
		var i int64
		var f float64
		var s string
		require.NoError(t, r.Scan(&u, &i, &f, &s))
		out = append(out, [4]any{u, i, f, s})
	}
	require.NoError(t, r.Close())
	return out
}

func TestResultStoreRecordsAndReplays(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	store := newResultStore(1 << 20)
	stored := 0
	rec := &recorder{rows: &fakeRows{rows: testRows(100)}, res: &result{}, done: func(r *result) { store.put("k", r, now.Add(time.Minute)); stored++ }}
	require.Equal(t, testRows(100), scanAll(t, rec))
	require.Equal(t, 1, stored, "stored once read to the end")
	res := store.get("k", now.Add(59*time.Second))
	require.NotNil(t, res)
	require.Equal(t, testRows(100), scanAll(t, &replay{res: res, row: -1}), "replayed as read")
	require.Nil(t, store.get("k", now.Add(time.Minute)), "expired at its TTL")
	require.Equal(t, Stats{Entries: 0, Bytes: 0, Hits: 1, Misses: 1}, store.stats())

	// Not stored: a result not read to the end, a failed one, a column of
	// another type.
	partial := &recorder{rows: &fakeRows{rows: testRows(10)}, res: &result{}, done: func(*result) { t.Fatal("stored a partial result") }}
	require.True(t, partial.Next())
	require.NoError(t, partial.Scan(new(uint64), new(int64), new(float64), new(string)))
	require.NoError(t, partial.Close())
	failed := &recorder{rows: &fakeRows{rows: testRows(10), failAt: 5, err: errors.New("broken")}, res: &result{}, done: func(*result) { t.Fatal("stored a failed result") }}
	for failed.Next() {
		require.NoError(t, failed.Scan(new(uint64), new(int64), new(float64), new(string)))
	}
	require.Error(t, failed.Err())
	require.NoError(t, failed.Close())
}

func TestResultStoreIsBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	one := &result{rows: 1000, columns: []column{{u64: make([]uint64, 1000)}}}
	size := one.size() + 1
	store := newResultStore(8 * size)
	for i := range 20 {
		store.put(strconv.Itoa(i%10), one, now.Add(time.Hour))
		require.LessOrEqual(t, store.stats().Bytes, 8*size)
	}
	require.Equal(t, 8, store.stats().Entries)
	require.NotNil(t, store.get("9", now), "the most recent stay")
	require.Nil(t, store.get("0", now), "the least recently used go")
	big := &result{rows: 10000, columns: []column{{u64: make([]uint64, 10000)}}}
	store.put("big", big, now.Add(time.Hour))
	require.Nil(t, store.get("big", now), "an answer larger than an eighth of the cache is not kept")
}

func TestCacheKeysAndClosedRanges(t *testing.T) {
	args := []any{clickhouse.Named("p0", "acme"), clickhouse.Named("p1", "10")}
	require.NotEqual(t, cacheKey("a", "SELECT 1", args), cacheKey("b", "SELECT 1", args), "per tenant")
	require.NotEqual(t, cacheKey("a", "SELECT 1", args), cacheKey("a", "SELECT 1", []any{clickhouse.Named("p0", "acme"), clickhouse.Named("p1", "11")}), "per parameters")
	require.NotEqual(t, cacheKey("a", "SELECT 1", args), cacheKey("a", "SELECT 2", args))

	now := time.Unix(1_800_000_000, 0)
	c := &Cache{Now: func() time.Time { return now }}
	require.True(t, c.closed(now.Add(-time.Minute)))
	require.False(t, c.closed(now.Add(-59*time.Second)), "a range ending within a minute still moves")
	require.False(t, c.closed(now.Add(time.Hour)))
	c.ClosedAfter = 10 * time.Minute
	require.False(t, c.closed(now.Add(-5*time.Minute)))
	c.Mode = CacheOff
	require.False(t, c.closed(now.Add(-time.Hour)))
	var none *Cache
	require.False(t, none.closed(now.Add(-time.Hour)))
}
