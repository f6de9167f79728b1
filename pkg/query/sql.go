package query

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/query/selector"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// params collects a statement's typed parameters; user text only ever
// travels this way.
type params struct {
	args []any
}

// add binds a value and returns its placeholder, {pN:Type}.
func (p *params) add(typ, value string) string {
	name := "p" + strconv.Itoa(len(p.args))
	p.args = append(p.args, clickhouse.Named(name, value))
	return "{" + name + ":" + typ + "}"
}

func (p *params) str(v string) string    { return p.add("String", v) }
func (p *params) i64(v int64) string     { return p.add("Int64", strconv.FormatInt(v, 10)) }
func (p *params) u64s(v []uint64) string { return p.add("Array(UInt64)", uint64List(v)) }

func uint64List(v []uint64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(x, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// Columns of the promoted resource attributes, on the samples and series
// tables, by selector label name.
var promotedColumns = map[string]string{
	"service_namespace":   "ServiceNamespace",
	"service_instance_id": "ServiceInstanceId",
	"k8s_cluster_name":    "K8sClusterName",
	"k8s_namespace_name":  "K8sNamespaceName",
	"k8s_pod_name":        "K8sPodName",
	"k8s_node_name":       "K8sNodeName",
	"k8s_container_name":  "K8sContainerName",
}

// labelName normalises a selector label name: "service.name" and
// "service_name" are the same label.
func labelName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// isServiceName reports whether a label is service.name.
func isServiceName(name string) bool { return labelName(name) == "service_name" }

// attributeKeys are the attribute keys a label name may stand for: the
// name itself, and with underscores read as dots (k8s_pod_name ->
// k8s.pod.name), as Pyroscope-style selectors spell OpenTelemetry keys.
func attributeKeys(name string) []string {
	dotted := strings.ReplaceAll(name, "_", ".")
	if dotted == name {
		return []string{name}
	}
	return []string{name, dotted}
}

// mapValue is the SQL for a label's value in a Map(String, String)
// column: the first candidate key present, else "".
func mapValue(p *params, column string, keys []string) string {
	if len(keys) == 1 {
		return column + "[" + p.str(keys[0]) + "]"
	}
	k0, k1 := p.str(keys[0]), p.str(keys[1])
	return fmt.Sprintf("if(mapContains(%s, %s), %s[%s], %s[%s])", column, k0, column, k0, column, k1)
}

// mapHas is the SQL that is true when any candidate key is present.
func mapHas(p *params, column string, keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("mapContains(%s, %s)", column, p.str(k))
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// compare renders "expr op value" for a matcher; regular expressions are
// anchored like Prometheus's.
func compare(p *params, expr string, m *selector.Matcher) string {
	switch m.Op {
	case selector.NotEqual:
		return expr + " != " + p.str(m.Value)
	case selector.Regexp:
		return "match(" + expr + ", " + p.str("^(?s:"+m.Value+")$") + ")"
	case selector.NotRegexp:
		return "NOT match(" + expr + ", " + p.str("^(?s:"+m.Value+")$") + ")"
	default:
		return expr + " = " + p.str(m.Value)
	}
}

// filter is the WHERE clause of a query over the sample tables.
type filter struct {
	// conds hold on the raw table and the rollups alike.
	conds []string
	// needsRaw is set when a condition reads per-sample columns (span,
	// trace, sample attributes).
	needsRaw bool
	// bySeries is set when a condition selects series (resource labels).
	bySeries bool
	// services are the services an exact service_name matcher names (nil:
	// any), to scope stack and frame lookups.
	services []string
	// part is the condition of a function filter of a ratio query: not a
	// filter, but the numerator's share of the rows (a StackId column of
	// the rows it is evaluated on); "" without one.
	part string
}

// where joins the conditions.
func (f *filter) where() string { return strings.Join(f.conds, " AND ") }

// buildFilter turns a request into conditions. sampleKeys are the sample
// attribute keys seen in the time range: a label with such a key is read
// per sample (falling back to the resource), the others from the series.
func buildFilter(p *params, tables schema.Config, tenant string, r *Request, sampleKeys map[string]bool) *filter {
	f := &filter{conds: []string{
		"TenantId = " + p.str(tenant),
		"ProfileType = " + p.str(r.ProfileType.ID),
	}}
	var resourceConds []string
	for i := range r.Matchers {
		m := &r.Matchers[i]
		name := labelName(m.Name)
		switch {
		case isServiceName(m.Name):
			f.conds = append(f.conds, compare(p, "ServiceName", m))
			if m.Op == selector.Equal {
				f.services = append(f.services, m.Value)
			}
		case promotedColumns[name] != "":
			resourceConds = append(resourceConds, resourceCond(p, m))
		default:
			keys := attributeKeys(m.Name)
			resource := resourceCond(p, m)
			if !anyKnown(sampleKeys, keys) {
				resourceConds = append(resourceConds, resource)
				continue
			}
			f.needsRaw, f.bySeries = true, true
			f.conds = append(f.conds, fmt.Sprintf("if(%s, %s, SeriesId IN (%s))",
				mapHas(p, "SampleAttributes", keys), compare(p, mapValue(p, "SampleAttributes", keys), m),
				seriesSubquery(p, tables, tenant, []string{resource})))
		}
	}
	if len(resourceConds) > 0 {
		f.conds = append(f.conds, "SeriesId IN ("+seriesSubquery(p, tables, tenant, resourceConds)+")")
		f.bySeries = true
	}
	if r.SeriesID != "" {
		f.conds = append(f.conds, "SeriesId = "+p.add("UInt64", r.SeriesID))
		f.bySeries = true
	}
	if len(r.SpanIDs) > 0 {
		ids := make([]string, len(r.SpanIDs))
		for i, s := range r.SpanIDs {
			ids[i] = p.str(s)
		}
		f.conds = append(f.conds, "SpanId IN ("+strings.Join(ids, ", ")+")")
		f.needsRaw = true
	}
	if r.TraceID != "" {
		f.conds = append(f.conds, "TraceId = "+p.str(r.TraceID))
		f.needsRaw = true
	}
	if r.traceSpans != nil {
		f.conds = append(f.conds, r.traceSpans.cond(p))
		f.needsRaw = true
	}
	if r.BuildID != "" || r.MappingFile != "" {
		f.conds = append(f.conds, executableCond(p, tables, tenant, f, r.BuildID, r.MappingFile))
	}
	if r.Function != "" {
		if r.Ratio {
			f.part = functionCond(p, tables, tenant, f, "u.StackId", r.Function, r.FunctionSelf)
		} else {
			f.conds = append(f.conds, functionCond(p, tables, tenant, f, "StackId", r.Function, r.FunctionSelf))
		}
	}
	return f
}

// functionCond is true for rows whose stack (its id in column) goes
// through a function: the stacks of the filter's services that hold a
// frame of that label (frameLabelSQL), or with self whose leaf is one.
// Stacks keep their frame ids root first, so the leaf is the last.
func functionCond(p *params, tables schema.Config, tenant string, f *filter, column, fn string, self bool) string {
	frames := "SELECT FrameId FROM " + tables.Qualified(schema.Frames) + " WHERE TenantId = " + p.str(tenant) + servicesCond(p, f) +
		" AND " + functionLabelCond(p, fn)
	stacks := "SELECT StackId FROM " + tables.Qualified(schema.Stacks) + " WHERE TenantId = " + p.str(tenant) + servicesCond(p, f)
	if self {
		return column + " IN (" + stacks + " AND FrameIds[-1] IN (" + frames + "))"
	}
	return column + " IN (" + stacks + " AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (" + frames + "))))"
}

// functionLabelCond is true for frames a function filter names: those of
// that label, and for a label with a frame kind's mark (markedFunction)
// the frames of the kind with the label as stored ("read [kernel]"), or
// any frame of the kind for a collapsed run's label ("[kernel]").
func functionLabelCond(p *params, fn string) string {
	cond := frameLabelSQL + " = " + p.str(fn)
	label, kind, whole, ok := markedFunction(fn)
	switch {
	case !ok:
		return cond
	case whole:
		return "(" + cond + " OR FrameType = " + p.str(frameTypeOfKind(kind)) + ")"
	}
	return "(" + cond + " OR (" + frameLabelSQL + " = " + p.str(label) + " AND FrameType = " + p.str(frameTypeOfKind(kind)) + "))"
}

// executableCond is true for rows whose stack goes through an executable:
// the stacks (of the filter's services) holding a frame of that build id
// and/or mapped file.
func executableCond(p *params, tables schema.Config, tenant string, f *filter, buildID, file string) string {
	frames := "SELECT FrameId FROM " + tables.Qualified(schema.Frames) + " WHERE TenantId = " + p.str(tenant) + servicesCond(p, f)
	if buildID != "" {
		frames += " AND BuildId = " + p.str(buildID)
	}
	if file != "" {
		frames += " AND MappingFile = " + p.str(file)
	}
	return "StackId IN (SELECT StackId FROM " + tables.Qualified(schema.Stacks) + " WHERE TenantId = " + p.str(tenant) + servicesCond(p, f) +
		" AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (" + frames + "))))"
}

// resourceCond is a matcher's condition on profile_series: its promoted
// column, else its resource attribute.
func resourceCond(p *params, m *selector.Matcher) string {
	if col := promotedColumns[labelName(m.Name)]; col != "" {
		return compare(p, col, m)
	}
	return compare(p, mapValue(p, "ResourceAttributes", attributeKeys(m.Name)), m)
}

func anyKnown(known map[string]bool, keys []string) bool {
	for _, k := range keys {
		if known[k] {
			return true
		}
	}
	return false
}

func seriesSubquery(p *params, tables schema.Config, tenant string, conds []string) string {
	return "SELECT SeriesId FROM " + tables.Qualified(schema.Series) + " WHERE TenantId = " + p.str(tenant) +
		" AND " + strings.Join(conds, " AND ")
}

// source is the finest detail a query needs, which decides the tables it
// may read.
type source int

const (
	// bySample: per-sample columns (span, trace, sample attributes); the
	// raw table only.
	bySample source = iota
	// bySeries: resource labels; the rollups keyed by series.
	bySeries
	// byService: service and stack only; the rollups by service, whose
	// rows neither multiply with pods nor grow with the sample rate.
	byService
)

// source is the detail a filter needs; grouping by series labels
// (seriesGroups) or per-sample labels (sampleGroups) needs more.
func (f *filter) source(seriesGroups, sampleGroups bool) source {
	switch {
	case f.needsRaw || sampleGroups:
		return bySample
	case f.bySeries || seriesGroups:
		return bySeries
	default:
		return byService
	}
}

// seriesSource is the detail a time-series query needs: the filter's and
// its groups', or for a gauge profile type the raw table's (bySample),
// as the rollups add a bucket's snapshots up and keep no count of them.
func (f *filter) seriesSource(seriesGroups, sampleGroups, gauge bool) source {
	if gauge {
		return bySample
	}
	return f.source(seriesGroups, sampleGroups)
}

// rollups are the minute and hour tables of a source.
func (s source) rollups() (minute, hour string) {
	if s == byService {
		return schema.ServiceMinute, schema.ServiceHour
	}
	return schema.SamplesMinute, schema.SamplesHour
}

// segment is a time range read from one sample table.
type segment struct {
	table    string
	from, to int64 // Unix seconds, [from, to)
	// rolledFrom and rolledTo, when rolledTo > rolledFrom, are the part
	// of a raw segment's range whose marked rows a minute rollup's segment
	// beside it reads (schema.MinuteRollupColumn): there the raw segment
	// reads only the unmarked rows.
	rolledFrom, rolledTo int64
}

// Thresholds for reading rollups: a range shorter than these reads the
// finer table whole (it holds no whole bucket). A rollup row sums the
// rows of its bucket, so reading it is never more work.
const (
	minuteRollupAfter = 60
	hourRollupAfter   = 3600
)

// plan splits [from, to) into segments: whole hours from the hourly
// rollup, whole minutes from the minute rollup, the rest from the raw
// table, so that results equal the raw table's. align > 1 is a time-series
// step: rollups are used only when their buckets nest in it. marked says
// the raw rows carry the minute rollup mark (schema version 7): whole
// minutes are then read from the minute rollup plus the raw rows it does
// not hold, those with the edges.
func plan(from, to int64, src source, align int64, marked bool) []segment {
	if src == bySample || to <= from {
		return []segment{{table: schema.Samples, from: from, to: to}}
	}
	minute, hour := src.rollups()
	if to-from >= hourRollupAfter && nests(3600, align) {
		hs, he := ceilTo(from, 3600), floorTo(to, 3600)
		if he-hs >= 3600 {
			out := planMinutes(from, hs, minute, align, marked)
			out = append(out, segment{table: hour, from: hs, to: he})
			return append(out, planMinutes(he, to, minute, align, marked)...)
		}
	}
	return planMinutes(from, to, minute, align, marked)
}

func planMinutes(from, to int64, minute string, align int64, marked bool) []segment {
	if to <= from {
		return nil
	}
	if to-from < minuteRollupAfter || !nests(60, align) {
		return []segment{{table: schema.Samples, from: from, to: to}}
	}
	ms, me := ceilTo(from, 60), floorTo(to, 60)
	if marked {
		// One raw read for the edges and the whole minutes' unmarked rows:
		// one statement part fewer than reading them apart, and the mark's
		// index, which keeps the time too, skips the granules of the whole
		// minutes that are all marked.
		return []segment{
			{table: schema.Samples, from: from, to: to, rolledFrom: ms, rolledTo: me},
			{table: minute, from: ms, to: me},
		}
	}
	var out []segment
	if ms > from {
		out = append(out, segment{table: schema.Samples, from: from, to: ms})
	}
	out = append(out, segment{table: minute, from: ms, to: me})
	if to > me {
		out = append(out, segment{table: schema.Samples, from: me, to: to})
	}
	return out
}

// nests reports whether rollup buckets of a size fit in a step (a step of
// 1 or less means no buckets: a flame graph or table).
func nests(bucket, step int64) bool { return step <= 1 || step%bucket == 0 }

func ceilTo(t, unit int64) int64 { return floorTo(t+unit-1, unit) }

func floorTo(t, unit int64) int64 {
	q := t / unit
	if t%unit != 0 && t < 0 {
		q--
	}
	return q * unit
}

// union selects columns from every segment of a filter.
func union(p *params, tables schema.Config, f *filter, segs []segment, columns string) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = "SELECT " + columns + " FROM " + tables.Qualified(s.table) + " WHERE " + f.where() +
			" AND Timestamp >= toDateTime(" + p.i64(s.from) + ") AND Timestamp < toDateTime(" + p.i64(s.to) + ")"
		if s.rolledTo > s.rolledFrom {
			parts[i] += " AND " + unrolledCond(p, s)
		}
	}
	return strings.Join(parts, " UNION ALL ")
}

// unrolledCond keeps a raw segment's rows that no minute rollup's segment
// reads: outside its rolled range, or unmarked. "= false", not NOT: the
// form the mark's minmax index is analysed for.
func unrolledCond(p *params, s segment) string {
	unmarked := schema.MinuteRollupColumn + " = false"
	if s.rolledFrom <= s.from && s.rolledTo >= s.to {
		return unmarked
	}
	return "(Timestamp < toDateTime(" + p.i64(s.rolledFrom) + ") OR Timestamp >= toDateTime(" + p.i64(s.rolledTo) + ") OR " + unmarked + ")"
}

// nanoTimeRange is the condition Timestamp in [from, to) (Unix seconds) on
// the exporter's tables, whose Timestamp is a DateTime64(9).
func nanoTimeRange(p *params, from, to int64) string {
	return "Timestamp >= toDateTime64(" + p.i64(from) + ", 9) AND Timestamp < toDateTime64(" + p.i64(to) + ", 9)"
}

// servicesCond scopes a stacks or frames lookup to the filter's services.
func servicesCond(p *params, f *filter) string {
	if len(f.services) == 0 {
		return ""
	}
	names := make([]string, len(f.services))
	for i, s := range f.services {
		names[i] = p.str(s)
	}
	return " AND ServiceName IN (" + strings.Join(names, ", ") + ")"
}

// sumsSQL sums values per stack.
func sumsSQL(p *params, tables schema.Config, f *filter, segs []segment) string {
	return "SELECT StackId, sum(Value) FROM (" + union(p, tables, f, segs, "StackId, Value") + ") GROUP BY StackId"
}

// stacksSQL loads stacks' frame ids by id, or all stacks of the filter's
// services when ids is nil. Frame ids travel as one binary string per
// stack, 8 little-endian bytes each: scanning an Array column through
// clickhouse-go costs a reflective append per element. A stack may come
// back more than once (one row per day it was seen).
func stacksSQL(p *params, tables schema.Config, tenant string, f *filter, ids []uint64) string {
	q := "SELECT StackId, arrayStringConcat(arrayMap(x -> rightPad(reinterpretAsString(x), 8, char(0)), FrameIds)) FROM " +
		tables.Qualified(schema.Stacks) + " WHERE TenantId = " + p.str(tenant) + servicesCond(p, f)
	if ids != nil {
		q += " AND StackId IN " + p.u64s(ids)
	}
	return q
}

// frameLabelSQL names a frame at function granularity, as pprof -top does:
// the function name, else its system name, else, for unsymbolized code,
// the mapped file's base name in brackets ("[libc.so.6]"), else the file,
// else the address.
var frameLabelSQL = "multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, " +
	"MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, " + addressLabel("Address") + ")"

// addressLabel spells an address as pprof does: 0x and lower-case hex
// without leading zeros (hex() pads to whole bytes).
func addressLabel(column string) string {
	return "concat('0x', replaceRegexpOne(lower(hex(" + column + ")), '^0(.)', '\\\\1'))"
}

// unsymbolizedSQL is true for a frame that names neither a function nor a
// file (model.Frame.Symbolized): an address in a mapped file.
const unsymbolizedSQL = "FunctionName = '' AND SystemName = '' AND FileName = ''"

// framesSQL reads frames by id, or all frames of the filter's services
// when ids is nil (a frame may come back more than once: one row per day
// it was seen): the columns frameRow scans, which name the frame in Go
// (frameLabel, as frameLabelSQL names it in ClickHouse; computing the
// label there cost as much again as reading the rows, docs/performance.md).
// Without placement (before schema version 3) the mapping's start and
// file offset are zeros.
func framesSQL(p *params, tables schema.Config, tenant string, f *filter, ids []uint64, placement bool) string {
	mapping := "toUInt64(0), toUInt64(0)"
	if placement {
		mapping = "MappingStart, MappingOffset"
	}
	q := "SELECT FrameId, FunctionName, SystemName, MappingFile, FileName, Line, Address, toString(BuildId), " + mapping +
		", toString(FrameType) FROM " + tables.Qualified(schema.Frames) + " WHERE TenantId = " + p.str(tenant) + servicesCond(p, f)
	if ids != nil {
		q += " AND FrameId IN " + p.u64s(ids)
	}
	return q
}

// framesOfStacksSQL reads the frames of stacks (framesSQL's columns),
// found by their ids in ClickHouse (the stacks table joined by the same
// filter), or all frames of the filter's services for nil stack ids.
func framesOfStacksSQL(p *params, tables schema.Config, tenant string, f *filter, stackIDs []uint64, placement bool) string {
	q := framesSQL(p, tables, tenant, f, nil, placement)
	if stackIDs == nil {
		return q
	}
	return q + " AND FrameId IN (SELECT arrayJoin(FrameIds) FROM " + tables.Qualified(schema.Stacks) + " WHERE TenantId = " + p.str(tenant) +
		servicesCond(p, f) + " AND StackId IN " + p.u64s(stackIDs) + ")"
}

// groupExprs renders the time-series group-by labels: service_name from
// its column, other labels per sample when the range has such sample
// attributes, else from the series' resource attributes (through the
// series join, aliased r).
func groupExprs(p *params, labels []string, sampleKeys map[string]bool) (exprs, seriesCols []string, raw bool) {
	for i, l := range labels {
		name := labelName(l)
		switch {
		case isServiceName(l):
			exprs = append(exprs, "u.ServiceName")
			continue
		case promotedColumns[name] != "":
			seriesCols = append(seriesCols, fmt.Sprintf("any(%s) AS r%d", promotedColumns[name], i))
		default:
			seriesCols = append(seriesCols, fmt.Sprintf("any(%s) AS r%d", mapValue(p, "ResourceAttributes", attributeKeys(l)), i))
		}
		resource := fmt.Sprintf("r.r%d", i)
		keys := attributeKeys(l)
		if promotedColumns[name] == "" && anyKnown(sampleKeys, keys) {
			raw = true
			resource = fmt.Sprintf("if(%s, %s, %s)", mapHas(p, "u.SampleAttributes", keys), mapValue(p, "u.SampleAttributes", keys), resource)
		}
		exprs = append(exprs, resource)
	}
	return exprs, seriesCols, raw
}

// groupedRows is the FROM of a query grouped by labels (groupExprs): the
// segments' rows with columns cols, aliased u, joined to the series'
// group-by columns (seriesCols, aliased r) when there are any; cols must
// then include SeriesId.
func groupedRows(p *params, tables schema.Config, tenant string, f *filter, segs []segment, cols string, seriesCols []string) string {
	from := "(" + union(p, tables, f, segs, cols) + ") AS u"
	if len(seriesCols) > 0 {
		from += " LEFT JOIN (SELECT SeriesId, " + strings.Join(seriesCols, ", ") + " FROM " + tables.Qualified(schema.Series) +
			" WHERE TenantId = " + p.str(tenant) + " GROUP BY SeriesId) AS r ON u.SeriesId = r.SeriesId"
	}
	return from
}

// groupedSumsSQL sums values per group (the groupExprs groups) and stack:
// rows of (g0, g1, ..., StackId, sum).
func groupedSumsSQL(p *params, tables schema.Config, tenant string, f *filter, segs []segment, groups, seriesCols []string, raw bool) string {
	cols := "StackId, Value, ServiceName"
	if len(seriesCols) > 0 {
		cols += ", SeriesId"
	}
	if raw {
		cols += ", SampleAttributes"
	}
	keys := make([]string, len(groups))
	for i, g := range groups {
		keys[i] = fmt.Sprintf("%s AS g%d", g, i)
	}
	return "SELECT " + strings.Join(keys, ", ") + ", u.StackId AS s, sum(u.Value) FROM " + groupedRows(p, tables, tenant, f, segs, cols, seriesCols) +
		" GROUP BY " + strings.Join(groupKeys(len(groups)), ", ") + ", s"
}

// groupKeys are the aliases of n group expressions: g0, g1, ...
func groupKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("g%d", i)
	}
	return keys
}

