package query

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

var update = flag.Bool("update", false, "rewrite golden files")

// planCase is a range planned and the segments it is read from.
type planCase struct {
	name     string
	from, to int64
	src      source
	align    int64
	want     []segment
}

func TestPlanReadsWholeHoursAndMinutesFromRollups(t *testing.T) {
	const h, m = 3600, 60
	base := int64(1_800_000_000) - int64(1_800_000_000)%h // an hour boundary
	tests := []planCase{
		{"under a minute: raw", base + 10, base + 50, bySeries, 1, []segment{seg(schema.Samples, base+10, base+50)}},
		{"ten minutes: minutes and raw edges", base + 10, base + 10*m, bySeries, 1, []segment{
			seg(schema.Samples, base+10, base+m), seg(schema.SamplesMinute, base+m, base+10*m),
		}},
		{"per-sample filter: raw", base, base + 24*h, bySample, 1, []segment{seg(schema.Samples, base, base+24*h)}},
		{"an hour, not aligned: minutes and raw edges", base + 10, base + h + 20, bySeries, 1, []segment{
			seg(schema.Samples, base+10, base+m), seg(schema.SamplesMinute, base+m, base+h), seg(schema.Samples, base+h, base+h+20),
		}},
		{"an aligned hour: the hourly rollup", base, base + h, bySeries, 1, []segment{seg(schema.SamplesHour, base, base+h)}},
		{"a day: hours, short edges", base - 5*m - 7, base + 24*h + 3*m + 9, bySeries, 1, []segment{
			seg(schema.Samples, base-5*m-7, base-5*m),
			seg(schema.SamplesMinute, base-5*m, base),
			seg(schema.SamplesHour, base, base+24*h),
			seg(schema.SamplesMinute, base+24*h, base+24*h+3*m),
			seg(schema.Samples, base+24*h+3*m, base+24*h+3*m+9),
		}},
		{"a day by service: the service rollups, raw edges", base - 50*m - 7, base + 24*h + 30*m + 9, byService, 1, []segment{
			seg(schema.Samples, base-50*m-7, base-50*m),
			seg(schema.ServiceMinute, base-50*m, base),
			seg(schema.ServiceHour, base, base+24*h),
			seg(schema.ServiceMinute, base+24*h, base+24*h+30*m),
			seg(schema.Samples, base+24*h+30*m, base+24*h+30*m+9),
		}},
		{"a day at a 15 s step: raw", base, base + 24*h, byService, 15, []segment{seg(schema.Samples, base, base+24*h)}},
		{"a day at a 1 min step: minutes", base, base + 24*h, bySeries, m, []segment{seg(schema.SamplesMinute, base, base+24*h)}},
		{"a day at a 1 min step by service", base, base + 24*h, byService, m, []segment{seg(schema.ServiceMinute, base, base+24*h)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan(tt.from, tt.to, tt.src, tt.align, false)
			require.Equal(t, tt.want, got)
			for i := 1; i < len(got); i++ {
				require.Equal(t, got[i-1].to, got[i].from, "segments are contiguous")
			}
		})
	}
}

func seg(table string, from, to int64) segment { return segment{table: table, from: from, to: to} }

// rawBeside is a raw segment beside a minute rollup's, reading in
// [rolledFrom, rolledTo) only the rows that rollup does not hold.
func rawBeside(from, to, rolledFrom, rolledTo int64) segment {
	return segment{table: schema.Samples, from: from, to: to, rolledFrom: rolledFrom, rolledTo: rolledTo}
}

