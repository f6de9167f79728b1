package query

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"golang.org/x/sync/errgroup"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
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
// a parameter in the request line). A lookup reads the ids it misses, in
// chunks of this many, or its services' whole rows of the table in one
// query when that reads fewer than rowsPerID rows per id it misses (see
// lookup). So a narrow query on a cold cache (one pod, the last hour) does
// not read a service's whole dictionaries (in the workloads of
// docs/performance.md a dense pod's 1,497 stacks against the service's
// 35,123), and a small service's are read whole.
const idsPerLookup = 10000

// countFrom is the fewest missing ids for which a lookup counts its
// services' rows (one small query on the sort key) to choose between
// reading by id and reading them whole: below it an id list costs less
// than the count.
const countFrom = 1000

// rowsPerID is how many rows of a service's a whole read may read per id
// it looks up: an id costs ClickHouse about three times what a row read
// does (the id list is parsed from the query parameter and matched; on the
// embedded engine 9,696 frame ids cost 10 ms to parse, and reading a small
// service's 13,774 frames whole 6 ms, docs/performance.md).
const rowsPerID = 3

// Run answers a request with its frames: from the cache when its range is
// closed (see Cache).
func (e *Engine) Run(ctx context.Context, r *Request) (data.Frames, error) {
	return e.cachedAnswer(ctx, r, func() (data.Frames, error) { return e.run(ctx, r) })
}

func (e *Engine) run(ctx context.Context, r *Request) (data.Frames, error) {
	qt := queryTypeOf(r.Type)
	if qt == nil {
		return nil, fmt.Errorf("%w: queryType %q", ErrInvalidQuery, r.Type)
	}
	if r.Alert && !qt.alerts {
		return nil, notForAlerts(qt)
	}
	if err := e.checkFilters(r); err != nil {
		return nil, err
	}
	if qt.scoped {
		if err := e.scopeSeries(ctx, r); err != nil {
			return nil, err
		}
	}
	return qt.answer(e, ctx, r)
}

// queryType is a query type and how the engine answers it.
type queryType struct {
	name string
	// answers says what it answers, for errors.
	answers string
	// alerts: alert rules may ask for it (they evaluate time series and
	// tables, not flame graphs, traces or lists).
	alerts bool
	// scoped: a series id narrows the request to its service first
	// (scopeSeries).
	scoped bool
	// answer reads the request's frames.
	answer func(e *Engine, ctx context.Context, r *Request) (data.Frames, error)
}

// queryTypes are the query types a request may name (the first is the
// default), each with its answer.
var queryTypes = []queryType{
	{name: TypeProfile, answers: "a flame graph", scoped: true, answer: (*Engine).answerGraphs},
	{name: TypeMetrics, answers: "time series", alerts: true, scoped: true, answer: (*Engine).answerGraphs},
	{name: TypeBoth, answers: "a flame graph and time series", alerts: true, scoped: true, answer: (*Engine).answerGraphs},
	{name: TypeTable, answers: "a table of functions", alerts: true, scoped: true, answer: (*Engine).answerGraphs},
	{name: TypeTraces, answers: "a trace", scoped: true, answer: (*Engine).answerTrace},
	{name: TypeSpans, answers: "a ranking of spans", scoped: true, answer: (*Engine).answerSpans},
	{name: TypeDiff, answers: "a diff flame graph", scoped: true, answer: (*Engine).answerDiff},
	{name: TypeExecutables, answers: "a list of executables", scoped: true, answer: (*Engine).answerExecutables},
	{name: TypeProfiles, answers: "a list of profiles", answer: (*Engine).answerProfiles},
}

// queryTypeOf is the query type named name, or nil.
func queryTypeOf(name string) *queryType {
	for i := range queryTypes {
		if queryTypes[i].name == name {
			return &queryTypes[i]
		}
	}
	return nil
}

// one is an answer of one frame.
func one(f *data.Frame, err error) (data.Frames, error) {
	if err != nil {
		return nil, err
	}
	return data.Frames{f}, nil
}

func (e *Engine) answerProfiles(ctx context.Context, r *Request) (data.Frames, error) {
	return one(e.profilesView(ctx, r))
}

func (e *Engine) answerDiff(ctx context.Context, r *Request) (data.Frames, error) {
	return one(e.diff(ctx, r))
}

func (e *Engine) answerTrace(ctx context.Context, r *Request) (data.Frames, error) {
	traces, err := e.prepareTraces(ctx, r)
	if err != nil {
		return nil, err
	}
	return one(e.trace(ctx, traces, r))
}

