package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

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
	defer l.e.prefetchProbe(ctx)()
	prefetched := l.e.prefetchExecutables(ctx, sym)
	defer prefetched.wait()
	stacks, groups, f, err := l.e.stacks(ctx, r, keys, sym)
	if err != nil {
		return nil, nil, err
	}
	names, natives, err := l.e.frameLabels(ctx, f, stacks, sym, r.Lines)
	if err != nil {
		return nil, nil, err
	}
	names.groups, names.groupValues = groups.names(), groups.valuesOf()
	res, err := l.e.resolution(ctx, natives, prefetched)
	if err != nil {
		return nil, nil, err
	}
	res.name(natives, names, r.Lines)
	if r.details {
		if names.details, err = l.e.frameDetails(ctx, f, names.dense.ids); err != nil {
			return nil, nil, err
		}
		res.inlineLevels(natives, names.details)
	}
	return stacks, names, nil
}

func (l *flamehouseLayout) series(ctx context.Context, r *Request, acc *seriesAccumulator) error {
	keys, err := l.sampleKeys(ctx, r)
	if err != nil {
		return err
	}
	return l.e.series(ctx, r, keys, acc)
}

func (l *flamehouseLayout) executables(ctx context.Context, r *Request) (*executableSums, error) {
	e := l.e
	f, stacks, err := l.stackSums(ctx, r)
	if err != nil {
		return nil, err
	}
	stackFrames, err := e.stackFrames(ctx, f, stacks.ids, e.symbols(), nil)
	if err != nil {
		return nil, err
	}
	pr, err := e.probe(ctx)
	if err != nil {
		return nil, err
	}
	distinct, known := distinctFrames(stacks.ids, stackFrames)
	frames := map[uint64]*exeFrame{}
	if err := e.lookup(ctx, f, schema.Frames, distinct, func(chunk []uint64) error { return e.loadExeFrames(ctx, f, chunk, pr.placement, frames) }); err != nil {
		return nil, err
	}
	t := exeTally{out: &executableSums{}, sums: map[exeKey]*exeSum{}}
	t.addStacks(stacks, stackFrames, frames)
	natives, buildIDs := t.countFrames(frames, known)
	if err := t.countResolved(ctx, e, natives, frames); err != nil {
		return nil, err
	}
	t.out.stored = map[string]*executable{}
	if pr.symbols && len(buildIDs) > 0 {
		if t.out.stored, err = e.storedExecutables(ctx, buildIDs); err != nil {
			return nil, err
		}
	}
	return t.out, nil
}

// stackSums are the selection's stacks with their totals and the latest
// time each was seen (Unix seconds).
type stackSums struct {
	ids          []uint64
	values, seen []int64
}

// stackSums reads the selection's stacks and the filter they were read
// with.
func (l *flamehouseLayout) stackSums(ctx context.Context, r *Request) (*filter, stackSums, error) {
	e := l.e
	var out stackSums
	keys, err := l.sampleKeys(ctx, r)
	if err != nil {
		return nil, out, err
	}
	var f *filter
	rows, err := e.readPlanned(ctx, r, func(marked bool) (string, []any) {
		var p params
		f = buildFilter(&p, e.Tables, e.Tenant, r, keys)
		segs := plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, marked)
		return executableSumsSQL(&p, e.Tables, f, segs), p.args
	})
	if err != nil {
		return nil, out, fmt.Errorf("sum samples per stack: %w", err)
	}
	defer closeRows(rows)
	for rows.Next() {
		var id uint64
		var v, t int64
		if err := rows.Scan(&id, &v, &t); err != nil {
			return nil, out, err
		}
		out.ids, out.values, out.seen = append(out.ids, id), append(out.values, v), append(out.seen, t)
	}
	return f, out, rows.Err()
}

// scopeConds renders the conditions of a scope on a table keyed by
// service (the catalogs): time, profile type and service matchers.
func (l *flamehouseLayout) scopeConds(p *params, s Scope) string {
	conds := []string{
		"TenantId = " + p.str(l.e.Tenant), "Hour >= toStartOfHour(toDateTime(" + p.i64(s.From.Unix()) + "))",
		"Hour < toDateTime(" + p.i64(ceilSecond(s.To)) + ")",
	}
	if s.ProfileType != "" {
		conds = append(conds, "ProfileType = "+p.str(s.ProfileType))
	}
	for i := range s.Matchers {
		if m := &s.Matchers[i]; isServiceName(m.Name) {
			conds = append(conds, compare(p, "ServiceName", m))
		}
	}
	return strings.Join(conds, " AND ")
}