// seriesSQL aggregates a time-series query per time bucket and group from
// the segments. A gauge profile type reads SeriesId too: its series are
// averaged over their snapshots (bucketQuery).
func seriesSQL(p *params, tables schema.Config, tenant string, f *filter, segs []segment, step int64, groups, seriesCols []string, raw, gauge bool) string {
	cols := "Timestamp, Value, ServiceName"
	if len(seriesCols) > 0 || gauge {
		cols += ", SeriesId"
	}
	if raw {
		cols += ", SampleAttributes"
	}
	if f.part != "" {
		cols += ", StackId"
	}
	b := bucketQuery{from: groupedRows(p, tables, tenant, f, segs, cols, seriesCols), time: "u.Timestamp", groups: groups, value: "u.Value", part: f.part}
	if gauge {
		b.series, b.snapshot = "u.SeriesId", "u.Timestamp"
	}
	return b.sql(p, step)
}

// bucketQuery aggregates rows per time bucket and group, into rows of
// (t, g0, g1, ..., v) ordered by t, v a Float64. Both layouts build their
// time series with it.
type bucketQuery struct {
	// from is the rows: a table or a subquery, with its joins and WHERE.
	from string
	// time is a row's time (a DateTime); groups are the group-by
	// expressions; value is a row's value.
	time   string
	groups []string
	value  string
	// series and snapshot are set for a gauge profile type
	// (profiletype.IsGauge): the expression of a row's series and of its
	// snapshot (the profile's time). A bucket's value is then the sum over
	// series of each series' average over its snapshots in the bucket
	// (its values' sum over its number of distinct snapshots there, all of
	// its groups counted); without them, the sum of the values.
	series, snapshot string
	// part, when set, is a condition on a row: v is then the part's value
	// only, and d, a column more, the value of all rows (a ratio's
	// denominator), both aggregated alike.
	part string
}

