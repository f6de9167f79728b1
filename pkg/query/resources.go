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
