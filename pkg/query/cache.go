package query

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// CacheMode says where the answers of queries over closed time ranges are
// cached.
type CacheMode string

// Cache modes.
const (
	// CacheAuto uses ClickHouse's query cache when the server has one that
	// the datasource's user may use, else the plugin's own.
	CacheAuto CacheMode = "auto"
	// CacheClickHouse sends use_query_cache with the queries of closed
	// ranges: the server caches their results.
	CacheClickHouse CacheMode = "clickhouse"
	// CachePlugin keeps the results in the plugin's memory, bounded.
	CachePlugin CacheMode = "plugin"
	// CacheOff reads everything every time.
	CacheOff CacheMode = "off"
)

// CacheModes are the cache modes.
var CacheModes = []CacheMode{CacheAuto, CacheClickHouse, CachePlugin, CacheOff}

// DefaultCacheMode is the cache mode of a datasource that sets none.
const DefaultCacheMode = CacheAuto

// ValidCacheMode reports whether a cache mode is known ("" is CacheAuto).
func ValidCacheMode(m CacheMode) bool { return m == "" || slices.Contains(CacheModes, m) }

// Cache defaults.
const (
	// DefaultCacheTTL is how long a cached answer is served. Answers are
	// invalidated by time only (new rows do not evict them): a closed
	// range can still receive late rows — a Collector's exporter retries
	// a failed batch for up to 5 minutes by default — so an answer cached
	// within that window misses such rows for at most this long, while a
	// dashboard refreshing every 5 s to 1 min re-reads a closed range at
	// most once per 5 minutes.
	DefaultCacheTTL = 5 * time.Minute
	// DefaultCacheClosedAfter is how long ago a range must end to be
	// closed: profiles arrive once their collection window ends (eBPF
	// profiler reports every 5 s, Go's pprof senders after 10-15 s, batched
	// by Collectors for a few seconds more), so a range that ends a minute
	// ago no longer moves. A range ending later is never cached.
	DefaultCacheClosedAfter = time.Minute
	// DefaultCacheBytes bounds the plugin's cache of one datasource.
	DefaultCacheBytes = 256 << 20
)

// Cache answers the queries of closed time ranges — ranges that end before
// the data still moving — from a cache: ClickHouse's query cache, or the
// plugin's own bounded store when the server cannot cache (the embedded
// engine's cache has no room: clickhouse-local gives it none). Entries are
// per tenant and expire after TTL; nothing else invalidates them. Safe for
// concurrent use; one Cache serves one datasource.
type Cache struct {
	// Mode is where answers are cached ("": CacheAuto).
	Mode CacheMode
	// TTL is how long an answer is served (0: DefaultCacheTTL).
	TTL time.Duration
	// ClosedAfter is how long ago a range must end (0: DefaultCacheClosedAfter).
	ClosedAfter time.Duration
	// MaxBytes bounds the plugin's store (0: DefaultCacheBytes).
	MaxBytes int64
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu sync.Mutex
	// mode is the mode in use, once CacheAuto is resolved ("" before).
	mode CacheMode
	// optional are the optional query cache settings the server knows.
	optional map[string]bool
	store    *resultStore
}

// Optional settings of ClickHouse's query cache, sent when the server knows
// them: a tag naming the tenant, and never failing a query because it
// cannot be cached.
const (
	settingTag              = "query_cache_tag"
	settingNondeterministic = "query_cache_nondeterministic_function_handling"
	settingSystemTables     = "query_cache_system_table_handling"
)

func (c *Cache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Cache) ttl() time.Duration {
	if c.TTL > 0 {
		return c.TTL
	}
	return DefaultCacheTTL
}

func (c *Cache) closedAfter() time.Duration {
	if c.ClosedAfter > 0 {
		return c.ClosedAfter
	}
	return DefaultCacheClosedAfter
}

// closed reports whether a range ending at to no longer moves.
func (c *Cache) closed(to time.Time) bool {
	return c != nil && c.Mode != CacheOff && !to.After(c.now().Add(-c.closedAfter()))
}

// ModeInUse is the mode the cache uses on conn: CacheAuto resolved by
// asking the server once.
func (c *Cache) ModeInUse(ctx context.Context, conn clickhouse.Conn) CacheMode {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mode != "" {
		return c.mode
	}
	switch c.Mode {
	case CacheOff, CachePlugin:
		c.mode = c.Mode
	case CacheClickHouse:
		c.mode = CacheClickHouse
		_, c.optional = serverCanCache(ctx, conn)
	default:
		ok, optional := serverCanCache(ctx, conn)
		c.mode = CachePlugin
		if ok {
			c.mode, c.optional = CacheClickHouse, optional
		}
	}
	return c.mode
}