func (b bucketQuery) sql(p *params, step int64) string {
	sel := []string{"toInt64(toUnixTimestamp(toStartOfInterval(" + b.time + ", toIntervalSecond(" + p.i64(step) + ")))) AS t"}
	keys := []string{"t"}
	for i, g := range b.groups {
		sel = append(sel, fmt.Sprintf("%s AS g%d", g, i))
		keys = append(keys, fmt.Sprintf("g%d", i))
	}
	group := strings.Join(keys, ", ")
	value := b.value
	if b.part != "" {
		value = "if(" + b.part + ", " + b.value + ", 0)"
	}
	if b.series == "" {
		sel = append(sel, "toFloat64(sum("+value+")) AS v")
		if b.part != "" {
			sel = append(sel, "toFloat64(sum("+b.value+")) AS d")
		}
		return "SELECT " + strings.Join(sel, ", ") + " FROM " + b.from + " GROUP BY " + group + " ORDER BY t"
	}
	sel = append(sel, b.series+" AS s", "sum("+value+") AS v")
	if b.part != "" {
		sel = append(sel, "sum("+b.value+") AS d")
	}
	sel = append(sel, "groupUniqArray("+b.snapshot+") AS ts")
	perSeries := "SELECT " + strings.Join(sel, ", ") + " FROM " + b.from + " GROUP BY " + group + ", s"
	snapshots := "length(groupUniqArrayArray(ts) OVER (PARTITION BY t, s))"
	if b.part == "" {
		averages := "SELECT " + group + ", v / " + snapshots + " AS a FROM (" + perSeries + ")"
		return "SELECT " + group + ", sum(a) AS v FROM (" + averages + ") GROUP BY " + group + " ORDER BY t"
	}
	averages := "SELECT " + group + ", v / n AS a, d / n AS b FROM (SELECT *, " + snapshots + " AS n FROM (" + perSeries + "))"
	return "SELECT " + group + ", sum(a) AS v, sum(b) AS d FROM (" + averages + ") GROUP BY " + group + " ORDER BY t"
}

// sampleKeysSQL finds which of some attribute keys are sample attributes
// in the time range (from the label catalog).
func sampleKeysSQL(p *params, tables schema.Config, tenant, profileType string, from, to int64, keys []string) string {
	list := make([]string, len(keys))
	for i, k := range keys {
		list[i] = p.str(k)
	}
	return "SELECT DISTINCT Key FROM " + tables.Qualified(schema.SampleLabels) + " WHERE TenantId = " + p.str(tenant) +
		" AND ProfileType = " + p.str(profileType) + " AND Hour >= toStartOfHour(toDateTime(" + p.i64(from) + "))" +
		" AND Hour < toDateTime(" + p.i64(to) + ") AND Key IN (" + strings.Join(list, ", ") + ")"
}

// stringArray renders strings as an Array(String) parameter value, each
// quoted with backslash escapes.
func stringArray(values []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range values {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\'')
		for _, c := range []byte(v) {
			switch c {
			case '\\', '\'':
				b.WriteByte('\\')
				b.WriteByte(c)
			case '\t':
				b.WriteString(`\t`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case 0:
				b.WriteString(`\0`)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('\'')
	}
	b.WriteByte(']')
	return b.String()
}
