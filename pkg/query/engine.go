package query

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// Engine runs queries against the Flamehouse tables.
type Engine struct {
	Conn   clickhouse.Conn
	Tables schema.Config
	// Tenant is the tenant whose rows the datasource reads.
	Tenant string
	// Symbols caches stacks and frame labels across queries (nil: none).
	Symbols *Symbols
	// Schema picks the tables read: SchemaFlamehouse ("" too) or
	// SchemaOTel, the Collector ClickHouse exporter's one wide table.
	Schema Schema
	// OTelTable is the exporter's profiles table in Tables.Database when
	// Schema is SchemaOTel; "" means DefaultOTelTable.
	OTelTable string
	// TracesDatabase and TracesTable locate the Collector exporter's spans
	// table (and its trace id lookup, TracesTable + "_trace_id_ts"), read
	// by traces queries and to keep trace-wide reads to the trace's spans;
	// "" means Tables.Database and DefaultTracesTable.
	TracesDatabase, TracesTable string
	// DatasourceUID and DatasourceName name this datasource, the target of
	// the internal links the frames carry ("": no links).
	DatasourceUID, DatasourceName string
	// Cache answers queries over closed ranges (nil: none).
	Cache *Cache
	// Resolver holds the symbol store's range tables across queries (nil:
	// a fresh one per query).
	Resolver *Resolver
}

// ErrInvalidQuery is returned for queries the engine's tables cannot
// answer as asked (a user's fault, like a query that does not parse).
var ErrInvalidQuery = errors.New("invalid query")

// idsPerLookup bounds the stack or frame ids of one lookup (they travel as
// a parameter in the request line); past byServiceAbove missing ids of
// known services, all of the services' stacks or frames are read instead.
const (
	idsPerLookup   = 10000
	byServiceAbove = 1000
)

// Run answers a request with its frames: from the cache when its range is
// closed (see Cache).
func (e *Engine) Run(ctx context.Context, r *Request) (data.Frames, error) {
	return e.cachedAnswer(ctx, r, func() (data.Frames, error) { return e.run(ctx, r) })
}

func (e *Engine) run(ctx context.Context, r *Request) (data.Frames, error) {
	if r.Alert && (r.Type == TypeProfile || r.Type == TypeDiff || r.Type == TypeTraces || r.Type == TypeSpans || r.Type == TypeExecutables) {
		return nil, notForAlerts(r.Type)
	}
	if err := e.checkFilters(r); err != nil {
		return nil, err
	}
	if r.Type == TypeDiff {
		f, err := e.diff(ctx, r)
		if err != nil {
			return nil, err
		}
		return data.Frames{f}, nil
	}
	traces, err := e.prepareTraces(ctx, r)
	if err != nil {
		return nil, err
	}
	if r.Type == TypeTraces {
		f, err := e.trace(ctx, traces, r)
		if err != nil {
			return nil, err
		}
		return data.Frames{f}, nil
	}
	l := e.layout()
	if r.Type == TypeSpans {
		f, err := e.spans(ctx, l, traces, r)
		if err != nil {
			return nil, err
		}
		return data.Frames{f}, nil
	}
	if r.Type == TypeExecutables {
		f, err := e.executablesView(ctx, l, r)
		if err != nil {
			return nil, err
		}
		return data.Frames{f}, nil
	}
	var frames data.Frames
	if r.Type == TypeProfile || r.Type == TypeTable || (r.Type == TypeBoth && !r.Alert) {
		stacks, names, err := l.stacks(ctx, r)
		if err != nil {
			return nil, err
		}
		frames = append(frames, stacksFrame(r, stacks, names))
	}
	if r.Type == TypeMetrics || r.Type == TypeBoth {
		acc := newSeriesAccumulator(r)
		if err := l.series(ctx, r, acc); err != nil {
			return nil, err
		}
		frames = append(frames, acc.frames(e.linkTarget(r))...)
	}
	return frames, nil
}

// checkFilters refuses filters the engine's tables cannot apply.
func (e *Engine) checkFilters(r *Request) error {
	if e.Schema == SchemaOTel && r.BuildID != "" {
		return fmt.Errorf("%w: the exporter's table keeps no build ids: filter by mappingFile", ErrInvalidQuery)
	}
	return nil
}