// TestPlanReadsUnrolledRowsBesideMinutes: with the minute rollup mark
// (schema version 7) a range's whole minutes are read from the minute
// rollup and the raw rows it does not hold, in one raw read with the
// range's edges; hours as before.
func TestPlanReadsUnrolledRowsBesideMinutes(t *testing.T) {
	const h, m = 3600, 60
	base := int64(1_800_000_000) - int64(1_800_000_000)%h
	tests := []planCase{
		{"under a minute: raw", base + 10, base + 50, bySeries, 1, []segment{seg(schema.Samples, base+10, base+50)}},
		{"an aligned hour: the hourly rollup alone", base, base + h, bySeries, 1, []segment{seg(schema.SamplesHour, base, base+h)}},
		{"ten minutes: the edge with the unmarked rows, then minutes", base + 10, base + 10*m, bySeries, 1, []segment{
			rawBeside(base+10, base+10*m, base+m, base+10*m), seg(schema.SamplesMinute, base+m, base+10*m),
		}},
		{"a day by service", base - 50*m - 7, base + 24*h + 30*m + 9, byService, 1, []segment{
			rawBeside(base-50*m-7, base, base-50*m, base), seg(schema.ServiceMinute, base-50*m, base),
			seg(schema.ServiceHour, base, base+24*h),
			rawBeside(base+24*h, base+24*h+30*m+9, base+24*h, base+24*h+30*m), seg(schema.ServiceMinute, base+24*h, base+24*h+30*m),
		}},
		{"a day at a 1 min step", base, base + 24*h, bySeries, m, []segment{
			rawBeside(base, base+24*h, base, base+24*h), seg(schema.SamplesMinute, base, base+24*h),
		}},
		{"per-sample filter: raw, all of it", base, base + 24*h, bySample, 1, []segment{seg(schema.Samples, base, base+24*h)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, plan(tt.from, tt.to, tt.src, tt.align, true))
		})
	}
}

func TestFilterSource(t *testing.T) {
	tests := []struct {
		selector     string
		seriesGroups bool
		sampleGroups bool
		want         source
	}{
		{`{}`, false, false, byService},
		{`{service_name="checkout"}`, false, false, byService},
		{`{service_name=~"check.*"}`, false, false, byService},
		{`{service_name="checkout"}`, true, false, bySeries},
		{`{k8s_pod_name="p-1"}`, false, false, bySeries},
		{`{"deployment.environment.name"="prod"}`, false, false, bySeries},
		{`{thread_name="gc"}`, false, false, bySample},
		{`{service_name="checkout"}`, false, true, bySample},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v/%v", tt.selector, tt.seriesGroups, tt.sampleGroups), func(t *testing.T) {
			r, err := ParseRequest([]byte(`{"profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","labelSelector":`+strconv.Quote(tt.selector)+`}`),
				time.Unix(0, 0), time.Unix(3600, 0), time.Minute, Options{})
			require.NoError(t, err)
			var p params
			f := buildFilter(&p, schema.DefaultConfig(), "", r, map[string]bool{"thread.name": true})
			require.Equal(t, tt.want, f.source(tt.seriesGroups, tt.sampleGroups))
		})
	}
	var p params
	r, err := ParseRequest([]byte(`{"profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","spanSelector":["0123456789abcdef"]}`),
		time.Unix(0, 0), time.Unix(3600, 0), time.Minute, Options{})
	require.NoError(t, err)
	require.Equal(t, bySample, buildFilter(&p, schema.DefaultConfig(), "", r, nil).source(false, false), "span ids are per sample")
}

func TestGaugeSeriesReadTheRawTable(t *testing.T) {
	var p params
	f := buildFilter(&p, schema.DefaultConfig(), "", &Request{ProfileType: ProfileType{ID: "memory:inuse_space:bytes:space:bytes"}}, nil)
	require.Equal(t, byService, f.seriesSource(false, false, false), "a rate reads the service rollups")
	require.Equal(t, bySeries, f.seriesSource(true, false, false))
	for _, seriesGroups := range []bool{false, true} {
		require.Equal(t, bySample, f.seriesSource(seriesGroups, false, true), "the rollups lose the snapshot count")
	}
}

// render shows a statement and its parameters.
func render(q string, p *params) string {
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(q, " UNION ALL ", "\nUNION ALL "))
	b.WriteString("\n-- parameters\n")
	for _, a := range p.args {
		n := a.(driver.NamedValue) // params holds only named values
		fmt.Fprintf(&b, "-- %s = %q\n", n.Name, n.Value)
	}
	return b.String()
}

func requireGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o600))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./pkg/query -update to create it")
	require.Equal(t, string(want), got)
}