// serverCanCache asks whether the server has a query cache with room and
// lets the user set use_query_cache (not readonly=1), and which optional
// cache settings it knows. Any failure means no (older servers lack
// system.server_settings).
func serverCanCache(ctx context.Context, conn clickhouse.Conn) (ok bool, optional map[string]bool) {
	var names []string
	var readonly, size uint64
	err := conn.QueryRow(ctx, "SELECT "+
		"(SELECT groupArray(name) FROM system.settings WHERE name IN ('use_query_cache', 'query_cache_ttl', '"+
		settingTag+"', '"+settingNondeterministic+"', '"+settingSystemTables+"')), "+
		"toUInt64OrZero(toString(getSetting('readonly'))), "+
		"(SELECT toUInt64OrZero(any(value)) FROM system.server_settings WHERE name = 'query_cache.max_size_in_bytes')").
		Scan(&names, &readonly, &size)
	if err != nil {
		return false, nil
	}
	optional = map[string]bool{}
	for _, n := range names {
		optional[n] = true
	}
	return optional["use_query_cache"] && optional["query_cache_ttl"] && readonly != 1 && size > 0, optional
}

// rowReader is what the engine reads query results through: clickhouse-go
// rows, or a cached result.
type rowReader interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// closeRows closes rows read to the end or abandoned on an error: their
// errors surface through Err.
func closeRows(r rowReader) { _ = r.Close() }

// read runs a query over the samples of a request's range: from the cache
// when the range is closed.
func (e *Engine) read(ctx context.Context, r *Request, q string, args []any) (rowReader, error) {
	c := e.Cache
	if !c.closed(r.To) {
		return e.Conn.Query(ctx, q, args...)
	}
	switch c.ModeInUse(ctx, e.Conn) {
	case CacheClickHouse:
		rows, err := e.Conn.Query(c.ClickHouseContext(ctx, e.Tenant), q, args...)
		if err != nil && settingRefused(err) {
			c.fallBack()
			return e.read(ctx, r, q, args)
		}
		return rows, err
	case CachePlugin:
		return c.plugin().read(ctx, e, cacheKey(e.Tenant, q, args), q, args, c.now().Add(c.ttl()), c.now)
	}
	return e.Conn.Query(ctx, q, args...)
}

// ClickHouseContext is the context of a query answered through
// ClickHouse's query cache: the datasource's settings (WithSettings) plus
// use_query_cache, its TTL and, when the server knows it, a tag naming the
// tenant.
func (c *Cache) ClickHouseContext(ctx context.Context, tenant string) context.Context {
	settings := clickhouse.Settings{}
	for k, v := range settingsOf(ctx) {
		settings[k] = v
	}
	settings["use_query_cache"] = 1
	settings["query_cache_ttl"] = int((c.ttl() + time.Second - 1) / time.Second)
	c.mu.Lock()
	optional := c.optional
	c.mu.Unlock()
	if optional[settingTag] {
		settings[settingTag] = "flamehouse tenant " + strconv.Quote(tenant)
	}
	for _, name := range []string{settingNondeterministic, settingSystemTables} {
		if optional[name] {
			settings[name] = "ignore"
		}
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(settings))
}

// settingRefused reports a server that will not take the cache settings
// (unknown setting, readonly, a constraint).
func settingRefused(err error) bool {
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		return false
	}
	switch ex.Code {
	case 115, 164, 452: // UNKNOWN_SETTING, READONLY, SETTING_CONSTRAINT_VIOLATION
		return true
	}
	return false
}

// fallBack switches to the plugin's store after the server refused the
// cache settings.
func (c *Cache) fallBack() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mode = CachePlugin
}

func (c *Cache) plugin() *resultStore {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == nil {
		limit := c.MaxBytes
		if limit <= 0 {
			limit = DefaultCacheBytes
		}
		c.store = newResultStore(limit)
	}
	return c.store
}

// Stats is what the plugin's store holds.
type Stats struct {
	Entries      int
	Bytes        int64
	Hits, Misses int64
}

// Stats reports the plugin's store.
func (c *Cache) Stats() Stats {
	return c.plugin().stats()
}

// settingsKey carries the datasource's ClickHouse settings in a context,
// so that cached queries add theirs.
type settingsKey struct{}

// WithSettings returns a context whose queries carry ClickHouse settings.
func WithSettings(ctx context.Context, settings clickhouse.Settings) context.Context {
	return clickhouse.Context(context.WithValue(ctx, settingsKey{}, settings), clickhouse.WithSettings(settings))
}

func settingsOf(ctx context.Context) clickhouse.Settings {
	s, _ := ctx.Value(settingsKey{}).(clickhouse.Settings)
	return s
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
			ok = r.row < len(c.u64)
			if ok {
				*v = c.u64[r.row]
			}
		case *int64:
			ok = r.row < len(c.i64)
			if ok {
				*v = c.i64[r.row]
			}
		case *float64:
			ok = r.row < len(c.f64)
			if ok {
				*v = c.f64[r.row]
			}
		case *string:
			ok = r.row < len(c.str)
			if ok {
				*v = c.str[r.row]
			}
		}
		if !ok {
			return fmt.Errorf("cached result: column %d scanned into %T", i, d)
		}
	}
	return nil
}

func (*replay) Err() error   { return nil }
func (*replay) Close() error { return nil }