// prepareTraces looks up the spans tables for the requests that read them
// (traces and spans queries, and any query with a trace id), and keeps a
// trace id's read to the trace's stored spans (scopeTrace). It returns nil
// tables for the other requests.
func (e *Engine) prepareTraces(ctx context.Context, r *Request) (*tracesTables, error) {
	if r.Type != TypeTraces && r.Type != TypeSpans && r.TraceID == "" {
		return nil, nil
	}
	traces, err := e.tracesTables(ctx)
	if err != nil {
		return nil, err
	}
	if r.Type != TypeTraces && r.TraceID != "" {
		if err := e.scopeTrace(ctx, traces, r); err != nil {
			return nil, err
		}
	}
	return traces, nil
}

// SeriesPoints answers a metrics request as numbers instead of frames: the
// same read and the same top Limit groups as the metrics frames, each
// group's points as amounts per step (see SeriesGroup), for callers that
// render time series themselves (the Pyroscope-compatible API).
func (e *Engine) SeriesPoints(ctx context.Context, r *Request) ([]SeriesGroup, error) {
	if r.Type != TypeMetrics || r.Ratio {
		return nil, fmt.Errorf("%w: series points answer metrics queries without ratio, not queryType %q", ErrInvalidQuery, r.Type)
	}
	if err := e.checkFilters(r); err != nil {
		return nil, err
	}
	if _, err := e.prepareTraces(ctx, r); err != nil {
		return nil, err
	}
	acc := newSeriesAccumulator(r)
	if err := e.layout().series(ctx, r, acc); err != nil {
		return nil, err
	}
	return acc.points(), nil
}

// flamehouseLayout reads Flamehouse's tables: sums per stack id from the
// samples table or its rollups, then stacks and frames by id (cached).
type flamehouseLayout struct {
	e *Engine
	// keys are the request's sample attribute keys, looked up once.
	keys map[string]bool
}

func (l *flamehouseLayout) sampleKeys(ctx context.Context, r *Request) (map[string]bool, error) {
	if l.keys == nil {
		keys, err := l.e.sampleKeys(ctx, r)
		if err != nil {
			return nil, err
		}
		l.keys = keys
	}
	return l.keys, nil
}

func (l *flamehouseLayout) stacks(ctx context.Context, r *Request) ([]stackValue, *frameNames, error) {
	keys, err := l.sampleKeys(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	sym := l.e.symbols()
	stacks, f, err := l.e.stacks(ctx, r, keys, sym)
	if err != nil {
		return nil, nil, err
	}
	names, natives, err := l.e.frameLabels(ctx, f, stacks, sym, r.Lines)
	if err != nil {
		return nil, nil, err
	}
	res, err := l.e.resolution(ctx, natives)
	if err != nil {
		return nil, nil, err
	}
	res.name(natives, names, r.Lines)
	return stacks, names, nil
}

func (l *flamehouseLayout) series(ctx context.Context, r *Request, acc *seriesAccumulator) error {
	keys, err := l.sampleKeys(ctx, r)
	if err != nil {
		return err
	}
	return l.e.series(ctx, r, keys, acc)
}

// sampleKeys finds which attribute keys of the request's labels are
// sample attributes in its time range; the others are read from the
// series.
func (e *Engine) sampleKeys(ctx context.Context, r *Request) (map[string]bool, error) {
	var candidates []string
	for _, m := range r.Matchers {
		if !isServiceName(m.Name) && promotedColumns[labelName(m.Name)] == "" {
			candidates = append(candidates, attributeKeys(m.Name)...)
		}
	}
	for _, g := range r.GroupBy {
		if !isServiceName(g) && promotedColumns[labelName(g)] == "" {
			candidates = append(candidates, attributeKeys(g)...)
		}
	}
	known := map[string]bool{}
	if len(candidates) == 0 {
		return known, nil
	}
	var p params
	q := sampleKeysSQL(&p, e.Tables, e.Tenant, r.ProfileType.ID, r.From.Unix(), ceilSecond(r.To), candidates)
	rows, err := e.read(ctx, r, q, p.args)
	if err != nil {
		return nil, fmt.Errorf("look up sample attribute keys: %w", err)
	}
	defer closeRows(rows)
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		known[k] = true
	}
	return known, rows.Err()
}