func TestGeneratedSQL(t *testing.T) {
	tables := schema.DefaultConfig()
	from := time.Date(2026, 11, 20, 9, 59, 30, 0, time.UTC)
	parse := func(q string, to time.Time) *Request {
		r, err := ParseRequest([]byte(q), from, to, time.Minute, Options{SpanPadding: time.Minute, MinStep: 15 * time.Second})
		require.NoError(t, err)
		return r
	}
	sampleKeys := map[string]bool{"thread.name": true}
	tests := []struct {
		name string
		sql  func(p *params) string
	}{
		{"flame_1h_selector.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\", k8s_pod_name=~\"web-.*\", thread_name!=\"gc\", \"deployment.environment\"=\"prod\"}"}`,
				from.Add(time.Hour))
			f := buildFilter(p, tables, "acme", r, sampleKeys)
			return sumsSQL(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, true))
		}},
		{"flame_24h_span.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","spanSelector":["00F067AA0BA902B7"],"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736"}`, from.Add(24*time.Hour))
			f := buildFilter(p, tables, "", r, nil)
			return sumsSQL(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, true))
		}},
		{"flame_24h_rollups.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\"}"}`, from.Add(24*time.Hour))
			f := buildFilter(p, tables, "", r, nil)
			return sumsSQL(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, true))
		}},
		{"series_groupby.sql", func(p *params) string {
			r := parse(`{"queryType":"metrics","profileTypeId":"`+cpu+`","groupBy":["service_name","k8s_pod_name","thread_name"]}`, from.Add(3*time.Hour))
			f := buildFilter(p, tables, "", r, sampleKeys)
			groups, cols, raw := groupExprs(p, r.GroupBy, sampleKeys)
			step := int64(r.Step / time.Second)
			return seriesSQL(p, tables, "", f, plan(floorTo(r.From.Unix(), step), ceilSecond(r.To), f.source(len(cols) > 0, raw), step, true), step, groups, cols, raw, false)
		}},
		{"series_gauge.sql", func(p *params) string {
			r := parse(`{"queryType":"metrics","profileTypeId":"memory:inuse_space:bytes:space:bytes","groupBy":["k8s_pod_name"]}`, from.Add(3*time.Hour))
			f := buildFilter(p, tables, "", r, nil)
			groups, cols, raw := groupExprs(p, r.GroupBy, nil)
			step := int64(r.Step / time.Second)
			return seriesSQL(p, tables, "", f, plan(floorTo(r.From.Unix(), step), ceilSecond(r.To), f.seriesSource(len(cols) > 0, raw, true), step, true), step, groups, cols, raw, true)
		}},
		{"flame_function_self.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\"}","function":"regexp.Compile","functionValue":"self"}`, from.Add(time.Hour))
			f := buildFilter(p, tables, "acme", r, nil)
			return sumsSQL(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, true))
		}},
		{"flame_groupby_process.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","labelSelector":"{host_name=\"node-1\"}","groupBy":["process_executable_name","thread_name"]}`,
				from.Add(time.Hour))
			f := buildFilter(p, tables, "acme", r, sampleKeys)
			groups, cols, raw := groupExprs(p, flameGroupBy(r), sampleKeys)
			return groupedSumsSQL(p, tables, "acme", f, plan(r.From.Unix(), ceilSecond(r.To), f.source(len(cols) > 0, raw), 1, true), groups, cols, raw)
		}},
		{"flame_function_marked_self_hidden.sql", func(p *params) string {
			// With kernel frames hidden, self is the leaf the flame graph shows (selfInGo): the SQL keeps the
			// stacks through the function, a kernel frame of that name.
			r := parse(`{"profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\"}","function":"do_syscall_64 [kernel]","functionValue":"self","hideFrames":["kernel"]}`,
				from.Add(time.Hour))
			f := buildFilter(p, tables, "acme", stackRequest(r), nil)
			return sumsSQL(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, true))
		}},
		{"flame_function_collapsed.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","function":"[native]","collapseFrames":["native"]}`, from.Add(time.Hour))
			f := buildFilter(p, tables, "acme", stackRequest(r), nil)
			return sumsSQL(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, true))
		}},
		{"series_function_ratio.sql", func(p *params) string {
			r := parse(`{"queryType":"metrics","profileTypeId":"`+cpu+`","groupBy":["k8s_pod_name"],"function":"regexp.Compile","ratio":true}`, from.Add(3*time.Hour))
			f := buildFilter(p, tables, "acme", r, nil)
			groups, cols, raw := groupExprs(p, r.GroupBy, nil)
			step := int64(r.Step / time.Second)
			return seriesSQL(p, tables, "acme", f, plan(floorTo(r.From.Unix(), step), ceilSecond(r.To), f.source(len(cols) > 0, raw), step, true), step, groups, cols, raw, false)
		}},
		{"series_gauge_function_ratio.sql", func(p *params) string {
			r := parse(`{"queryType":"metrics","profileTypeId":"memory:inuse_space:bytes:space:bytes","function":"bytes.growSlice","ratio":true}`, from.Add(3*time.Hour))
			f := buildFilter(p, tables, "", r, nil)
			step := int64(r.Step / time.Second)
			return seriesSQL(p, tables, "", f, plan(floorTo(r.From.Unix(), step), ceilSecond(r.To), f.seriesSource(false, false, true), step, true), step, nil, nil, false, true)
		}},
		{"spans_trace.sql", func(p *params) string {
			r := parse(`{"queryType":"spans","profileTypeId":"`+cpu+`","traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","limit":10}`, from.Add(time.Hour))
			r.scopeToTrace(&traceScope{table: "`otel`.`otel_traces`", traceID: r.TraceID, from: from.Unix(), to: from.Unix() + 3},
				from.Add(time.Second).UnixNano(), from.Add(2500*time.Millisecond).UnixNano())
			f := buildFilter(p, tables, "", r, nil)
			return spansSQL(p, union(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), bySample, 1, true), "SpanId, TraceId, ServiceName, Value"), r.Limit)
		}},
		{"profiles.sql", func(p *params) string {
			r := parse(`{"queryType":"profiles","profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\",k8s_pod_name=~\"api-.*\"}","limit":20}`,
				from.Add(time.Hour))
			return profilesSQL(p, tables, "acme", r)
		}},
		{"profiles_period_series.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","seriesId":"18446744073709551615","intervalStart":"`+strconv.FormatInt(from.Add(10*time.Minute).UnixMilli(), 10)+
				`","intervalSeconds":"5"}`, from.Add(time.Hour))
			return periodSQL(p, tables, "acme", r)
		}},
		{"flame_series.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\"}","seriesId":"42"}`, from.Add(time.Hour))
			f := buildFilter(p, tables, "acme", r, nil)
			return sumsSQL(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, true))
		}},
		{"frame_details.sql", func(p *params) string {
			return frameDetailsSQL(p, tables, "", &filter{services: []string{"checkout"}}, []uint64{3, 1, 2}, true)
		}},
		{"stacks.sql", func(p *params) string {
			return stacksSQL(p, tables, "", &filter{services: []string{"checkout"}}, []uint64{3, 1, 2})
		}},
		{"frames.sql", func(p *params) string {
			return framesSQL(p, tables, "", &filter{services: []string{"checkout"}}, []uint64{3, 1, 2}, true)
		}},
		{"frames_of_stacks.sql", func(p *params) string {
			return framesOfStacksSQL(p, tables, "acme", &filter{services: []string{"checkout"}}, []uint64{3, 1, 2}, true)
		}},
		{"frames_v2.sql", func(p *params) string {
			return framesSQL(p, tables, "", &filter{services: []string{"checkout"}}, []uint64{3, 1, 2}, false)
		}},
		{"flame_executable.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\"}","buildId":"3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8","mappingFile":"/usr/lib/libc.so.6"}`,
				from.Add(time.Hour))
			f := buildFilter(p, tables, "acme", r, nil)
			return sumsSQL(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, true))
		}},
		{"executables_sums.sql", func(p *params) string {
			r := parse(`{"queryType":"executables","profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\"}"}`, from.Add(time.Hour))
			f := buildFilter(p, tables, "acme", r, nil)
			return executableSumsSQL(p, tables, f, plan(r.From.Unix(), ceilSecond(r.To), f.source(false, false), 1, true))
		}},
		{"executables_frames.sql", func(p *params) string {
			return exeFramesSQL(p, tables, "acme", &filter{services: []string{"checkout"}}, []uint64{3, 1, 2}, true)
		}},
		{"executables_store.sql", func(p *params) string {
			return executablesSQL(p, tables, "acme", []string{"3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8", "abc/def"})
		}},
		{"symbols_ranges.sql", func(p *params) string {
			return rangesSQL(p, tables, "acme", []string{"3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8", "ffee"}, []int64{1764063263123, 1764063264000})
		}},
		{"otel_stacks_resolvable.sql", func(p *params) string {
			r := parse(`{"profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\"}","granularity":"line"}`, from.Add(time.Hour))
			l := &otelLayout{table: "`otel`.`otel_profiles`"}
			return l.stacksSQL(p, r, map[string]*executable{"libc.so.6": {buildID: "3b2b"}, "it's.so": {buildID: "ffee"}})
		}},
		{"otel_stacks_grouped.sql", func(p *params) string {
			r := parse(`{"queryType":"both","profileTypeId":"`+cpu+`","groupBy":["process_executable_name","k8s_pod_name"]}`, from.Add(time.Hour))
			l := &otelLayout{table: "`otel`.`otel_profiles`"}
			return l.stacksSQL(p, r, nil)
		}},
		{"otel_executables.sql", func(p *params) string {
			r := parse(`{"queryType":"executables","profileTypeId":"`+cpu+`","labelSelector":"{service_name=\"checkout\"}"}`, from.Add(time.Hour))
			l := &otelLayout{table: "`otel`.`otel_profiles`"}
			return l.executablesSQL(p, r) + "\n" + l.exeFramesSQL(p, r, []string{"libc.so.6"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p params
			q := tt.sql(&p)
			requireGolden(t, tt.name, render(q, &p))
		})
	}
}

const cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

func TestUserTextNeverReachesTheSQL(t *testing.T) {
	tables := schema.DefaultConfig()
	evil := []string{`x' OR 1=1 --`, `\'; DROP TABLE t; --`, "a}{b", `{evil:String}`, "`otel`.`secrets`", `") OR ("1"="1`}
	for _, e := range evil {
		var p params
		r := &Request{
			ProfileType: ProfileType{ID: e}, GroupBy: []string{e}, SpanIDs: []string{e}, TraceID: e, Function: e, BuildID: e, MappingFile: e,
			traceSpans: &traceScope{table: "`otel`.`otel_traces`", traceID: e},
		}
		r.Matchers = mustParse(t, `{service_name=`+quote(e)+`, `+quote(e)+`=`+quote(e)+`, k8s_pod_name!=`+quote(e)+`}`)
		f := buildFilter(&p, tables, e, r, map[string]bool{e: true})
		groups, cols, raw := groupExprs(&p, r.GroupBy, map[string]bool{e: true})
		q := sumsSQL(&p, tables, f, plan(0, 100_000, byService, 1, true)) + stacksSQL(&p, tables, e, f, nil) + framesSQL(&p, tables, e, f, nil, true) + framesOfStacksSQL(&p, tables, e, f, []uint64{1}, true) +
			seriesSQL(&p, tables, e, f, plan(0, 100_000, f.source(len(cols) > 0, raw), 60, true), 60, groups, cols, raw, false) +
			seriesSQL(&p, tables, e, f, plan(0, 100_000, bySample, 60, true), 60, groups, cols, raw, true) +
			spansSQL(&p, union(&p, tables, f, plan(0, 100_000, bySample, 1, true), "SpanId, TraceId, ServiceName, Value"), 10) +
			executableSumsSQL(&p, tables, f, plan(0, 100_000, byService, 1, true)) + exeFramesSQL(&p, tables, e, f, nil, true) +
			executablesSQL(&p, tables, e, nil) + rangesSQL(&p, tables, e, nil, nil)
		otel := &otelLayout{table: "`otel`.`otel_profiles`"}
		q += otel.stacksSQL(&p, r, map[string]*executable{e: {buildID: e}}) + otel.executablesSQL(&p, r) + otel.exeFramesSQL(&p, r, []string{e})
		q += groupedSumsSQL(&p, tables, e, f, plan(0, 100_000, bySample, 1, true), groups, cols, raw) +
			functionLabelCond(&p, e+" [kernel]") + functionLabelCond(&p, "[native]")
		r.Type = TypeProfile
		q += otel.stacksSQL(&p, r, nil)
		require.NotContains(t, q, e, "user text travels as parameters only")
		r.Ratio = true
		f = buildFilter(&p, tables, e, r, nil)
		q = seriesSQL(&p, tables, e, f, plan(0, 100_000, bySample, 60, true), 60, groups, cols, raw, true) +
			otelFunctionCond(&p, r)
		require.NotContains(t, q, e, "user text travels as parameters only")
	}
}
