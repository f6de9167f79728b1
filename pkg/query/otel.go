package query

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/flamehouse/flamehouse/pkg/profiletype"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// otelColumns are the exporter's materialized resource attribute columns,
// by selector label name.
var otelColumns = map[string]string{
	"service_namespace":           "__otel_materialized_service.namespace",
	"service_instance_id":         "__otel_materialized_service.instance.id",
	"deployment_environment_name": "__otel_materialized_deployment.environment.name",
	"k8s_cluster_name":            "__otel_materialized_k8s.cluster.name",
	"k8s_namespace_name":          "__otel_materialized_k8s.namespace.name",
	"k8s_deployment_name":         "__otel_materialized_k8s.deployment.name",
	"k8s_pod_name":                "__otel_materialized_k8s.pod.name",
	"k8s_pod_uid":                 "__otel_materialized_k8s.pod.uid",
	"k8s_node_name":               "__otel_materialized_k8s.node.name",
	"k8s_container_name":          "__otel_materialized_k8s.container.name",
}

// OTelRequiredColumns are the exporter table's columns the queries read:
// what a health check verifies.
var OTelRequiredColumns = func() []string {
	cols := []string{
		"Timestamp", "ServiceName", "SampleType", "SampleUnit", "PeriodType", "PeriodUnit", "Period",
		"ResourceAttributes", "SampleAttributes", "StackHash", "FunctionNames", "FileNames", "LineNumbers", "MappingFileNames",
		"Addresses", "Values", "TimestampsUnixNano", "TraceId", "SpanId",
	}
	for _, c := range otelColumns {
		cols = append(cols, c)
	}
	return cols
}()

// otelLayout reads the OpenTelemetry Collector ClickHouse exporter's
// profiles table: one row per OTLP sample, its frames leaf first in
// parallel arrays, stacks grouped by the exporter's StackHash (of function
// and file names). There is no tenant column: every row is read.
type otelLayout struct {
	e     *Engine
	table string // qualified
}

// otelValue is a row's value: the sum of its values, or its number of
// timestamps when it has none (each event counts one).
const otelValue = "if(empty(Values), toInt64(length(TimestampsUnixNano)), arraySum(Values))"

// otelFrameLabel names a frame as frameLabelSQL does on Flamehouse's
// frames table (the exporter keeps no system name).
var otelFrameLabel = "(f, m, fl, a) -> multiIf(f != '', f, m != '', concat('[', basename(m), ']'), fl != '', fl, " + addressLabel("a") + ")"

// otelLabel is the SQL of a selector label's value: service_name and the
// materialized columns as columns, any other label from the sample's
// attributes, else its resource's, as on Flamehouse's tables.
func otelLabel(p *params, name string) string {
	switch {
	case isServiceName(name):
		return "ServiceName"
	case otelColumns[labelName(name)] != "":
		return schema.QuoteIdentifier(otelColumns[labelName(name)])
	}
	keys := attributeKeys(name)
	return fmt.Sprintf("if(%s, %s, %s)", mapHas(p, "SampleAttributes", keys),
		mapValue(p, "SampleAttributes", keys), mapValue(p, "ResourceAttributes", keys))
}

// where renders a time range [from, to) in Unix seconds, a profile type
// ("": any) and matchers, and returns the value expression of the type.
func (l *otelLayout) where(p *params, from, to int64, typeID string, ms []selector.Matcher) (where, value string) {
	timeCond := nanoTimeRange(p, from, to)
	conds := []string{timeCond}
	value = otelValue
	if typeID != "" {
		var typeCond string
		typeCond, value = l.typeCond(p, typeID, timeCond)
		conds = append(conds, typeCond)
	}
	for i := range ms {
		conds = append(conds, compare(p, otelLabel(p, ms[i].Name), &ms[i]))
	}
	return strings.Join(conds, " AND "), value
}

