package query

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// Symbol resolution at query time. A native frame that arrives without a
// name (the eBPF profiler's C, C++ and Rust frames: a mapping, a build id
// and an address) is stored as it came, labelled "[libfoo.so]"; once the
// symbols of its build id are in the symbol store (profile_symbols and
// profile_executables, schema version 3), every query names it: its
// address is turned into the executable's virtual address (the address
// rule, symbols.VA, the one the store's ranges are written in) and looked up in the executable's ranges, each of which
// carries its whole inline stack. Frames ingested before the upload are
// named as well: nothing is resolved at ingest.
//
// The ranges are read from ClickHouse once per build id and upload, into a
// sorted table in memory (binary search), and kept in a bounded LRU. Every
// query that has unsymbolized frames asks profile_executables for the
// build ids in play (one small read by primary key): a new upload has a new
// UpdatedAt, so its ranges replace the cached ones at once, and a build id
// without symbols costs nothing more. See docs/symbols.md for the figures
// that chose this over an ASOF JOIN in ClickHouse.

// nativeFrame is what an unsymbolized frame needs to be resolved: its
// build id, address and the placement of its mapping (0 when unknown).
type nativeFrame struct {
	buildID       string
	address       uint64
	mappingStart  uint64
	mappingOffset uint64
}

// executable is a stored executable's row: where its symbols came from and
// the segments the address rule needs.
type executable struct {
	buildID, file, source string
	// updated is UpdatedAt in milliseconds: the Version of its ranges.
	updated int64
	// segs are its PT_LOAD segments (Memsz and Exec are not stored and
	// not needed by the address rule).
	segs []symbols.Segment
}

// rangeTable is one executable's ranges, sorted by start: range i covers
// [starts[i], ends[i]) and its inline stack is levels first[i] to
// first[i+1]-1 of funcs, files and lines, innermost first.
type rangeTable struct {
	starts, ends []uint64
	first        []uint32
	funcs        []string
	files        []string
	lines        []uint32
	size         int64
}

// find returns the range holding va, or -1.
func (t *rangeTable) find(va uint64) int {
	i, found := slices.BinarySearch(t.starts, va)
	if !found {
		i-- // the last range that starts below va
	}
	if i < 0 || va >= t.ends[i] {
		return -1
	}
	return i
}

// label is the name of one inline level: the function, at line
// granularity "function file:line" when the file and line are known.
func (t *rangeTable) label(level uint32, lines bool) string {
	fn := t.funcs[level]
	if !lines || t.files[level] == "" || t.lines[level] == 0 {
		return fn
	}
	return lineLabel(fn, t.files[level], t.lines[level])
}

// lineLabel is a node's label at line granularity, as pprof -lines names
// it: "function file:line", or "file:line" without a function.
func lineLabel(fn, file string, line uint32) string {
	l := file + ":" + strconv.FormatUint(uint64(line), 10)
	if fn == "" {
		return l
	}
	return fn + " " + l
}

// Resolver holds the symbol store's range tables of one datasource across
// queries. Safe for concurrent use.
type Resolver struct {
	// MaxBytes bounds the memory of the tables held (0: DefaultResolverBytes).
	// A table larger than that is used by the query that loaded it only.
	MaxBytes int64
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu     sync.Mutex
	tables map[tableKey]*list.Element
	lru    list.List // of *cachedTable, most recent first
	bytes  int64
	loads  int
	probes map[string]probe
	// probing are the probes being read, closed when read.
	probing map[string]chan struct{}
}

// DefaultResolverBytes bounds a datasource's range tables.
const DefaultResolverBytes = 256 << 20

// probeAgain is how long a schema without the symbol tables is believed
// before it is looked at again (a migration may add them).
const probeAgain = 30 * time.Second

type tableKey struct{ tenant, buildID string }

type cachedTable struct {
	key     tableKey
	version int64
	table   *rangeTable
}

// probe is what a database has of schema versions 3, 5 and 7.
type probe struct {
	// symbols: profile_symbols and profile_executables exist; placement:
	// profile_frames has MappingStart and MappingOffset; profiles:
	// profile_profiles exists (version 5); marked: profile_samples has the
	// minute rollup mark (version 7).
	symbols, placement, profiles, marked bool
	at                                   time.Time
}

