package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// Single profiles (queryType profiles): the profiles of a selection as
// they came in, from profile_profiles (schema version 5; one row per OTLP
// profile, written by the ingest). The samples tables keep sums per
// second, series and stack, so a profile's flame graph is its series'
// samples over the seconds its rows cover: the row's links open it
// (seriesId and the interval) and download it as pprof. Profiles of one
// series and type whose seconds overlap share those seconds' samples.

// Titles of a profiles row's links.
const (
	LinkProfileFlameGraph = "Flame graph of this profile"
	LinkProfilePprof      = "Download pprof"
)

// profileRow is one listed profile.
type profileRow struct {
	at                      time.Time
	service, id             string
	series                  uint64
	duration, events        uint64
	period, total           int64
	firstSecond, lastSecond int64
}

// profilesConds are the conditions on profile_profiles of a request's
// selection: tenant, profile type, service, resource labels (through the
// series) and series.
func profilesConds(p *params, tables schema.Config, tenant string, r *Request) []string {
	conds := []string{"TenantId = " + p.str(tenant), "ProfileType = " + p.str(r.ProfileType.ID)}
	var resource []string
	for i := range r.Matchers {
		m := &r.Matchers[i]
		if isServiceName(m.Name) {
			conds = append(conds, compare(p, "ServiceName", m))
			continue
		}
		resource = append(resource, resourceCond(p, m))
	}
	if len(resource) > 0 {
		conds = append(conds, "SeriesId IN ("+seriesSubquery(p, tables, tenant, resource)+")")
	}
	if r.SeriesID != "" {
		conds = append(conds, "SeriesId = "+p.add("UInt64", r.SeriesID))
	}
	return conds
}

// profilesSQL lists the profiles taken in the request's range, newest
// first, one row per profile (a profile written twice is one row once
// merged; LIMIT 1 BY takes one before that).
func profilesSQL(p *params, tables schema.Config, tenant string, r *Request) string {
	conds := append(profilesConds(p, tables, tenant, r),
		"Timestamp >= fromUnixTimestamp64Nano("+p.i64(r.From.UnixNano())+")", "Timestamp < fromUnixTimestamp64Nano("+p.i64(r.To.UnixNano())+")")
	return "SELECT Timestamp, ServiceName, SeriesId, ProfileId, DurationNanos, Period, toInt64(FirstSample), toInt64(LastSample), Events, Total FROM " +
		tables.Qualified(schema.Profiles) + " WHERE " + strings.Join(conds, " AND ") +
		" ORDER BY Timestamp DESC, ServiceName, SeriesId, ProfileId LIMIT 1 BY Timestamp, ServiceName, SeriesId, ProfileId LIMIT " + p.i64(int64(r.Limit))
}

// periodSQL is the period most of the profiles whose samples overlap the
// request's range had (ties: the smallest).
func periodSQL(p *params, tables schema.Config, tenant string, r *Request) string {
	conds := append(profilesConds(p, tables, tenant, r),
		"FirstSample < toDateTime("+p.i64(ceilSecond(r.To))+")", "LastSample >= toDateTime("+p.i64(r.From.Unix())+")")
	return "SELECT Period FROM " + tables.Qualified(schema.Profiles) + " WHERE " + strings.Join(conds, " AND ") +
		" GROUP BY Period ORDER BY count() DESC, Period LIMIT 1"
}

// profilesTable says whether the database has profile_profiles (schema
// version 5).
func (e *Engine) profilesTable(ctx context.Context) (bool, error) {
	pr, err := e.probe(ctx)
	return pr.profiles, err
}

