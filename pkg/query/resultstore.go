package query

import (
	"container/list"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// The plugin's own cache of query results (Cache's CachePlugin mode): a
// store bounded in bytes, least recently used first out, whose entries
// expire; a result is recorded as its rows are scanned and replayed to the
// next reader of the same statement.

// Stats is what the plugin's store holds.
type Stats struct {
	Entries      int
	Bytes        int64
	Hits, Misses int64
}

// cacheKey identifies a result: the tenant, the statement and its
// parameters (which name the tables and the range).
func cacheKey(tenant, q string, args []any) string {
	var b strings.Builder
	b.WriteString(strconv.Quote(tenant))
	b.WriteByte('\n')
	b.WriteString(q)
	for _, a := range args {
		b.WriteByte('\n')
		if n, ok := a.(driver.NamedValue); ok {
			fmt.Fprintf(&b, "%s=%q", n.Name, fmt.Sprint(n.Value))
		} else {
			fmt.Fprintf(&b, "%q", fmt.Sprint(a))
		}
	}
	return b.String()
}

// resultStore is the plugin's cache: results by key, least recently used
// first out when over its bound, each until it expires.
type resultStore struct {
	mu           sync.Mutex
	limit, bytes int64
	entries      map[string]*list.Element
	lru          *list.List // of *storedResult, most recent first
	hits, misses int64
}

type storedResult struct {
	key     string
	value   any // *result, or data.Frames of an answer
	expires time.Time
	size    int64
}

func newResultStore(limit int64) *resultStore {
	return &resultStore{limit: limit, entries: map[string]*list.Element{}, lru: list.New()}
}

func (s *resultStore) get(key string, now time.Time) *result {
	res, _ := s.getValue(key, now).(*result)
	return res
}

// getValue returns an entry that has not expired, or nil.
func (s *resultStore) getValue(key string, now time.Time) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.entries[key]
	if !ok {
		s.misses++
		return nil
	}
	entry := el.Value.(*storedResult) // the list holds these only
	if !now.Before(entry.expires) {
		s.remove(el)
		s.misses++
		return nil
	}
	s.lru.MoveToFront(el)
	s.hits++
	return entry.value
}

func (s *resultStore) put(key string, res *result, expires time.Time) {
	s.putValue(key, res, res.size(), expires)
}

// putValue stores an entry of about size bytes (its key added).
func (s *resultStore) putValue(key string, value any, size int64, expires time.Time) {
	size += int64(len(key))
	if size > s.limit/8 {
		return // one answer may not flush a large part of the cache
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.entries[key]; ok {
		s.remove(el)
	}
	s.entries[key] = s.lru.PushFront(&storedResult{key: key, value: value, expires: expires, size: size})
	s.bytes += size
	for s.bytes > s.limit {
		s.remove(s.lru.Back())
	}
}

func (s *resultStore) remove(el *list.Element) {
	entry := s.lru.Remove(el).(*storedResult) // the list holds these only
	delete(s.entries, entry.key)
	s.bytes -= entry.size
}

func (s *resultStore) stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Entries: len(s.entries), Bytes: s.bytes, Hits: s.hits, Misses: s.misses}
}

// read answers from the store, or runs the query and stores its result
// once it was read to the end without error.
func (s *resultStore) read(ctx context.Context, e *Engine, key, q string, args []any, expires time.Time, now func() time.Time) (rowReader, error) {
	if res := s.get(key, now()); res != nil {
		return &replay{res: res, row: -1}, nil
	}
	rows, err := e.Conn.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return &recorder{rows: rows, res: &result{}, done: func(res *result) { s.put(key, res, expires) }}, nil
}

// result is a query's rows, column by column.
type result struct {
	rows    int
	columns []column
}

// column holds one scanned column's values: one of the slices, by the type
// scanned into.
type column struct {
	u64 []uint64
	i64 []int64
	f64 []float64
	str []string
}

func (r *result) size() int64 {
	size := int64(64)
	for _, c := range r.columns {
		size += 8 * int64(len(c.u64)+len(c.i64)+len(c.f64))
		for _, s := range c.str {
			size += 16 + int64(len(s))
		}
	}
	return size
}

// recorder reads rows through and keeps what was scanned; at Close after
// the last row, the result is stored.
type recorder struct {
	rows       driver.Rows
	res        *result
	unsuitable bool // a column of a type the cache does not keep
	finished   bool
	done       func(*result)
}

func (r *recorder) Next() bool {
	if r.rows.Next() {
		return true
	}
	r.finished = true
	return false
}

func (r *recorder) Scan(dest ...any) error {
	if err := r.rows.Scan(dest...); err != nil {
		r.unsuitable = true
		return err
	}
	if r.res.columns == nil {
		r.res.columns = make([]column, len(dest))
	}
	if len(dest) != len(r.res.columns) {
		r.unsuitable = true
		return nil
	}
	for i, d := range dest {
		c := &r.res.columns[i]
		switch v := d.(type) {
		case *uint64:
			c.u64 = append(c.u64, *v)
		case *int64:
			c.i64 = append(c.i64, *v)
		case *float64:
			c.f64 = append(c.f64, *v)
		case *string:
			c.str = append(c.str, *v)
		default:
			r.unsuitable = true
		}
	}
	r.res.rows++
	return nil
}

func (r *recorder) Err() error { return r.rows.Err() }

func (r *recorder) Close() error {
	err := r.rows.Close()
	if err == nil && r.finished && !r.unsuitable && r.rows.Err() == nil {
		r.done(r.res)
	}
	return err
}

// replay serves a stored result.
type replay struct {
	res *result
	row int
}

func (r *replay) Next() bool {
	r.row++
	return r.row < r.res.rows
}

func (r *replay) Scan(dest ...any) error {
	if len(dest) != len(r.res.columns) {
		return fmt.Errorf("cached result of %d columns scanned into %d", len(r.res.columns), len(dest))
	}
	for i, d := range dest {
		c := &r.res.columns[i]
		var ok bool
		switch v := d.(type) {
		case *uint64:
			ok = cell(c.u64, r.row, v)
		case *int64:
			ok = cell(c.i64, r.row, v)
		case *float64:
			ok = cell(c.f64, r.row, v)
		case *string:
			ok = cell(c.str, r.row, v)
		}
		if !ok {
			return fmt.Errorf("cached result: column %d scanned into %T", i, d)
		}
	}
	return nil
}

func (*replay) Err() error   { return nil }
func (*replay) Close() error { return nil }

// cell copies a column's value of row into dst; false when the column
// holds no such row (it was scanned into another type).
func cell[T any](vals []T, row int, dst *T) bool {
	if row >= len(vals) {
		return false
	}
	*dst = vals[row]
	return true
}