// stackValue is one stack's summed value and frame ids, root first. id is
// the stack's StackId on Flamehouse's tables, where frame ids and stack ids
// mean the same in every query (0 on the exporter's table, whose ids are
// local to one answer).
type stackValue struct {
	id     uint64
	value  int64
	frames []uint64
}

// stacksFrame renders stacks as a flame graph or a top-functions table.
func stacksFrame(r *Request, stacks []stackValue, fn *frameNames) *data.Frame {
	names := flame.NewNames()
	unit := flame.Unit(r.ProfileType.SampleUnit)
	if r.Type == TypeTable {
		fns := flame.NewFunctions(names)
		eachPath(stacks, fn, names, fns.Add)
		if r.Alert {
			return alertTableFrame(fns.Top(r.Limit), unit)
		}
		return flame.TableFrame(fns.Top(r.Limit), unit)
	}
	tree := flame.NewTree(names)
	eachPath(stacks, fn, names, tree.Add)
	return tree.Frame(r.MaxNodes, unit)
}

// eachPath calls add with every stack's label ids (root first; the slice
// is reused) and value.
func eachPath(stacks []stackValue, fn *frameNames, names *flame.Names, add func(path []int32, value int64)) {
	d := fn.dense
	if d == nil || len(d.ends) != len(stacks) { // labels not looked up through frameLabels
		d = denseFramesOf(stacks)
	}
	ids := newNameIDs(len(fn.labels))
	ids.add(fn, names)
	nameOf := ids.dense(d, names)
	path := make([]int32, 0, 64)
	for i, s := range stacks {
		path = path[:0]
		for _, k := range d.stack(i) {
			if id := nameOf[k]; id >= 0 {
				path = append(path, id)
			} else {
				path = append(path, ids.multi[-id-1]...)
			}
		}
		add(path, s.value)
	}
}

// denseFrames numbers the distinct frame ids of an answer's stacks 0..n-1
// in the order first seen, and holds every stack's frames as those
// numbers: the one pass over all frames that hashes their ids. Labels are
// then looked up once per distinct frame, and a tree's paths are built by
// indexing slices.
type denseFrames struct {
	ids []uint64
	// frames[ends[i-1]:ends[i]] are stack i's numbers (ends[-1] = 0).
	frames []int32
	ends   []int32
}

func denseFramesOf(stacks []stackValue) *denseFrames {
	total := 0
	for _, s := range stacks {
		total += len(s.frames)
	}
	d := &denseFrames{frames: make([]int32, 0, total), ends: make([]int32, len(stacks))}
	index := make(map[uint64]int32, min(total/8, 1<<18))
	for i, s := range stacks {
		for _, f := range s.frames {
			k, ok := index[f]
			if !ok {
				k = index32(len(d.ids))
				index[f] = k
				d.ids = append(d.ids, f)
			}
			d.frames = append(d.frames, k)
		}
		d.ends[i] = index32(len(d.frames))
	}
	return d
}

func (d *denseFrames) stack(i int) []int32 {
	start := int32(0)
	if i > 0 {
		start = d.ends[i-1]
	}
	return d.frames[start:d.ends[i]]
}

// index32 converts a count that is far below 2^31 (frames of one answer).
func index32(n int) int32 {
	return int32(n) //nolint:gosec // G115: an answer holds far fewer than 2^31 frames
}

// frameNames names the frames of an answer: each frame id's label, and the
// labels of the frames that resolve into several inline levels, root first
// (their label in labels is then not used).
type frameNames struct {
	labels map[uint64]string
	levels map[uint64][]string
	// dense numbers the frames of the stacks frameLabels looked the labels
	// up for, in their order (nil when the labels came another way).
	dense *denseFrames
}

// nameIDs are the name ids of frames in a tree: ids[frame] >= 0 is one
// name, a negative id -k-1 the k-th path of several (inline levels).
type nameIDs struct {
	ids   map[uint64]int32
	multi [][]int32
}

func newNameIDs(n int) *nameIDs { return &nameIDs{ids: make(map[uint64]int32, n)} }