// NewResolver returns a resolver holding up to maxBytes of range tables
// (0: DefaultResolverBytes).
func NewResolver(maxBytes int64) *Resolver {
	return &Resolver{MaxBytes: maxBytes}
}

func (r *Resolver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Resolver) maxBytes() int64 {
	if r.MaxBytes > 0 {
		return r.MaxBytes
	}
	return DefaultResolverBytes
}

// Loads is the number of range tables read from ClickHouse so far.
func (r *Resolver) Loads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loads
}

// get returns the cached table of a build id at a version.
func (r *Resolver) get(key tableKey, version int64) *rangeTable {
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.tables[key]
	if !ok {
		return nil
	}
	c := el.Value.(*cachedTable) // the list holds only these
	if c.version != version {
		return nil
	}
	r.lru.MoveToFront(el)
	return c.table
}

// put caches a table, replacing an older version of it and evicting the
// least recently used tables beyond the bound.
func (r *Resolver) put(key tableKey, version int64, t *rangeTable) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loads++
	if r.tables == nil {
		r.tables = map[tableKey]*list.Element{}
	}
	if el, ok := r.tables[key]; ok {
		r.bytes -= el.Value.(*cachedTable).table.size // the list holds only these
		r.lru.Remove(el)
		delete(r.tables, key)
	}
	if t.size > r.maxBytes() {
		return
	}
	r.tables[key] = r.lru.PushFront(&cachedTable{key: key, version: version, table: t})
	r.bytes += t.size
	for r.bytes > r.maxBytes() {
		el := r.lru.Back()
		c := el.Value.(*cachedTable) // the list holds only these
		r.lru.Remove(el)
		delete(r.tables, c.key)
		r.bytes -= c.table.size
	}
}

// probe says whether the engine's database has the symbol tables and the
// frames' mapping placement (schema version 3), the profiles table
// (version 5) and the minute rollup mark (version 7). A database that has
// them all is not asked again; one without is asked again after
// probeAgain. Queries that need it at the
// same time share one read (prefetchProbe starts it early).
func (e *Engine) probe(ctx context.Context) (probe, error) {
	res := e.resolver()
	key := e.probeKey()
	for {
		res.mu.Lock()
		if pr, ok := res.freshProbe(key); ok {
			res.mu.Unlock()
			return pr, nil
		}
		if wait := res.probing[key]; wait != nil {
			res.mu.Unlock()
			select {
			case <-wait:
				continue // read, or failed: look again
			case <-ctx.Done():
				return probe{}, ctx.Err()
			}
		}
		done := make(chan struct{})
		if res.probing == nil {
			res.probing = map[string]chan struct{}{}
		}
		res.probing[key] = done
		res.mu.Unlock()

		pr, err := e.readProbe(ctx)
		res.mu.Lock()
		delete(res.probing, key)
		if err == nil {
			if res.probes == nil {
				res.probes = map[string]probe{}
			}
			res.probes[key] = pr
		}
		res.mu.Unlock()
		close(done)
		return pr, err
	}
}

// probeKey is what the resolver keeps a probe under: the database, named
// by its frames table (datasources on one database share the probe).
func (e *Engine) probeKey() string { return e.Tables.Qualified(schema.Frames) }

// freshProbe is the probe kept under key if it still holds (the caller
// holds r.mu).
func (r *Resolver) freshProbe(key string) (probe, bool) {
	pr, ok := r.probes[key]
	return pr, ok && r.fresh(pr)
}

// cachedProbe is the engine's probe if the resolver holds a fresh one; it
// never reads.
func (e *Engine) cachedProbe() (probe, bool) {
	res := e.resolver()
	res.mu.Lock()
	defer res.mu.Unlock()
	return res.freshProbe(e.probeKey())
}

// fresh reports whether a probe read earlier still holds.
func (r *Resolver) fresh(pr probe) bool {
	return pr.symbols && pr.placement && pr.profiles && pr.marked || r.now().Sub(pr.at) < probeAgain
}