// typeCond finds the rows of a profile type id, named by their sample and
// period types as the ingest names them (pkg/profiletype), and returns
// the expression of their values in the id's unit. Like the ingest, it
// counts samples/count on a cpu/nanoseconds period as CPU time (count ×
// period), except for services that also send CPU time themselves (a
// pprof-style sender), whose counts keep their own id.
func (l *otelLayout) typeCond(p *params, id, timeCond string) (cond, value string) {
	pt, err := ParseProfileType(id)
	if err != nil {
		return "0", otelValue
	}
	types := func(st, su, pt, pu string) string {
		return "SampleType = " + p.str(st) + " AND SampleUnit = " + p.str(su) + " AND PeriodType = " + p.str(pt) + " AND PeriodUnit = " + p.str(pu)
	}
	cpuTimeServices := "SELECT ServiceName FROM " + l.table + " WHERE " + types("cpu", "nanoseconds", "cpu", "nanoseconds") + " AND " + timeCond
	var variants []string
	if plain, _ := profiletype.ID(pt.SampleType, pt.SampleUnit, pt.PeriodType, pt.PeriodUnit, 0, false); plain == id {
		c := types(pt.SampleType, pt.SampleUnit, pt.PeriodType, pt.PeriodUnit)
		if profiletype.IsCPUCount(pt.SampleType, pt.SampleUnit, pt.PeriodType, pt.PeriodUnit) {
			c += " AND (Period <= 0 OR ServiceName IN (" + cpuTimeServices + "))"
		}
		variants = append(variants, c)
		if pt.SampleType == pt.PeriodType && pt.SampleUnit == pt.PeriodUnit {
			variants = append(variants, "SampleType = "+p.str(pt.SampleType)+" AND SampleUnit = "+p.str(pt.SampleUnit)+" AND PeriodType = ''")
		}
	}
	value = otelValue
	if id == profiletype.CPUTime {
		variants = append(variants, types("samples", "count", "cpu", "nanoseconds")+" AND Period > 0 AND ServiceName NOT IN ("+cpuTimeServices+")")
		value = "if(SampleType = 'samples', Period, 1) * " + otelValue
	}
	if len(variants) == 0 {
		return "0", value
	}
	return "((" + strings.Join(variants, ") OR (") + "))", value
}

// requestWhere renders a request's conditions and value expression.
func (l *otelLayout) requestWhere(p *params, r *Request, from int64) (where, value string) {
	where, value = l.where(p, from, ceilSecond(r.To), r.ProfileType.ID, r.Matchers)
	if len(r.SpanIDs) > 0 {
		where += " AND SpanId IN (" + strList(p, r.SpanIDs) + ")"
	}
	if r.TraceID != "" {
		where += " AND TraceId = " + p.str(r.TraceID)
	}
	if r.traceSpans != nil {
		where += " AND " + r.traceSpans.cond(p)
	}
	if r.Function != "" && !r.Ratio {
		where += " AND " + otelFunctionCond(p, r)
	}
	if r.MappingFile != "" {
		where += " AND has(MappingFileNames, " + p.str(r.MappingFile) + ")"
	}
	return where, value
}

// otelFunctionCond is true for rows whose stack goes through the request's
// function (whose leaf is it, with self): the exporter keeps a row's
// frames in parallel arrays, leaf first.
func otelFunctionCond(p *params, r *Request) string {
	labels := "arrayMap(" + otelFrameLabel + ", FunctionNames, MappingFileNames, FileNames, Addresses)"
	if r.FunctionSelf {
		return "(notEmpty(FunctionNames) AND " + labels + "[1] = " + p.str(r.Function) + ")"
	}
	return "has(" + labels + ", " + p.str(r.Function) + ")"
}

// stacks sums values per stack and names each stack's frames from one of
// its rows, in one scan. A stack is a StackHash and the mapping files of
// its frames: the exporter hashes function and file names only, so
// unsymbolized frames of different libraries would otherwise share one.
// When the symbol store has executables whose file names match mapping
// files of the table (resolvableFiles), the unsymbolized frames of those
// files carry their address out of the scan (otelMarker), their stacks
// are told apart by those addresses too, and they are resolved like
// Flamehouse's frames.
func (l *otelLayout) stacks(ctx context.Context, r *Request) ([]stackValue, *frameNames, error) {
	files, err := l.resolvableFiles(ctx)
	if err != nil {
		return nil, nil, err
	}
	var p params
	rows, err := l.e.read(ctx, r, l.stacksSQL(&p, r, files), p.args)
	if err != nil {
		return nil, nil, fmt.Errorf("sum samples per stack: %w", err)
	}
	defer closeRows(rows)
	ids := map[string]uint64{}
	names := &frameNames{labels: map[uint64]string{}}
	natives := map[uint64]nativeFrame{}
	var stacks []stackValue
	g := newGroupIndex(flameGroupBy(r))
	var hash uint64
	var v int64
	var packed string
	groupValues := make([]string, len(flameGroupBy(r)))
	dest := []any{&hash, &v, &packed}
	for i := range groupValues {
		dest = append(dest, &groupValues[i])
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, err
		}
		s := stackValue{value: v}
		if g != nil {
			s.group = g.of(groupValues)
		}
		if packed != "" {
			for label := range strings.SplitSeq(packed, "\x00") {
				id, ok := ids[label]
				if !ok {
					id = uint64(len(ids))
					ids[label] = id
					names.labels[id] = label
					if file, address, ok := parseOTelMarker(label); ok {
						names.labels[id] = "[" + file + "]"
						natives[id] = nativeFrame{buildID: files[file].buildID, address: address}
					}
				}
				s.frames = append(s.frames, id)
			}
		}
		stacks = append(stacks, s)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	names.groups, names.groupValues = g.names(), g.valuesOf()
	if len(natives) > 0 {
		exes := map[string]*executable{}
		for _, x := range files {
			exes[x.buildID] = x
		}
		tables, err := l.e.tablesFor(ctx, exes)
		if err != nil {
			return nil, nil, err
		}
		(&resolution{exes: exes, tables: tables}).name(natives, names, r.Lines)
	}
	return stacks, names, rows.Err()
}