// period is the sampling period of most of the selection's profiles (0
// when none is listed: no profiles table, data written before it, or the
// exporter's table).
func (e *Engine) period(ctx context.Context, r *Request) (int64, error) {
	if e.Schema == SchemaOTel {
		return 0, nil
	}
	ok, err := e.profilesTable(ctx)
	if err != nil || !ok {
		return 0, err
	}
	var p params
	rows, err := e.Conn.Query(ctx, periodSQL(&p, e.Tables, e.Tenant, r), p.args...)
	if err != nil {
		return 0, fmt.Errorf("look up the profiles' period: %w", err)
	}
	defer rows.Close()
	var period int64
	if rows.Next() {
		if err := rows.Scan(&period); err != nil {
			return 0, err
		}
	}
	return period, rows.Err()
}

// profilesView lists the request's profiles (see above).
func (e *Engine) profilesView(ctx context.Context, r *Request) (*data.Frame, error) {
	if e.Schema == SchemaOTel {
		return nil, fmt.Errorf("%w: the exporter's table keeps no profiles, only their samples", ErrInvalidQuery)
	}
	ok, err := e.profilesTable(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: there is no profiles table %s (schema version 5): run `flamehouse migrate`", ErrInvalidQuery,
			e.Tables.Qualified(schema.Profiles))
	}
	var p params
	rows, err := e.read(ctx, r, profilesSQL(&p, e.Tables, e.Tenant, r), p.args)
	if err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	defer closeRows(rows)
	var list []profileRow
	for rows.Next() {
		var pr profileRow
		if err := rows.Scan(&pr.at, &pr.service, &pr.series, &pr.id, &pr.duration, &pr.period, &pr.firstSecond, &pr.lastSecond, &pr.events, &pr.total); err != nil {
			return nil, err
		}
		list = append(list, pr)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	resources, err := e.resources(ctx, list)
	if err != nil {
		return nil, err
	}
	return profilesFrame(r, list, resources, e.linkTarget(r)), nil
}