func (e *Engine) answerSpans(ctx context.Context, r *Request) (data.Frames, error) {
	traces, err := e.prepareTraces(ctx, r)
	if err != nil {
		return nil, err
	}
	return one(e.spans(ctx, e.layout(), traces, r))
}

func (e *Engine) answerExecutables(ctx context.Context, r *Request) (data.Frames, error) {
	if _, err := e.prepareTraces(ctx, r); err != nil {
		return nil, err
	}
	return one(e.executablesView(ctx, e.layout(), r))
}

// answerGraphs answers flame graphs, tables and time series: the stacks
// of profile, table and both (not for alerts), the series of metrics and
// both.
func (e *Engine) answerGraphs(ctx context.Context, r *Request) (data.Frames, error) {
	if _, err := e.prepareTraces(ctx, r); err != nil {
		return nil, err
	}
	l := e.layout()
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
	if e.Schema == SchemaOTel && r.shapesFrames() {
		return fmt.Errorf("%w: the exporter's table keeps no frame types (profile.frame.type): frames cannot be hidden or collapsed by kind", ErrInvalidQuery)
	}
	if e.Schema == SchemaOTel && r.SeriesID != "" {
		return fmt.Errorf("%w: the exporter's table keeps no series ids", ErrInvalidQuery)
	}
	return nil
}