// stacksSQL sums values per stack with each stack's frame labels, packed
// root first and separated by NUL.
func (l *otelLayout) stacksSQL(p *params, r *Request, files map[string]*executable) string {
	where, value := l.requestWhere(p, stackRequest(r), r.From.Unix())
	label, group := otelStackLabel(p, r.Lines, files)
	groupBy := flameGroupBy(r)
	keys := groupKeys(len(groupBy))
	var groups, outer strings.Builder
	for i, g := range groupBy {
		groups.WriteString(", " + otelLabel(p, g) + " AS " + keys[i])
		outer.WriteString(", " + keys[i])
	}
	return "SELECT h, v, arrayStringConcat(arrayReverse(arrayMap(" + label + ", s.1, s.2, s.3, s.4, s.5)), '\\0')" + outer.String() + " FROM (" +
		"SELECT StackHash AS h, sum(" + value + ") AS v, any((FunctionNames, MappingFileNames, FileNames, Addresses, arrayResize(LineNumbers, length(FunctionNames)))) AS s" +
		groups.String() + " FROM " + l.table + " WHERE " + where + " GROUP BY StackHash, cityHash64(MappingFileNames)" + group + outer.String() + ")"
}

// otelMarker starts the label of an unsymbolized frame that the symbol
// store may name: "\x01<mapping file's base name>\x01<address>".
const otelMarker = "\x01"

func parseOTelMarker(label string) (file string, address uint64, ok bool) {
	rest, ok := strings.CutPrefix(label, otelMarker)
	if !ok {
		return "", 0, false
	}
	file, addr, ok := strings.Cut(rest, otelMarker)
	if !ok {
		return "", 0, false
	}
	address, err := strconv.ParseUint(addr, 10, 64)
	return file, address, err == nil
}

// otelStackLabel is the lambda that labels a frame of the exporter's
// arrays (function, mapping file, file, address, line), at function or
// line granularity, marking the unsymbolized frames of resolvable files;
// and the extra grouping that tells stacks apart by those frames'
// addresses ("" without resolvable files).
func otelStackLabel(p *params, lines bool, files map[string]*executable) (label, group string) {
	body := "multiIf(f != '', f, m != '', concat('[', basename(m), ']'), fl != '', fl, " + addressLabel("a") + ")"
	if lines {
		body = "if(fl != '' AND ln > 0, concat(if(f != '', concat(f, ' '), ''), fl, ':', toString(ln)), " + body + ")"
	}
	if len(files) > 0 {
		names := make([]string, 0, len(files))
		for n := range files {
			names = append(names, n)
		}
		slices.Sort(names)
		list := p.add("Array(String)", stringArray(names))
		cond := "f = '' AND fl = '' AND has(" + list + ", basename(m))"
		body = "if(" + cond + ", concat('\\x01', basename(m), '\\x01', toString(a)), " + body + ")"
		group = ", cityHash64(arrayFilter((a, f, fl, m) -> " + cond + ", Addresses, FunctionNames, FileNames, MappingFileNames))"
	}
	return "(f, m, fl, a, ln) -> " + body, group
}

// resolvableFiles are the stored executables the exporter's frames can be
// resolved with, by file base name: the table keeps mapping file names but
// no build ids, so an unsymbolized frame is named from the executable of
// its mapping file's name when exactly one stored executable of the tenant
// has that name (two builds of one library cannot be told apart: neither
// is used). nil without the symbol tables.
func (l *otelLayout) resolvableFiles(ctx context.Context) (map[string]*executable, error) {
	pr, err := l.e.probe(ctx)
	if err != nil || !pr.symbols {
		return nil, err
	}
	exes, err := l.e.executables(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]*executable{}
	ambiguous := map[string]bool{}
	for _, x := range exes {
		name := path.Base(x.file)
		if x.file == "" || name == "." || name == "/" || !buildIDPattern.MatchString(x.buildID) {
			continue
		}
		if _, ok := out[name]; ok {
			ambiguous[name] = true
		}
		out[name] = x
	}
	for name := range ambiguous {
		delete(out, name)
	}
	return out, nil
}