// catalogConds adds to scopeConds the series that the other matchers
// select by resource attributes (on the series catalog).
func (l *flamehouseLayout) catalogConds(p *params, s Scope) string {
	c := l.scopeConds(p, s)
	var resource []string
	for i := range s.Matchers {
		if m := &s.Matchers[i]; !isServiceName(m.Name) {
			resource = append(resource, resourceCond(p, m))
		}
	}
	if len(resource) > 0 {
		c += " AND SeriesId IN (" + seriesSubquery(p, l.e.Tables, l.e.Tenant, resource) + ")"
	}
	return c
}

func (l *flamehouseLayout) profileTypes(ctx context.Context, s Scope) ([]string, error) {
	var p params
	return l.e.strings(ctx, "SELECT DISTINCT ProfileType FROM "+l.e.Tables.Qualified(schema.Catalog)+" WHERE "+l.catalogConds(&p, s), &p)
}

func (l *flamehouseLayout) services(ctx context.Context, s Scope) ([]string, error) {
	var p params
	return l.e.strings(ctx, "SELECT DISTINCT ServiceName FROM "+l.e.Tables.Qualified(schema.Catalog)+" WHERE "+l.catalogConds(&p, s)+
		" ORDER BY ServiceName LIMIT "+p.i64(maxLabelValues), &p)
}

func (l *flamehouseLayout) labelKeys(ctx context.Context, s Scope) ([]string, error) {
	var p params
	e := l.e
	q := "SELECT DISTINCT arrayJoin(mapKeys(ResourceAttributes)) FROM " + e.Tables.Qualified(schema.Series) +
		" WHERE TenantId = " + p.str(e.Tenant) + " AND SeriesId IN (SELECT SeriesId FROM " + e.Tables.Qualified(schema.Catalog) +
		" WHERE " + l.catalogConds(&p, s) + ") UNION DISTINCT SELECT DISTINCT Key FROM " + e.Tables.Qualified(schema.SampleLabels) +
		" WHERE " + l.scopeConds(&p, s)
	return e.strings(ctx, q, &p)
}

func (l *flamehouseLayout) labelValues(ctx context.Context, s Scope, label string) ([]string, error) {
	var p params
	e := l.e
	inScope := " WHERE TenantId = " + p.str(e.Tenant) + " AND SeriesId IN (SELECT SeriesId FROM " + e.Tables.Qualified(schema.Catalog) +
		" WHERE " + l.catalogConds(&p, s) + ")"
	var q string
	if col := promotedColumns[labelName(label)]; col != "" {
		q = "SELECT DISTINCT " + col + " AS v FROM " + e.Tables.Qualified(schema.Series) + inScope + " AND v != ''"
	} else {
		keys := attributeKeys(label)
		q = "SELECT DISTINCT " + mapValue(&p, "ResourceAttributes", keys) + " AS v FROM " + e.Tables.Qualified(schema.Series) + inScope +
			" AND v != '' UNION DISTINCT SELECT DISTINCT Value AS v FROM " + e.Tables.Qualified(schema.SampleLabels) +
			" WHERE " + l.scopeConds(&p, s) + " AND Key IN (" + strList(&p, keys) + ")"
	}
	return e.strings(ctx, "SELECT v FROM ("+q+") ORDER BY v LIMIT "+p.i64(maxLabelValues), &p)
}

func (l *flamehouseLayout) spans(ctx context.Context, r *Request) ([]spanValue, int64, error) {
	keys, err := l.sampleKeys(ctx, r)
	if err != nil {
		return nil, 0, err
	}
	var p params
	f := buildFilter(&p, l.e.Tables, l.e.Tenant, r, keys)
	segs := plan(r.From.Unix(), ceilSecond(r.To), bySample, 1, false) // the raw table alone
	return scanSpans(ctx, l.e, r, spansSQL(&p, union(&p, l.e.Tables, f, segs, "SpanId, TraceId, ServiceName, Value"), r.Limit), &p)
}
