package query

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
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