// add interns the names of frames not known yet.
func (n *nameIDs) add(fn *frameNames, names *flame.Names) {
	for id, label := range fn.labels {
		if _, ok := n.ids[id]; ok {
			continue
		}
		if levels, ok := fn.levels[id]; ok {
			path := make([]int32, len(levels))
			for i, l := range levels {
				path[i] = names.ID(l)
			}
			n.ids[id] = -int32(len(n.multi)) - 1 //nolint:gosec // G115: far fewer frames than 2^31
			n.multi = append(n.multi, path)
			continue
		}
		n.ids[id] = names.ID(label)
	}
}

// dense returns the name id of each of d's frame numbers (as n.ids holds
// them: negative for several inline levels); a frame that is not stored
// shows as "unknown".
func (n *nameIDs) dense(d *denseFrames, names *flame.Names) []int32 {
	out := make([]int32, len(d.ids))
	for k, f := range d.ids {
		id, ok := n.ids[f]
		if !ok {
			id = names.ID("unknown")
		}
		out[k] = id
	}
	return out
}

// path turns frame ids into label ids, a frame with inline levels into
// several; a frame that is not stored shows as "unknown".
func (n *nameIDs) path(path []int32, frames []uint64, names *flame.Names) []int32 {
	path = path[:0]
	for _, f := range frames {
		id, ok := n.ids[f]
		switch {
		case !ok:
			id = names.ID("unknown")
		case id < 0:
			path = append(path, n.multi[-id-1]...)
			continue
		}
		path = append(path, id)
	}
	return path
}

// symbols is the engine's cache, or a fresh one for this query.
func (e *Engine) symbols() *Symbols {
	if e.Symbols != nil {
		return e.Symbols
	}
	return NewSymbols(1<<62, 1<<62)
}

// stacks sums the request's values per stack and resolves each stack's
// frame ids (cached ones from the cache).
func (e *Engine) stacks(ctx context.Context, r *Request, keys map[string]bool, sym *Symbols) ([]stackValue, *filter, error) {
	var p params
	f := buildFilter(&p, e.Tables, e.Tenant, r, keys)
	segs := plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1)
	rows, err := e.read(ctx, r, sumsSQL(&p, e.Tables, f, segs), p.args)
	if err != nil {
		return nil, nil, fmt.Errorf("sum samples per stack: %w", err)
	}
	defer closeRows(rows)
	var ids []uint64
	var values []int64
	for rows.Next() {
		var id uint64
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, nil, err
		}
		ids, values = append(ids, id), append(values, v)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	frames, err := e.stackFrames(ctx, f, ids, sym)
	if err != nil {
		return nil, nil, err
	}
	out := make([]stackValue, len(ids))
	for i, id := range ids {
		out[i] = stackValue{id: id, value: values[i], frames: frames[id]}
	}
	return out, f, nil
}

// stackFrames finds the frame ids of stacks: cached, else from the stacks
// table (by id, or all stacks of known services when many are missing).
func (e *Engine) stackFrames(ctx context.Context, f *filter, ids []uint64, sym *Symbols) (map[uint64][]uint64, error) {
	out := make(map[uint64][]uint64, len(ids))
	missing := sym.stacksOf(e.Tenant, ids, out)
	return out, lookup(f, missing, func(chunk []uint64) error {
		var p params
		rows, err := e.Conn.Query(ctx, stacksSQL(&p, e.Tables, e.Tenant, f, chunk), p.args...)
		if err != nil {
			return fmt.Errorf("load stacks: %w", err)
		}
		defer rows.Close()
		var packed string
		for rows.Next() {
			var id uint64
			if err := rows.Scan(&id, &packed); err != nil {
				return err
			}
			frames, err := unpackFrameIDs(packed)
			if err != nil {
				return fmt.Errorf("stack %d: %w", id, err)
			}
			sym.addStack(e.Tenant, id, frames)
			out[id] = frames
		}
		return rows.Err()
	})
}

// lookup loads the symbols of missing ids: all symbols of the filter's
// services in one query when there are many (load(nil)), else the ids in
// chunks that fit a query parameter.
func lookup(f *filter, missing []uint64, load func(ids []uint64) error) error {
	switch {
	case len(missing) == 0:
		return nil
	case len(f.services) > 0 && len(missing) > byServiceAbove:
		return load(nil)
	}
	slices.Sort(missing)
	for chunk := range slices.Chunk(missing, idsPerLookup) {
		if err := load(chunk); err != nil {
			return err
		}
	}
	return nil
}