// prefetchProbe starts reading the probe in the background when the
// resolver holds no fresh one, so that on a cold datasource it runs beside
// the query's first statement rather than after it (it is needed once the
// frames are looked up). The query calls wait before it returns, so that
// nothing it started outlives it.
func (e *Engine) prefetchProbe(ctx context.Context) (wait func()) {
	res := e.resolver()
	key := e.probeKey()
	res.mu.Lock()
	_, fresh := res.freshProbe(key)
	needed := !fresh && res.probing[key] == nil
	res.mu.Unlock()
	if !needed {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.probe(ctx) // an error is met again by the query that needs the probe
	}()
	return func() { <-done }
}

// readPlanned reads a statement that build plans with or without the
// minute rollup mark (plan), without waiting for the probe: planned as the
// resolver's probe says when it holds one, else with the mark — the schema
// the ingest migrates every database to — and planned again without it
// when ClickHouse does not know the column (a database before schema
// version 7). A new datasource's first query so reads its sums beside the
// probe, not after it (docs/performance.md).
func (e *Engine) readPlanned(ctx context.Context, r *Request, build func(marked bool) (string, []any)) (rowReader, error) {
	pr, known := e.cachedProbe()
	q, args := build(!known || pr.marked)
	rows, err := e.read(ctx, r, q, args)
	if err == nil || known || !unknownIdentifier(err) {
		return rows, err
	}
	q, args = build(false)
	return e.read(ctx, r, q, args)
}

// unknownIdentifier reports ClickHouse's answer to a column a table does
// not have.
func unknownIdentifier(err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && ex.Code == 47 // UNKNOWN_IDENTIFIER
}

// readProbe reads the probe from the database's catalog.
func (e *Engine) readProbe(ctx context.Context) (probe, error) {
	var p params
	db := p.str(e.Tables.Database)
	symbolsTable, executablesTable, profilesTable := p.str(e.Tables.Name(schema.Symbols)), p.str(e.Tables.Name(schema.Executables)), p.str(e.Tables.Name(schema.Profiles))
	framesTable, samplesTable := p.str(e.Tables.Name(schema.Frames)), p.str(e.Tables.Name(schema.Samples))
	// Two catalog reads, not one per fact: each costs about a millisecond.
	q := "SELECT t.symbols, c.placement, t.profiles, c.marked FROM " +
		"(SELECT countIf(name IN (" + symbolsTable + ", " + executablesTable + ")) AS symbols, countIf(name = " + profilesTable + ") AS profiles FROM system.tables " +
		"WHERE database = " + db + " AND name IN (" + symbolsTable + ", " + executablesTable + ", " + profilesTable + ")) AS t, " +
		"(SELECT countIf(table = " + framesTable + ") AS placement, countIf(table = " + samplesTable + ") AS marked FROM system.columns " +
		"WHERE database = " + db + " AND table IN (" + framesTable + ", " + samplesTable + ") AND (table = " + framesTable + " AND name IN ('MappingStart', 'MappingOffset') OR " +
		"table = " + samplesTable + " AND name = " + p.str(schema.MinuteRollupColumn) + ")) AS c"
	var tables, columns, profiles, marked uint64
	if err := e.Conn.QueryRow(ctx, q, p.args...).Scan(&tables, &columns, &profiles, &marked); err != nil {
		return probe{}, fmt.Errorf("look for the schema's newer tables and columns: %w", err)
	}
	return probe{symbols: tables == 2, placement: columns == 2, profiles: profiles == 1, marked: marked == 1, at: e.resolver().now()}, nil
}

// resolver is the engine's resolver, or a fresh one for this query.
func (e *Engine) resolver() *Resolver {
	if e.Resolver == nil {
		e.Resolver = NewResolver(0)
	}
	return e.Resolver
}

// lookupIDs are the build ids that may be looked up: those a parameter
// list can carry unquoted (buildIDPattern: hex, Go build ids). Other
// frames keep their labels.
func lookupIDs(natives map[uint64]nativeFrame) []string {
	seen := map[string]bool{}
	for _, n := range natives {
		seen[n.buildID] = true
	}
	return lookupable(seen)
}