// series aggregates per bucket and group. For a gauge profile type a
// series is a resource (ServiceName and ResourceAttributes, keys sorted)
// and a snapshot a distinct Timestamp, the profile's time.
func (l *otelLayout) series(ctx context.Context, r *Request, acc *seriesAccumulator) error {
	var p params
	step := int64(r.Step.Seconds())
	where, value := l.requestWhere(&p, r, floorTo(r.From.Unix(), step))
	groups := make([]string, len(r.GroupBy))
	for i, g := range r.GroupBy {
		groups[i] = otelLabel(&p, g)
	}
	b := bucketQuery{from: l.table + " WHERE " + where, time: "toDateTime(Timestamp)", groups: groups, value: value}
	if r.ProfileType.Gauge() {
		b.series, b.snapshot = "cityHash64(ServiceName, mapSort(ResourceAttributes))", "Timestamp"
	}
	if r.Function != "" && r.Ratio {
		b.part = otelFunctionCond(&p, r)
	}
	rows, err := l.e.read(ctx, r, b.sql(&p, step), p.args)
	if err != nil {
		return fmt.Errorf("sum samples per interval: %w", err)
	}
	return scanSeries(rows, len(r.GroupBy), b.part != "", acc)
}

// scopeWhere renders a lookup's scope.
func (l *otelLayout) scopeWhere(p *params, s Scope) string {
	where, _ := l.where(p, s.From.Unix(), ceilSecond(s.To), s.ProfileType, s.Matchers)
	return where
}