// resources reads the resource attributes of the profiles' series, each
// rendered "key=value, …" sorted by key, service.name left out.
func (e *Engine) resources(ctx context.Context, list []profileRow) (map[uint64]string, error) {
	out := map[uint64]string{}
	var ids []uint64
	for _, pr := range list {
		if _, ok := out[pr.series]; !ok {
			out[pr.series] = ""
			ids = append(ids, pr.series)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	slices.Sort(ids)
	for chunk := range slices.Chunk(ids, idsPerLookup) {
		var p params
		q := "SELECT SeriesId, any(ResourceAttributes) FROM " + e.Tables.Qualified(schema.Series) + " WHERE TenantId = " + p.str(e.Tenant) +
			" AND SeriesId IN " + p.u64s(chunk) + " GROUP BY SeriesId"
		rows, err := e.Conn.Query(ctx, q, p.args...)
		if err != nil {
			return nil, fmt.Errorf("look up the profiles' resources: %w", err)
		}
		for rows.Next() {
			var id uint64
			var attrs map[string]string
			if err := rows.Scan(&id, &attrs); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = resourceText(attrs)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// resourceText renders resource attributes "key=value, …", sorted by key,
// without service.name (the row's service).
func resourceText(attrs map[string]string) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		if k != "service.name" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + attrs[k]
	}
	return strings.Join(parts, ", ")
}

// Hidden fields of the profiles frame, which the row's links read.
const (
	fieldSeriesID      = "seriesId"
	fieldWindowStart   = "windowStart"
	fieldWindowEnd     = "windowEnd"
	fieldWindowSeconds = "windowSeconds"
)

// profilesFrame renders the profiles: time, service, resource, duration,
// samples (events), total and the name of its pprof file; the time links
// to the profile's flame graph, the file name downloads it, both reading
// the hidden fields seriesId and the window of seconds its samples cover.
func profilesFrame(r *Request, list []profileRow, resources map[uint64]string, target linkTarget) *data.Frame {
	n := len(list)
	times := make([]time.Time, n)
	services, res, series := make([]string, n), make([]string, n), make([]string, n)
	durations, events, totals := make([]int64, n), make([]int64, n), make([]int64, n)
	starts, ends, seconds := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, pr := range list {
		times[i], services[i], res[i], series[i] = pr.at.UTC(), pr.service, resources[pr.series], strconv.FormatUint(pr.series, 10)
		durations[i], events[i], totals[i] = int64(min(pr.duration, 1<<62)), int64(min(pr.events, 1<<62)), pr.total //nolint:gosec // G115: bounded
		starts[i], ends[i] = pr.firstSecond*1000, (pr.lastSecond+1)*1000
		seconds[i] = pr.lastSecond + 1 - pr.firstSecond
	}
	named := func(f *data.Field, title string, cfg *data.FieldConfig) *data.Field {
		if cfg == nil {
			cfg = &data.FieldConfig{}
		}
		cfg.DisplayNameFromDS = title
		return f.SetConfig(cfg)
	}
	hidden := func(f *data.Field) *data.Field {
		return f.SetConfig(&data.FieldConfig{Custom: map[string]any{"hidden": true}})
	}
	var pprofLinks []data.DataLink
	if target.uid != "" {
		pprofLinks = []data.DataLink{{Title: LinkProfilePprof, URL: pprofLinkURL(target.uid, r)}}
	}
	files := make([]string, n)
	for i, pr := range list {
		files[i] = pprofFileName(r.ProfileType.Name, pr.service, pr.at)
	}
	frame := data.NewFrame("profiles",
		named(data.NewField("time", nil, times), "Time", &data.FieldConfig{Links: target.links(LinkProfileFlameGraph, profileLinkQuery(r), true)}),
		named(data.NewField("service", nil, services), "Service", nil),
		named(data.NewField("resource", nil, res), "Resource", nil),
		named(data.NewField("duration", nil, durations), "Duration", &data.FieldConfig{Unit: "ns"}),
		named(data.NewField("samples", nil, events), "Samples", nil),
		named(data.NewField("total", nil, totals), "Total", &data.FieldConfig{Unit: flame.Unit(r.ProfileType.SampleUnit)}),
		named(data.NewField("pprof", nil, files), "pprof", &data.FieldConfig{Links: pprofLinks}),
		hidden(data.NewField(fieldSeriesID, nil, series)),
		hidden(data.NewField(fieldWindowStart, nil, starts)),
		hidden(data.NewField(fieldWindowEnd, nil, ends)),
		hidden(data.NewField(fieldWindowSeconds, nil, seconds)),
	)
	return frame.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTable, Custom: map[string]any{"flamehouse": "profiles"}})
}

// fieldVariable is Grafana's variable for a field of the link's row.
func fieldVariable(name string) string { return "${__data.fields." + name + "}" }

// profileLinkQuery is the query of a profile's flame graph: the request's
// profile type and selector, the row's series and window.
func profileLinkQuery(r *Request) map[string]any {
	q := profileQuery(r.ProfileType.ID, r.Matchers, nil, "")
	q["seriesId"] = fieldVariable(fieldSeriesID)
	q["intervalStart"] = fieldVariable(fieldWindowStart)
	q["intervalSeconds"] = fieldVariable(fieldWindowSeconds)
	return q
}

// pprofLinkURL is the URL of a profile's pprof file: the datasource's pprof
// resource with the profile's query over the row's window. The query is
// URL-encoded but for the row's series id, which Grafana fills in.
func pprofLinkURL(uid string, r *Request) string {
	marker := "SERIES-ID-MARKER"
	q := map[string]any{"queryType": TypeProfile, "profileTypeId": r.ProfileType.ID, "labelSelector": selector.FormatForTemplate(r.Matchers), "seriesId": marker}
	raw, _ := json.Marshal(q) //nolint:errchkjson // strings only
	encoded := strings.Replace(url.QueryEscape(string(raw)), marker, fieldVariable(fieldSeriesID), 1)
	return "/api/datasources/uid/" + url.PathEscape(uid) + "/resources/pprof?from=" + fieldVariable(fieldWindowStart) +
		"&to=" + fieldVariable(fieldWindowEnd) + "&query=" + encoded
}