// lookupable are the build ids of a set that can be looked up (matching
// buildIDPattern), sorted.
func lookupable(buildIDs map[string]bool) []string {
	ids := make([]string, 0, len(buildIDs))
	for id := range buildIDs {
		if buildIDPattern.MatchString(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// idArray renders build ids (matching buildIDPattern, so that they need no
// quoting) as an Array(String) parameter value.
func idArray(ids []string) string { return "['" + strings.Join(ids, "','") + "']" }

// executablesSQL reads the stored executables of some build ids (all of
// the tenant's when ids is nil): the latest row of each.
func executablesSQL(p *params, tables schema.Config, tenant string, ids []string) string {
	q := "SELECT BuildId, argMax(FileName, UpdatedAt), argMax(Source, UpdatedAt), toInt64(toUnixTimestamp64Milli(max(UpdatedAt))), " +
		"argMax(SegmentOffsets, UpdatedAt), argMax(SegmentVaddrs, UpdatedAt), argMax(SegmentSizes, UpdatedAt) FROM " +
		tables.Qualified(schema.Executables) + " WHERE TenantId = " + p.str(tenant)
	if ids != nil {
		q += " AND BuildId IN " + p.add("Array(String)", idArray(ids))
	}
	return q + " GROUP BY BuildId"
}

// executables reads the stored executables of build ids (nil: all of the
// tenant's), by build id.
func (e *Engine) executables(ctx context.Context, ids []string) (map[string]*executable, error) {
	out := map[string]*executable{}
	if ids != nil && len(ids) == 0 {
		return out, nil
	}
	for chunk := range slices.Chunk(ids, idsPerLookup/10) {
		if err := e.readExecutables(ctx, chunk, out); err != nil {
			return nil, err
		}
	}
	if ids == nil {
		return out, e.readExecutables(ctx, nil, out)
	}
	return out, nil
}

func (e *Engine) readExecutables(ctx context.Context, ids []string, out map[string]*executable) error {
	var p params
	rows, err := e.Conn.Query(ctx, executablesSQL(&p, e.Tables, e.Tenant, ids), p.args...)
	if err != nil {
		return fmt.Errorf("look up executables: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		x := &executable{}
		var offs, vaddrs, sizes []uint64
		if err := rows.Scan(&x.buildID, &x.file, &x.source, &x.updated, &offs, &vaddrs, &sizes); err != nil {
			return err
		}
		for i := range min(len(offs), len(vaddrs), len(sizes)) {
			x.segs = append(x.segs, symbols.Segment{Offset: offs[i], Vaddr: vaddrs[i], Filesz: sizes[i]})
		}
		out[x.buildID] = x
	}
	return rows.Err()
}

// rangesSQL reads the ranges of some build ids, each at its version (the
// UpdatedAt of its executable row, so that an older upload's rows are
// never mixed in), sorted. Inline stacks travel packed: functions and
// files joined by NUL, lines as 4 little-endian bytes each (scanning Array
// columns through clickhouse-go costs a reflective append per element).
func rangesSQL(p *params, tables schema.Config, tenant string, ids []string, versions []int64) string {
	vs := make([]uint64, len(versions))
	for i, v := range versions {
		vs[i] = uint64(max(v, 0))
	}
	list := p.add("Array(String)", idArray(ids))
	return "SELECT BuildId, Start, End, arrayStringConcat(Functions, char(0)), arrayStringConcat(Files, char(0)), " +
		"arrayStringConcat(arrayMap(x -> rightPad(reinterpretAsString(x), 4, char(0)), Lines)) FROM " + tables.Qualified(schema.Symbols) +
		" WHERE TenantId = " + p.str(tenant) + " AND BuildId IN " + list + " AND Version = " + p.u64s(vs) + "[indexOf(" + list + ", BuildId)]" +
		" ORDER BY BuildId, Start"
}

// loadTables reads the range tables of executables.
func (e *Engine) loadTables(ctx context.Context, exes []*executable) (map[string]*rangeTable, error) {
	out := map[string]*rangeTable{}
	for chunk := range slices.Chunk(exes, 100) {
		if err := e.loadTableChunk(ctx, chunk, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadTableChunk reads the range tables of a chunk of executables into
// out, their strings shared.
func (e *Engine) loadTableChunk(ctx context.Context, chunk []*executable, out map[string]*rangeTable) error {
	ids, versions := make([]string, len(chunk)), make([]int64, len(chunk))
	for i, x := range chunk {
		ids[i], versions[i] = x.buildID, x.updated
		out[x.buildID] = &rangeTable{}
	}
	var p params
	rows, err := e.Conn.Query(ctx, rangesSQL(&p, e.Tables, e.Tenant, ids, versions), p.args...)
	if err != nil {
		return fmt.Errorf("load symbols: %w", err)
	}
	defer rows.Close()
	strs := interner{}
	var id, funcs, files, lines string
	var start, end uint64
	for rows.Next() {
		if err := rows.Scan(&id, &start, &end, &funcs, &files, &lines); err != nil {
			return err
		}
		t := out[id]
		if t == nil || end <= start || (len(t.starts) > 0 && start < t.ends[len(t.ends)-1]) {
			continue // a duplicate row before a merge, or an overlap: the first range wins
		}
		t.addRange(start, end, funcs, files, lines, strs)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	strBytes := strs.bytes()
	for _, x := range chunk {
		t := out[x.buildID]
		t.first = append(t.first, uint32(len(t.funcs)))
		t.size = int64(len(t.starts))*20 + int64(len(t.funcs))*36 + strBytes/int64(len(chunk)) + 256
	}
	return nil
}

// addRange appends a range and its levels: functions and files separated
// by NUL bytes, lines as little-endian UInt32s.
func (t *rangeTable) addRange(start, end uint64, funcs, files, lines string, strs interner) {
	t.starts, t.ends = append(t.starts, start), append(t.ends, end)
	t.first = append(t.first, uint32(len(t.funcs)))
	fs, fl := strings.Split(funcs, "\x00"), strings.Split(files, "\x00")
	for i, f := range fs {
		file, line := "", uint32(0)
		if i < len(fl) {
			file = fl[i]
		}
		if 4*i+4 <= len(lines) {
			line = binary.LittleEndian.Uint32([]byte(lines[4*i : 4*i+4]))
		}
		t.funcs, t.files, t.lines = append(t.funcs, strs.of(f)), append(t.files, strs.of(file)), append(t.lines, line)
	}
}

// interner keeps one copy of each string of the tables read together.
type interner map[string]string

// of is the kept copy of s.
func (in interner) of(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	in[s] = s
	return s
}

// bytes estimates the memory of the kept strings.
func (in interner) bytes() int64 {
	var n int64
	for s := range in {
		n += int64(len(s)) + 16
	}
	return n
}

// tablesFor returns the range tables of executables: cached ones at their
// version, the others read from ClickHouse (and cached).
func (e *Engine) tablesFor(ctx context.Context, exes map[string]*executable) (map[string]*rangeTable, error) {
	res := e.resolver()
	out := make(map[string]*rangeTable, len(exes))
	var missing []*executable
	for id, x := range exes {
		if t := res.get(tableKey{e.Tenant, id}, x.updated); t != nil {
			out[id] = t
		} else {
			missing = append(missing, x)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	slices.SortFunc(missing, func(a, b *executable) int { return strings.Compare(a.buildID, b.buildID) })
	loaded, err := e.loadTables(ctx, missing)
	if err != nil {
		return nil, err
	}
	for _, x := range missing {
		t := loaded[x.buildID]
		res.put(tableKey{e.Tenant, x.buildID}, x.updated, t)
		out[x.buildID] = t
	}
	return out, nil
}

// resolution is what the symbol store says about a query's unsymbolized
// frames: the executables of their build ids and their range tables.
type resolution struct {
	exes   map[string]*executable
	tables map[string]*rangeTable
}

// resolution reads what the symbol store has for natives' build ids (those
// among prefetched's from that read); nil when the database has no symbol
// tables or nothing to resolve.
func (e *Engine) resolution(ctx context.Context, natives map[uint64]nativeFrame, prefetched *executableReads) (*resolution, error) {
	if len(natives) == 0 {
		return nil, nil
	}
	pr, err := e.probe(ctx)
	if err != nil || !pr.symbols {
		return nil, err
	}
	exes, err := prefetched.of(ctx, lookupIDs(natives), e.executables)
	if err != nil || len(exes) == 0 {
		return nil, err
	}
	tables, err := e.tablesFor(ctx, exes)
	if err != nil {
		return nil, err
	}
	return &resolution{exes: exes, tables: tables}, nil
}

// maxPrefetchedBuildIDs bounds the build ids whose executables a query
// reads beside its sums (one statement's worth).
const maxPrefetchedBuildIDs = idsPerLookup / 10

// executableReads are the symbol store's executables of some build ids,
// read in the background (prefetchExecutables).
type executableReads struct {
	ids  []string // sorted
	done chan struct{}
	exes map[string]*executable
	err  error
}

// prefetchExecutables starts reading the executables of the build ids of
// the native frames the cache holds for the engine's tenant, beside the
// query's sums, when the resolver's probe says the symbol store is there.
// A query reads the executables of its native frames every time (an
// upload names earlier frames at once); on a warm datasource they are
// mostly these, so they no longer wait for the sums. nil when there is
// nothing to read; the query calls wait before it returns.
func (e *Engine) prefetchExecutables(ctx context.Context, sym *Symbols) *executableReads {
	if pr, ok := e.cachedProbe(); !ok || !pr.symbols {
		return nil
	}
	ids := lookupable(sym.buildIDsOf(e.Tenant))
	if len(ids) == 0 || len(ids) > maxPrefetchedBuildIDs {
		return nil
	}
	r := &executableReads{ids: ids, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.exes, r.err = e.executables(ctx, ids)
	}()
	return r
}

// wait waits for the read to end (nil: no read).
func (r *executableReads) wait() {
	if r != nil {
		<-r.done
	}
}

// of returns the executables of build ids (sorted): those this read
// covered from it, the others from read. Without this read, or when it
// failed, all come from read (which meets the error again if it stays).
func (r *executableReads) of(ctx context.Context, ids []string, read func(context.Context, []string) (map[string]*executable, error)) (map[string]*executable, error) {
	if r == nil {
		return read(ctx, ids)
	}
	r.wait()
	if r.err != nil {
		return read(ctx, ids)
	}
	out := make(map[string]*executable, len(ids))
	var rest []string
	for _, id := range ids {
		if _, covered := slices.BinarySearch(r.ids, id); !covered {
			rest = append(rest, id)
		} else if x := r.exes[id]; x != nil {
			out[id] = x
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	more, err := read(ctx, rest)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, more)
	return out, nil
}

// lookup finds the range of a frame: its table and index, or nil.
func (rs *resolution) lookup(n nativeFrame) (*rangeTable, int) {
	x := rs.exes[n.buildID]
	if x == nil {
		return nil, -1
	}
	t := rs.tables[n.buildID]
	va, ok := symbols.VA(n.address, n.mappingStart, n.mappingOffset, x.segs)
	if t == nil || !ok {
		return nil, -1
	}
	i := t.find(va)
	if i < 0 {
		return nil, -1
	}
	return t, i
}

// name relabels the frames that resolve: one level replaces the frame's
// label, several become its levels (root first: the outermost function,
// then the functions inlined into it, the innermost last, as pprof shows
// a location's inlined lines).
func (rs *resolution) name(natives map[uint64]nativeFrame, fn *frameNames, lines bool) {
	if rs == nil {
		return
	}
	for id, n := range natives {
		t, i := rs.lookup(n)
		if t == nil {
			continue
		}
		lo, hi := t.first[i], t.first[i+1]
		if hi-lo == 1 {
			if l := t.label(lo, lines); l != "" {
				fn.labels[id] = l
			}
			continue
		}
		levels := make([]string, 0, hi-lo)
		for lv := hi; lv > lo; lv-- {
			if l := t.label(lv-1, lines); l != "" {
				levels = append(levels, l)
			}
		}
		switch len(levels) {
		case 0:
		case 1:
			fn.labels[id] = levels[0]
		default:
			if fn.levels == nil {
				fn.levels = map[uint64][]string{}
			}
			fn.levels[id] = levels
		}
	}
}