// profileTypes names every (service, sample type, period type) in the
// scope as the ingest would: a service's sample counts on a CPU period are
// CPU time unless the service also sends CPU time.
func (l *otelLayout) profileTypes(ctx context.Context, s Scope) ([]string, error) {
	var p params
	q := "SELECT DISTINCT ServiceName, SampleType, SampleUnit, PeriodType, PeriodUnit, Period > 0 FROM " + l.table +
		" WHERE " + l.scopeWhere(&p, s)
	rows, err := l.e.Conn.Query(ctx, q, p.args...)
	if err != nil {
		return nil, fmt.Errorf("query ClickHouse: %w", err)
	}
	defer rows.Close()
	type kind struct {
		service, st, su, pt, pu string
		period                  bool
	}
	var kinds []kind
	sendsCPUTime := map[string]bool{}
	for rows.Next() {
		var k kind
		if err := rows.Scan(&k.service, &k.st, &k.su, &k.pt, &k.pu, &k.period); err != nil {
			return nil, err
		}
		kinds = append(kinds, k)
		if profiletype.IsCPUTime(k.st, k.su, k.pt, k.pu) {
			sendsCPUTime[k.service] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(kinds))
	for _, k := range kinds {
		period := int64(0)
		if k.period {
			period = 1
		}
		id, _ := profiletype.ID(k.st, k.su, k.pt, k.pu, period, !sendsCPUTime[k.service])
		ids = append(ids, id)
	}
	return ids, nil
}

func (l *otelLayout) services(ctx context.Context, s Scope) ([]string, error) {
	var p params
	return l.e.strings(ctx, "SELECT DISTINCT ServiceName FROM "+l.table+" WHERE "+l.scopeWhere(&p, s)+
		" ORDER BY ServiceName LIMIT "+p.i64(maxLabelValues), &p)
}

func (l *otelLayout) labelKeys(ctx context.Context, s Scope) ([]string, error) {
	var p params
	return l.e.strings(ctx, "SELECT DISTINCT arrayJoin(arrayConcat(mapKeys(ResourceAttributes), mapKeys(SampleAttributes))) FROM "+
		l.table+" WHERE "+l.scopeWhere(&p, s), &p)
}

func (l *otelLayout) labelValues(ctx context.Context, s Scope, label string) ([]string, error) {
	var p params
	q := "SELECT DISTINCT " + otelLabel(&p, label) + " AS v FROM " + l.table + " WHERE " + l.scopeWhere(&p, s)
	return l.e.strings(ctx, "SELECT v FROM ("+q+") WHERE v != '' ORDER BY v LIMIT "+p.i64(maxLabelValues), &p)
}

// otelExecutablesSQL sums the exporter's rows per mapping file (a row
// counted once per file), with the latest time each was seen and the
// selection's total.
func (l *otelLayout) executablesSQL(p *params, r *Request) string {
	where, value := l.requestWhere(p, r, r.From.Unix())
	totalWhere, totalValue := l.requestWhere(p, r, r.From.Unix())
	return "SELECT m, sum(v), toInt64(max(t)), (SELECT sum(" + totalValue + ") FROM " + l.table + " WHERE " + totalWhere + ") FROM (" +
		"SELECT arrayJoin(arrayDistinct(arrayFilter(x -> x != '', MappingFileNames))) AS m, " + value + " AS v, toUnixTimestamp(Timestamp) AS t FROM " +
		l.table + " WHERE " + where + ") GROUP BY m"
}

// otelExeFramesSQL counts the distinct frames (function, file, address)
// of each mapping file and those the sender named, and lists the
// addresses of the unnamed frames of resolvable files.
func (l *otelLayout) exeFramesSQL(p *params, r *Request, resolvable []string) string {
	where, _ := l.requestWhere(p, r, r.From.Unix())
	unnamed := "f = '' AND fl = ''"
	addresses := "CAST([] AS Array(UInt64))"
	if len(resolvable) > 0 {
		addresses = "groupUniqArrayIf(a, " + unnamed + " AND has(" + p.add("Array(String)", stringArray(resolvable)) + ", basename(m)))"
	}
	return "SELECT m, toInt64(uniqExact((f, fl, a))), toInt64(uniqExactIf((f, fl, a), NOT (" + unnamed + "))), " + addresses + " FROM " + l.table +
		" ARRAY JOIN FunctionNames AS f, FileNames AS fl, MappingFileNames AS m, Addresses AS a WHERE " + where + " AND m != '' GROUP BY m"
}

func (l *otelLayout) executables(ctx context.Context, r *Request) (*executableSums, error) {
	files, err := l.resolvableFiles(ctx)
	if err != nil {
		return nil, err
	}
	out := &executableSums{byFile: true, stored: map[string]*executable{}}
	sums := map[string]*exeSum{}
	var p params
	rows, err := l.e.read(ctx, r, l.executablesSQL(&p, r), p.args)
	if err != nil {
		return nil, fmt.Errorf("sum samples per mapping file: %w", err)
	}
	defer closeRows(rows)
	for rows.Next() {
		s := &exeSum{}
		if err := rows.Scan(&s.key.file, &s.value, &s.lastSeen, &out.total); err != nil {
			return nil, err
		}
		s.file = s.key.file
		if x := files[path.Base(s.key.file)]; x != nil {
			s.key.buildID = x.buildID
			out.stored[x.buildID] = x
		}
		sums[s.key.file] = s
		out.exes = append(out.exes, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var q params
	frows, err := l.e.read(ctx, r, l.exeFramesSQL(&q, r, names), q.args)
	if err != nil {
		return nil, fmt.Errorf("count frames per mapping file: %w", err)
	}
	defer closeRows(frows)
	natives := map[uint64]nativeFrame{}
	var owners []*exeSum
	for frows.Next() {
		var file string
		var frames, named int64
		var addresses []uint64
		if err := frows.Scan(&file, &frames, &named, &addresses); err != nil {
			return nil, err
		}
		s := sums[file]
		if s == nil {
			continue
		}
		s.frames, s.named = frames, named
		if x := files[path.Base(file)]; x != nil {
			for _, a := range addresses {
				natives[uint64(len(owners))] = nativeFrame{buildID: x.buildID, address: a}
				owners = append(owners, s)
			}
		}
	}
	if err := frows.Err(); err != nil {
		return nil, err
	}
	if len(natives) > 0 {
		tables, err := l.e.tablesFor(ctx, out.stored)
		if err != nil {
			return nil, err
		}
		res := &resolution{exes: out.stored, tables: tables}
		for i, n := range natives {
			if t, _ := res.lookup(n); t != nil {
				owners[i].resolved++
			}
		}
	}
	return out, nil
}

func (l *otelLayout) spans(ctx context.Context, r *Request) ([]spanValue, int64, error) {
	var p params
	where, value := l.requestWhere(&p, r, r.From.Unix())
	source := "SELECT SpanId, TraceId, ServiceName, " + value + " AS Value FROM " + l.table + " WHERE " + where
	return scanSpans(ctx, l.e, r, spansSQL(&p, source, r.Limit), &p)
}
