package query

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flamehouse/flamehouse/pkg/query/selector"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// maxLabelValues bounds a labelValues answer.
const maxLabelValues = 1000

// ProfileTypeInfo is one entry of the profileTypes resource.
type ProfileTypeInfo struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Scope bounds a resource lookup: a time range and, optionally, a profile
// type and matchers.
type Scope struct {
	From, To    time.Time
	ProfileType string
	// Matchers narrow the lookup to the series they select: service_name
	// by service, any other label by the series' resource attributes (so
	// that dashboard variables chain: pods of the chosen namespace).
	Matchers []selector.Matcher
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

// ProfileTypes lists the profile types with data in the range.
func (e *Engine) ProfileTypes(ctx context.Context, s Scope) ([]ProfileTypeInfo, error) {
	s.ProfileType = ""
	ids, err := e.layout().profileTypes(ctx, s)
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]ProfileTypeInfo, 0, len(ids))
	for _, id := range ids {
		info := ProfileTypeInfo{ID: id, Label: id}
		if pt, err := ParseProfileType(id); err == nil {
			info.Label = pt.Name + " - " + pt.SampleType
		}
		out = append(out, info)
	}
	return out, nil
}

// Services lists the services with data in the scope.
func (e *Engine) Services(ctx context.Context, s Scope) ([]string, error) {
	return e.layout().services(ctx, s)
}

// LabelNames lists the selector label names with data in the scope:
// service_name, resource attribute keys and sample attribute keys, with
// dots as underscores (as Pyroscope-style selectors spell them).
func (e *Engine) LabelNames(ctx context.Context, s Scope) ([]string, error) {
	keys, err := e.layout().labelKeys(ctx, s)
	if err != nil {
		return nil, err
	}
	names := []string{"service_name"}
	for _, k := range keys {
		names = append(names, labelName(k))
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// LabelValues lists the values of a label with data in the scope.
func (e *Engine) LabelValues(ctx context.Context, s Scope, label string) ([]string, error) {
	if label == "" || len(label) > 256 {
		return nil, fmt.Errorf("label name %q must be 1 to 256 characters", truncate(label))
	}
	if isServiceName(label) {
		return e.Services(ctx, s)
	}
	return e.layout().labelValues(ctx, s, label)
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

// strList binds strings as a comma-separated list of parameters.
func strList(p *params, values []string) string {
	list := make([]string, len(values))
	for i, v := range values {
		list[i] = p.str(v)
	}
	return strings.Join(list, ", ")
}

// strings runs a query of one string column.
func (e *Engine) strings(ctx context.Context, q string, p *params) ([]string, error) {
	rows, err := e.Conn.Query(ctx, q, p.args...)
	if err != nil {
		return nil, fmt.Errorf("query ClickHouse: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// maxSeriesInfos bounds a series lookup.
const maxSeriesInfos = 100000

// SeriesInfo is one series with data in a scope: its profile type, service
// and resource attributes (keys as stored, with dots).
type SeriesInfo struct {
	ProfileType, ServiceName string
	Resource                 map[string]string
}

// SeriesInfos lists the series with data in the scope, one per profile
// type and series, at most 100,000 (more is an error naming the bound).
// Only Flamehouse's tables keep series; the exporter's table has none.
func (e *Engine) SeriesInfos(ctx context.Context, s Scope) ([]SeriesInfo, error) {
	if e.Schema == SchemaOTel {
		return nil, fmt.Errorf("%w: the exporter's table keeps no series catalog", ErrInvalidQuery)
	}
	l := &flamehouseLayout{e: e}
	var p params
	q := "SELECT c.ProfileType, c.ServiceName, s.ResourceAttributes FROM (SELECT DISTINCT ProfileType, ServiceName, SeriesId FROM " +
		e.Tables.Qualified(schema.Catalog) + " WHERE " + l.catalogConds(&p, s) + ") AS c LEFT JOIN (SELECT SeriesId, any(ResourceAttributes) AS ResourceAttributes FROM " +
		e.Tables.Qualified(schema.Series) + " WHERE TenantId = " + p.str(e.Tenant) + " AND SeriesId IN (SELECT SeriesId FROM " + e.Tables.Qualified(schema.Catalog) + " WHERE " +
		l.catalogConds(&p, s) + ") GROUP BY SeriesId) AS s ON c.SeriesId = s.SeriesId" +
		" ORDER BY c.ProfileType, c.ServiceName, c.SeriesId LIMIT " + p.i64(maxSeriesInfos+1)
	rows, err := e.Conn.Query(ctx, q, p.args...)
	if err != nil {
		return nil, fmt.Errorf("look up series: %w", err)
	}
	defer closeRows(rows)
	var out []SeriesInfo
	for rows.Next() {
		var info SeriesInfo
		if err := rows.Scan(&info.ProfileType, &info.ServiceName, &info.Resource); err != nil {
			return nil, fmt.Errorf("look up series: %w", err)
		}
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up series: %w", err)
	}
	if len(out) > maxSeriesInfos {
		return nil, fmt.Errorf("%w: more than %d series in the range; narrow the selector or the range", ErrInvalidQuery, maxSeriesInfos)
	}
	return out, nil
}