// unpackFrameIDs decodes 8 little-endian bytes per frame id.
func unpackFrameIDs(packed string) ([]uint64, error) {
	if len(packed)%8 != 0 {
		return nil, fmt.Errorf("frame ids of %d bytes", len(packed))
	}
	out := make([]uint64, len(packed)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64([]byte(packed[8*i : 8*i+8]))
	}
	return out, nil
}

// frameLabels names every frame of the stacks as stored (at function or
// line granularity), and returns what resolves the unsymbolized frames
// that have a build id.
func (e *Engine) frameLabels(ctx context.Context, f *filter, stacks []stackValue, sym *Symbols, lines bool) (*frameNames, map[uint64]nativeFrame, error) {
	dense := denseFramesOf(stacks)
	names := &frameNames{labels: make(map[uint64]string, len(dense.ids)), dense: dense}
	natives := map[uint64]nativeFrame{}
	key := labelKey{tenant: e.Tenant, lines: lines}
	missing := sym.labelsOf(key, dense.ids, names.labels, natives)
	if len(missing) == 0 {
		return names, natives, nil
	}
	pr, err := e.probe(ctx)
	if err != nil {
		return nil, nil, err
	}
	return names, natives, lookup(f, missing, func(chunk []uint64) error {
		return e.loadFrames(ctx, f, chunk, key, pr.placement, names.labels, natives, sym)
	})
}

func (e *Engine) loadFrames(ctx context.Context, f *filter, ids []uint64, key labelKey, placement bool, labels map[uint64]string,
	natives map[uint64]nativeFrame, sym *Symbols,
) error {
	var p params
	rows, err := e.Conn.Query(ctx, framesSQL(&p, e.Tables, e.Tenant, f, ids, key.lines, placement), p.args...)
	if err != nil {
		return fmt.Errorf("load frames: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uint64
		var label string
		var n nativeFrame
		if err := rows.Scan(&id, &label, &n.buildID, &n.address, &n.mappingStart, &n.mappingOffset); err != nil {
			return err
		}
		labels[id] = label
		if n.buildID != "" {
			natives[id] = n
		}
		sym.addLabel(key, id, label, n)
	}
	return rows.Err()
}

// series sums a metrics query per time bucket and group into acc.
func (e *Engine) series(ctx context.Context, r *Request, keys map[string]bool, acc *seriesAccumulator) error {
	var p params
	f := buildFilter(&p, e.Tables, e.Tenant, r, keys)
	groups, seriesCols, groupRaw := groupExprs(&p, r.GroupBy, keys)
	step := int64(r.Step / time.Second)
	from, to := floorTo(r.From.Unix(), step), ceilSecond(r.To)
	gauge := r.ProfileType.Gauge()
	segs := plan(from, to, f.seriesSource(len(seriesCols) > 0, groupRaw, gauge), step)
	q := seriesSQL(&p, e.Tables, e.Tenant, f, segs, step, groups, seriesCols, groupRaw, gauge)
	return scanSeries(ctx, e, r, q, &p, len(groups), f.part != "", acc)
}

// scanSeries runs a series query of (t, group labels..., value) rows, the
// value a Float64 (bucketQuery), plus the denominator d of a ratio query
// with a part, into acc.
func scanSeries(ctx context.Context, e *Engine, r *Request, q string, p *params, groups int, part bool, acc *seriesAccumulator) error {
	rows, err := e.read(ctx, r, q, p.args)
	if err != nil {
		return fmt.Errorf("sum samples per interval: %w", err)
	}
	defer closeRows(rows)
	for rows.Next() {
		var t int64
		var v, d float64
		labels := make([]string, groups)
		dest := []any{&t}
		for i := range labels {
			dest = append(dest, &labels[i])
		}
		dest = append(dest, &v)
		if part {
			dest = append(dest, &d)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		acc.add(labels, t, v, d)
	}
	return rows.Err()
}

// ceilSecond is the end of a range in whole seconds (exclusive).
func ceilSecond(t time.Time) int64 {
	if t.Nanosecond() > 0 {
		return t.Unix() + 1
	}
	return t.Unix()
}