// scopeSeries adds the service of a request's series (seriesId) to its
// matchers, unless it names one exactly: a series belongs to one service,
// and the service scopes the stack and frame lookups.
func (e *Engine) scopeSeries(ctx context.Context, r *Request) error {
	if r.SeriesID == "" {
		return nil
	}
	for _, m := range r.Matchers {
		if isServiceName(m.Name) && m.Op == selector.Equal {
			return nil
		}
	}
	var p params
	q := "SELECT ServiceName FROM " + e.Tables.Qualified(schema.Series) + " WHERE TenantId = " + p.str(e.Tenant) +
		" AND SeriesId = " + p.add("UInt64", r.SeriesID) + " LIMIT 1"
	rows, err := e.Conn.Query(ctx, q, p.args...)
	if err != nil {
		return fmt.Errorf("look up the series' service: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return rows.Err() // an unknown series: no samples either
	}
	var service string
	if err := rows.Scan(&service); err != nil {
		return err
	}
	r.Matchers = append(slices.Clone(r.Matchers), selector.Matcher{Name: "service_name", Op: selector.Equal, Value: service})
	return rows.Err()
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
	if err := e.scopeSeries(ctx, r); err != nil {
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
	// group indexes the answer's groups (frameNames.groups) when it is
	// grouped.
	group int32
}

// stacksFrame renders stacks as a flame graph or a top-functions table.
func stacksFrame(r *Request, stacks []stackValue, fn *frameNames) *data.Frame {
	names := flame.NewNames(len(fn.labels))
	unit := flame.Unit(r.ProfileType.SampleUnit)
	if r.Type == TypeTable {
		fns := flame.NewFunctions(names)
		eachPath(stacks, fn, names, shapeOf(r), fns.Add)
		if r.Alert {
			return alertTableFrame(fns.Top(r.Limit), unit)
		}
		return flame.TableFrame(fns.Top(r.Limit), unit)
	}
	tree := flame.NewTree(names)
	eachPath(stacks, fn, names, shapeOf(r), tree.Add)
	if len(r.FocusPath) == 0 {
		return tree.Frame(r.MaxNodes, unit)
	}
	return focusedFrame(tree, names, r, unit)
}

// focusedFrame renders a flame graph with the request's focus path opened
// (flame.Tree.FrameFocused); a path the answer does not have is said in a
// notice, and the graph is rendered without it.
func focusedFrame(tree *flame.Tree, names *flame.Names, r *Request, unit string) *data.Frame {
	focus := make([]int32, len(r.FocusPath))
	known := true
	for i, label := range r.FocusPath {
		focus[i], known = names.Lookup(label)
		if !known {
			break
		}
	}
	if !known {
		focus = nil
	}
	frame, found := tree.FrameFocused(r.MaxNodes, unit, focus)
	if !known || !found {
		frame.AppendNotices(data.Notice{
			Severity: data.NoticeSeverityWarning,
			Text:     fmt.Sprintf("No stack goes through the focus path %s: the flame graph is shown without it.", strings.Join(r.FocusPath, " > ")),
		})
	}
	return frame
}

// pathShape is what shapes an answer's label paths beyond its frames'
// labels: the frame kinds hidden or collapsed, and the label a path must
// end in ("" for any).
type pathShape struct {
	hide, collapse FrameKinds
	// leaf is a self function filter applied to the shaped paths: with
	// frames hidden or collapsed, the stack's leaf as shown may differ
	// from its stored leaf (which the SQL filter reads; see selfInGo).
	leaf string
}

// shapeOf is a request's path shape.
func shapeOf(r *Request) pathShape {
	s := pathShape{hide: r.HideFrames, collapse: r.CollapseFrames}
	if selfInGo(r) {
		s.leaf = r.Function
	}
	return s
}

// selfInGo reports whether a request's self function filter is applied to
// the shaped paths rather than in SQL: when frames are hidden or
// collapsed, "self" is the leaf the flame graph shows, and the SQL keeps
// the stacks that contain the function.
func selfInGo(r *Request) bool { return r.Function != "" && r.FunctionSelf && r.shapesFrames() }

// stackRequest is the request whose stacks a flame graph or table reads:
// r, or with the self function filter in Go (selfInGo) the stacks that
// contain the function.
func stackRequest(r *Request) *Request {
	if !selfInGo(r) {
		return r
	}
	c := *r
	c.FunctionSelf = false
	return &c
}

// pather turns stacks of frame ids into label paths: frame labels,
// several for frames with inline levels, frame kinds applied.
type pather struct {
	names *flame.Names
	ids   *nameIDs
	view  *kindView
	// leaf is the id of the label paths must end in (-1: any).
	leaf int32
}

// newPather interns the labels of the frames of fns (the sides of one
// answer: their frame ids mean the same) and prepares their kinds.
func newPather(names *flame.Names, shape pathShape, fns ...*frameNames) *pather {
	n := 0
	for _, fn := range fns {
		n += len(fn.labels)
	}
	ids := newNameIDs(n)
	kinds := fns[0].kinds
	for i, fn := range fns {
		ids.add(fn, names)
		if i > 0 && len(fn.kinds) > 0 {
			merged := make(map[uint64]frameKind, len(kinds)+len(fn.kinds))
			maps.Copy(merged, kinds)
			maps.Copy(merged, fn.kinds)
			kinds = merged
		}
	}
	p := &pather{names: names, ids: ids, view: newKindView(names, ids, kinds, shape.hide, shape.collapse), leaf: -1}
	if shape.leaf != "" {
		p.leaf = names.ID(shape.leaf)
	}
	return p
}

// idPath turns a stack's frame ids into label ids (path is reused), and
// reports whether the stack is kept (its path ends in the leaf filter's).
func (p *pather) idPath(path []int32, frames []uint64) ([]int32, bool) {
	if p.view != nil {
		path = p.view.appendIDs(path[:0], frames)
	} else {
		path = p.ids.path(path, frames, p.names)
	}
	return path, p.keeps(path, 0)
}

// keeps reports whether a path whose frames start at start ends in the
// leaf filter's label.
func (p *pather) keeps(path []int32, start int) bool {
	return p.leaf < 0 || (len(path) > start && path[len(path)-1] == p.leaf)
}

// eachPath calls add with every stack's label ids (root first; the slice
// is reused) and value: its group's node first when the answer is grouped,
// then its frames' labels, shaped by frame kinds; stacks whose shaped leaf
// is not the shape's leaf are left out.
func eachPath(stacks []stackValue, fn *frameNames, names *flame.Names, shape pathShape, add func(path []int32, value int64)) {
	d := fn.dense
	if d == nil || len(d.ends) != len(stacks) { // labels not looked up through frameLabels
		d = denseFramesOf(stacks)
	}
	p := newPather(names, shape, fn)
	ids := p.ids
	nameOf := ids.dense(d, names)
	var kindOf []frameKind
	if p.view != nil {
		kindOf = p.view.denseKinds(d)
	}
	var groups []int32
	for _, g := range fn.groups {
		groups = append(groups, names.ID(g))
	}
	path := make([]int32, 0, 64)
	for i, s := range stacks {
		path = path[:0]
		if groups != nil {
			path = append(path, groups[s.group])
		}
		start := len(path)
		if p.view != nil {
			path = p.view.appendDense(path, d.stack(i), nameOf, kindOf)
		} else {
			for _, k := range d.stack(i) {
				if id := nameOf[k]; id >= 0 {
					path = append(path, id)
				} else {
					path = append(path, ids.multi[-id-1]...)
				}
			}
		}
		if p.keeps(path, start) {
			add(path, s.value)
		}
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
	return int32(n)
}

// frameNames names the frames of an answer: each frame id's label, and the
// labels of the frames that resolve into several inline levels, root first
// (their label in labels is then not used).
type frameNames struct {
	labels map[uint64]string
	levels map[uint64][]string
	// kinds are the kinds of the frames that are not kindCode (nil when
	// none is).
	kinds map[uint64]frameKind
	// groups name the groups of a grouped answer (stackValue.group
	// indexes them); nil when it is not grouped. groupValues are each
	// group's values of the groupBy labels.
	groups      []string
	groupValues [][]string
	// details are the frames' details for a pprof export (nil for other
	// answers, and on the exporter's table).
	details map[uint64]*frameDetail
	// dense numbers the frames of the stacks frameLabels looked the labels
	// up for, in their order (nil when the labels came another way).
	dense *denseFrames
}

// setKind notes a frame's kind.
func (fn *frameNames) setKind(id uint64, k frameKind) {
	if k == kindCode {
		return
	}
	if fn.kinds == nil {
		fn.kinds = map[uint64]frameKind{}
	}
	fn.kinds[id] = k
}

// nameIDs are the name ids of frames in a tree: ids[frame] >= 0 is one
// name, a negative id -k-1 the k-th path of several (inline levels).
type nameIDs struct {
	ids   map[uint64]int32
	multi [][]int32
}

func newNameIDs(n int) *nameIDs { return &nameIDs{ids: make(map[uint64]int32, n)} }

// add interns the names of frames not known yet; kernel frames' labels
// carry the kernel mark (markLabel).
func (n *nameIDs) add(fn *frameNames, names *flame.Names) {
	for id, label := range fn.labels {
		if _, ok := n.ids[id]; ok {
			continue
		}
		kernel := len(fn.kinds) > 0 && fn.kinds[id] == kindKernel
		if levels, ok := fn.levels[id]; ok {
			path := make([]int32, len(levels))
			for i, l := range levels {
				if kernel {
					l = markLabel(l, kindKernel)
				}
				path[i] = names.ID(l)
			}
			n.ids[id] = -int32(len(n.multi)) - 1
			n.multi = append(n.multi, path)
			continue
		}
		if kernel {
			label = markLabel(label, kindKernel)
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

// stacks sums the request's values per stack (per group and stack for a
// grouped flame graph: flameGroupBy) and resolves each stack's frame ids
// (cached ones from the cache). groups name the groups.
func (e *Engine) stacks(ctx context.Context, r *Request, keys map[string]bool, sym *Symbols) (out []stackValue, groups *groupIndex, _ *filter, _ error) {
	groupBy := flameGroupBy(r)
	var f *filter
	rows, err := e.readPlanned(ctx, r, func(marked bool) (string, []any) {
		var p params
		f = buildFilter(&p, e.Tables, e.Tenant, stackRequest(r), keys)
		if len(groupBy) == 0 {
			return sumsSQL(&p, e.Tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, marked)), p.args
		}
		exprs, seriesCols, raw := groupExprs(&p, groupBy, keys)
		segs := plan(r.From.Unix(), ceilSecond(r.To), f.source(len(seriesCols) > 0, raw), 1, marked)
		return groupedSumsSQL(&p, e.Tables, e.Tenant, f, segs, exprs, seriesCols, raw), p.args
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sum samples per stack: %w", err)
	}
	defer closeRows(rows)
	var ids []uint64
	var values []int64
	var ofStack []int32
	g := newGroupIndex(groupBy)
	groupValues := make([]string, len(groupBy))
	dest := make([]any, 0, len(groupBy)+2)
	for i := range groupValues {
		dest = append(dest, &groupValues[i])
	}
	var id uint64
	var v int64
	dest = append(dest, &id, &v)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, nil, err
		}
		ids, values = append(ids, id), append(values, v)
		if g != nil {
			ofStack = append(ofStack, g.of(groupValues))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, err
	}
	frames, err := e.stackFrames(ctx, f, ids, sym, &labelKey{tenant: e.Tenant, lines: r.Lines})
	if err != nil {
		return nil, nil, nil, err
	}
	out = make([]stackValue, len(ids))
	for i, id := range ids {
		out[i] = stackValue{id: id, value: values[i], frames: frames[id]}
		if g != nil {
			out[i].group = ofStack[i]
		}
	}
	return out, g, f, nil
}

// flameGroupBy are the labels that split a flame graph's root into one
// node per group: the request's groupBy for flame graphs (profile, both);
// tables and diffs are not grouped.
func flameGroupBy(r *Request) []string {
	if r.Type == TypeProfile || r.Type == TypeBoth {
		return r.GroupBy
	}
	return nil
}

// groupIndex numbers the groups of a grouped answer in the order seen.
type groupIndex struct {
	groupBy []string
	index   map[string]int32
	list    []string
	// values are each group's label values, by number.
	values [][]string
}

// newGroupIndex returns the index of the groups of labels, nil for none.
func newGroupIndex(groupBy []string) *groupIndex {
	if len(groupBy) == 0 {
		return nil
	}
	return &groupIndex{groupBy: groupBy, index: map[string]int32{}}
}

// of is the number of the group of label values.
func (g *groupIndex) of(values []string) int32 {
	name := groupName(g.groupBy, values)
	i, ok := g.index[name]
	if !ok {
		i = index32(len(g.list))
		g.index[name] = i
		g.list = append(g.list, name)
		g.values = append(g.values, slices.Clone(values))
	}
	return i
}

// names are the groups' names by number (nil without groups).
func (g *groupIndex) names() []string {
	if g == nil {
		return nil
	}
	return g.list
}

// valuesOf are the groups' label values by number (nil without groups).
func (g *groupIndex) valuesOf() [][]string {
	if g == nil {
		return nil
	}
	return g.values
}

// framesBesideFrom is the fewest missing stacks whose frames a lookup
// reads beside them (stackFrames) once the symbol cache holds frames of
// the tenant: a query's frames then need not wait for its stacks. Below
// it (a dashboard's refresh, a few new stacks whose frames are mostly
// cached) the frames a query misses are read after the stacks, by id. On
// a cache without any of the tenant's frames (a new datasource) they are
// read beside the stacks whatever their number.
const framesBesideFrom = 256

// stackFrames finds the frame ids of stacks: cached, else from the stacks
// table (by id, or all stacks of known services: lookup). With labels,
// when the symbol cache holds no frame of the tenant at labels'
// granularity or it reads framesBesideFrom stacks or more, it reads their
// frames into the symbol cache at the same time, from the frames table
// joined with the same stacks in ClickHouse, or the services' whole
// frames when it reads their whole stacks; frameLabels then finds them
// cached.
func (e *Engine) stackFrames(ctx context.Context, f *filter, ids []uint64, sym *Symbols, labels *labelKey) (map[uint64][]uint64, error) {
	out := make(map[uint64][]uint64, len(ids))
	missing := sym.stacksOf(e.Tenant, ids, out)
	beside := labels != nil && framesBeside(len(missing), sym.hasLabels(*labels))
	return out, e.lookup(ctx, f, schema.Stacks, missing, func(chunk []uint64) error {
		if !beside {
			return e.loadStacks(ctx, f, chunk, sym, out)
		}
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error { return e.loadStacks(gctx, f, chunk, sym, out) })
		g.Go(func() error { return e.cacheFramesOf(gctx, f, chunk, *labels, sym) })
		return g.Wait()
	})
}

// framesBeside reports whether a lookup of missing stacks reads their
// frames beside them: on a cache without the tenant's frames, or for
// framesBesideFrom stacks or more.
func framesBeside(missing int, cachedFrames bool) bool {
	return missing > 0 && (!cachedFrames || missing >= framesBesideFrom)
}

// loadStacks reads stacks' frame ids by id (all of the filter's services'
// stacks for nil ids) into out and the symbol cache.
func (e *Engine) loadStacks(ctx context.Context, f *filter, ids []uint64, sym *Symbols, out map[uint64][]uint64) error {
	var p params
	rows, err := e.Conn.Query(ctx, stacksSQL(&p, e.Tables, e.Tenant, f, ids), p.args...)
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
}

// cacheFramesOf reads the frames of stacks (by stack id; all of the
// filter's services' frames for nil) into the symbol cache.
func (e *Engine) cacheFramesOf(ctx context.Context, f *filter, stackIDs []uint64, key labelKey, sym *Symbols) error {
	pr, err := e.probe(ctx)
	if err != nil {
		return err
	}
	var p params
	return e.loadFrames(ctx, framesOfStacksSQL(&p, e.Tables, e.Tenant, f, stackIDs, pr.placement), p.args, key, nil, nil, sym)
}

// lookup loads the symbols of missing ids from table (stacks or frames):
// by id, in chunks that fit a query parameter, or all of the filter's
// services' rows in one query (load(nil)) when there are countFrom ids or
// more and the services hold at most rowsPerID rows per id (wholeServices).
func (e *Engine) lookup(ctx context.Context, f *filter, table string, missing []uint64, load func(ids []uint64) error) error {
	if len(missing) == 0 {
		return nil
	}
	if len(f.services) > 0 && len(missing) >= countFrom {
		rows, err := e.serviceRows(ctx, f, table)
		if err != nil {
			return err
		}
		if wholeServices(len(missing), rows) {
			return load(nil)
		}
	}
	slices.Sort(missing)
	for chunk := range slices.Chunk(missing, idsPerLookup) {
		if err := load(chunk); err != nil {
			return err
		}
	}
	return nil
}

// wholeServices reports whether a lookup of missing ids reads its services'
// rows of a table (rows of them) whole rather than by id: when that reads
// at most rowsPerID rows per id.
func wholeServices(missing int, rows uint64) bool {
	return rows <= uint64(missing)*rowsPerID
}

// serviceRows counts the rows the filter's services hold in a table (one
// per stack or frame and day seen), from the table's sort key.
func (e *Engine) serviceRows(ctx context.Context, f *filter, table string) (uint64, error) {
	var p params
	var n uint64
	q := "SELECT count() FROM " + e.Tables.Qualified(table) + " WHERE TenantId = " + p.str(e.Tenant) + servicesCond(&p, f)
	if err := e.Conn.QueryRow(ctx, q, p.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the services' rows of %s: %w", table, err)
	}
	return n, nil
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
	missing := sym.labelsOf(key, dense.ids, names, natives)
	if len(missing) == 0 {
		return names, natives, nil
	}
	pr, err := e.probe(ctx)
	if err != nil {
		return nil, nil, err
	}
	return names, natives, e.lookup(ctx, f, schema.Frames, missing, func(chunk []uint64) error {
		var p params
		return e.loadFrames(ctx, framesSQL(&p, e.Tables, e.Tenant, f, chunk, pr.placement), p.args, key, names, natives, sym)
	})
}

// loadFrames reads frames (a framesSQL query) into the symbol cache at
// key's granularity and, when fn is not nil, into fn and natives.
func (e *Engine) loadFrames(ctx context.Context, q string, args []any, key labelKey, fn *frameNames,
	natives map[uint64]nativeFrame, sym *Symbols,
) error {
	rows, err := e.Conn.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("load frames: %w", err)
	}
	defer rows.Close()
	var row frameRow
	dest := row.scanDest()
	var cache []cachedFrame
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		label := row.label(key.lines)
		n, resolvable := row.resolvable()
		kind := kindOfType(row.frameType)
		cache = append(cache, cachedFrame{id: row.id, label: label, kind: kind, native: n})
		if fn == nil {
			continue
		}
		fn.labels[row.id] = label
		if resolvable {
			natives[row.id] = n
		}
		fn.setKind(row.id, kind)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	sym.addLabels(key, cache)
	return nil
}

// series sums a metrics query per time bucket and group into acc.
func (e *Engine) series(ctx context.Context, r *Request, keys map[string]bool, acc *seriesAccumulator) error {
	step := int64(r.Step / time.Second)
	from, to := floorTo(r.From.Unix(), step), ceilSecond(r.To)
	gauge := r.ProfileType.Gauge()
	var f *filter
	var groups int
	rows, err := e.readPlanned(ctx, r, func(marked bool) (string, []any) {
		var p params
		f = buildFilter(&p, e.Tables, e.Tenant, r, keys)
		exprs, seriesCols, groupRaw := groupExprs(&p, r.GroupBy, keys)
		groups = len(exprs)
		segs := plan(from, to, f.seriesSource(len(seriesCols) > 0, groupRaw, gauge), step, marked)
		return seriesSQL(&p, e.Tables, e.Tenant, f, segs, step, exprs, seriesCols, groupRaw, gauge), p.args
	})
	if err != nil {
		return fmt.Errorf("sum samples per interval: %w", err)
	}
	return scanSeries(rows, groups, f.part != "", acc)
}

// scanSeries runs a series query of (t, group labels..., value) rows, the
// value a Float64 (bucketQuery), plus the denominator d of a ratio query
// with a part, into acc.
func scanSeries(rows rowReader, groups int, part bool, acc *seriesAccumulator) error {
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
