package writer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// insertTimeout bounds one insert statement.
const insertTimeout = 60 * time.Second

// write inserts the rows of a group of requests: new series, frames,
// stacks and catalog entries first, samples last, so that no sample row
// refers to metadata that is not committed. Ids enter the cache only once
// written.
// ctx carries the write's span, if any (its deadline is insertTimeout's).
func (w *Writer) write(ctx context.Context, ps []*pending) error {
	ctx, cancel := context.WithTimeout(ctx, insertTimeout)
	defer cancel()
	day := uint64(w.now().Unix() / 86400)
	dayNum := int32(day)
	meta := w.newMetadata(ps, dayNum)
	cats := w.newCatalogs(ps)
	steps := []*rowSet{
		seriesRows(meta.series, day), frameRows(meta.frames, day), stackRows(meta.stacks, day),
		catalogRows(cats.series), labelRows(cats.labels), profileRows(ps),
	}
	for _, rs := range steps {
		if rs.rows == 0 {
			continue
		}
		if err := w.insertRows(ctx, rs); err != nil {
			return fmt.Errorf("insert into %s: %w", w.tables.Name(rs.table), err)
		}
		w.metrics.written.WithLabelValues(rs.table).Add(float64(rs.rows))
	}
	meta.remember(w.cache, dayNum)
	cats.rememberAll(w.cache)
	rows, err := w.insertSamples(ctx, ps)
	if err != nil {
		return fmt.Errorf("insert into %s: %w", w.tables.Name(schema.Samples), err)
	}
	w.metrics.written.WithLabelValues(schema.Samples).Add(float64(rows))
	return nil
}

// metadata are the series, frames and stacks a write must add.
type metadata struct {
	series []*model.Series
	frames []serviceFrame
	stacks []serviceStack
	keys   []uint64
}

type serviceFrame struct {
	svc   model.ServiceKey
	frame *model.Frame
}

type serviceStack struct {
	svc   model.ServiceKey
	stack *model.Stack
}

// newMetadata collects the metadata rows not yet written today.
func (w *Writer) newMetadata(ps []*pending, day int32) *metadata {
	m := &metadata{}
	seen := map[uint64]bool{}
	add := func(key uint64) bool {
		if seen[key] || w.cache.has(key, day) {
			return false
		}
		seen[key] = true
		m.keys = append(m.keys, key)
		return true
	}
	for _, p := range ps {
		for _, s := range p.batch.Series {
			if add(cacheKey(kindSeries, s.Tenant, s.Service, s.ID)) {
				m.series = append(m.series, s)
			}
		}
		for svc, sym := range p.batch.Symbols {
			for i := range sym.Stacks {
				st := &sym.Stacks[i]
				if add(cacheKey(kindStack, svc.Tenant, svc.Service, st.ID)) {
					m.stacks = append(m.stacks, serviceStack{svc: svc, stack: st})
				}
			}
			for _, f := range sym.Frames {
				if add(cacheKey(kindFrame, svc.Tenant, svc.Service, f.ID)) {
					m.frames = append(m.frames, serviceFrame{svc: svc, frame: f})
				}
			}
		}
	}
	return m
}

func (m *metadata) remember(c *symbolCache, day int32) {
	for _, k := range m.keys {
		c.put(k, day)
	}
}

func seriesRows(series []*model.Series, day uint64) *rowSet {
	return &rowSet{table: schema.Series, rows: len(series), cols: []column{
		{name: "TenantId", kind: colLC, str: func(i int) string { return series[i].Tenant }},
		{name: "ServiceName", kind: colLC, str: func(i int) string { return series[i].Service }},
		{name: "SeriesId", kind: colUInt64, num: func(i int) uint64 { return series[i].ID }},
		{name: "ResourceAttributes", kind: colLCStringMap, kvs: func(i int) []model.KV { return model.SortedKVs(series[i].Attributes) }},
		{name: "LastSeen", kind: colDate, num: func(int) uint64 { return day }},
	}}
}

func frameRows(frames []serviceFrame, day uint64) *rowSet {
	f := func(i int) *model.Frame { return frames[i].frame }
	return &rowSet{table: schema.Frames, rows: len(frames), cols: []column{
		{name: "TenantId", kind: colLC, str: func(i int) string { return frames[i].svc.Tenant }},
		{name: "ServiceName", kind: colLC, str: func(i int) string { return frames[i].svc.Service }},
		{name: "FrameId", kind: colUInt64, num: func(i int) uint64 { return f(i).ID }},
		{name: "FunctionName", kind: colString, str: func(i int) string { return f(i).FunctionName }},
		{name: "SystemName", kind: colString, str: func(i int) string { return f(i).SystemName }},
		{name: "FileName", kind: colString, str: func(i int) string { return f(i).FileName }},
		{name: "Line", kind: colUInt32, num: func(i int) uint64 { return uint64(f(i).Line) }},
		{name: "Column", kind: colUInt32, num: func(i int) uint64 { return uint64(f(i).Column) }},
		{name: "Inlined", kind: colBool, num: func(i int) uint64 { return boolNum(f(i).Inlined) }},
		{name: "MappingFile", kind: colLC, str: func(i int) string { return f(i).MappingFile }},
		{name: "BuildId", kind: colLC, str: func(i int) string { return f(i).BuildID }},
		{name: "Address", kind: colUInt64, num: func(i int) uint64 { return f(i).Address }},
		{name: "MappingStart", kind: colUInt64, num: func(i int) uint64 { return f(i).MappingStart }},
		{name: "MappingOffset", kind: colUInt64, num: func(i int) uint64 { return f(i).MappingOffset }},
		{name: "FrameType", kind: colLC, str: func(i int) string { return f(i).FrameType }},
		{name: "LastSeen", kind: colDate, num: func(int) uint64 { return day }},
	}}
}

func stackRows(stacks []serviceStack, day uint64) *rowSet {
	return &rowSet{table: schema.Stacks, rows: len(stacks), cols: []column{
		{name: "TenantId", kind: colLC, str: func(i int) string { return stacks[i].svc.Tenant }},
		{name: "ServiceName", kind: colLC, str: func(i int) string { return stacks[i].svc.Service }},
		{name: "StackId", kind: colUInt64, num: func(i int) uint64 { return stacks[i].stack.ID }},
		{name: "FrameIds", kind: colUInt64Array, ids: func(i int) []uint64 { return stacks[i].stack.FrameIDs }},
		{name: "LastSeen", kind: colDate, num: func(int) uint64 { return day }},
	}}
}

// profileRows are the profiles of a group of requests. They go in before
// the samples, like the catalogs; a retried write inserts them again, and
// the table's ReplacingMergeTree keeps one row per profile.
func profileRows(ps []*pending) *rowSet {
	var profiles []*model.Profile
	for _, p := range ps {
		for i := range p.batch.Profiles {
			profiles = append(profiles, &p.batch.Profiles[i])
		}
	}
	p := func(i int) *model.Profile { return profiles[i] }
	return &rowSet{table: schema.Profiles, rows: len(profiles), cols: []column{
		{name: "Timestamp", kind: colDateTime64, num: func(i int) uint64 { return p(i).TimeNanos }},
		{name: "TenantId", kind: colLC, str: func(i int) string { return p(i).Series.Tenant }},
		{name: "ServiceName", kind: colLC, str: func(i int) string { return p(i).Series.Service }},
		{name: "ProfileType", kind: colLC, str: func(i int) string { return p(i).ProfileType }},
		{name: "SeriesId", kind: colUInt64, num: func(i int) uint64 { return p(i).Series.ID }},
		{name: "ProfileId", kind: colString, str: func(i int) string { return p(i).ProfileID }},
		{name: "DurationNanos", kind: colUInt64, num: func(i int) uint64 { return p(i).DurationNanos }},
		{name: "Period", kind: colInt64, num: func(i int) uint64 { return uint64(p(i).Period) }},              //nolint:gosec // G115: an Int64's bits
		{name: "FirstSample", kind: colDateTime, num: func(i int) uint64 { return uint64(p(i).FirstSecond) }}, //nolint:gosec // G115: after 1970
		{name: "LastSample", kind: colDateTime, num: func(i int) uint64 { return uint64(p(i).LastSecond) }},   //nolint:gosec // G115: after 1970
		{name: "Events", kind: colUInt64, num: func(i int) uint64 { return uint64(p(i).Events) }},             //nolint:gosec // G115: a count
		{name: "Total", kind: colInt64, num: func(i int) uint64 { return uint64(p(i).Total) }},                //nolint:gosec // G115: an Int64's bits
	}}
}

func boolNum(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// sampleColumns are the samples table's columns, in insert order.
// Resource attributes are not among them: they live once per series in
// profile_series.
const sampleColumns = "Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value, TraceId, SpanId, SampleAttributes, " +
	schema.MinuteRollupColumn

var sampleColumnNames = strings.Split(sampleColumns, ", ")

// insertSamples sends the samples of every request: those of requests
// without a deduplication token of their own as one insert, each other
// request's as an insert of its own (see model.Batch.DedupToken). Each
// insert is a Native block encoded here when ClickHouse is reached over
// HTTP, else clickhouse-go's batch, and carries a deduplication token, so
// that a retried insert that had in fact committed is a no-op.
func (w *Writer) insertSamples(ctx context.Context, ps []*pending) (int, error) {
	n := 0
	for _, g := range sampleGroups(ps) {
		rows, err := w.insertSampleGroup(ctx, g)
		if err != nil {
			return n, err
		}
		n += rows
	}
	return n, nil
}

// sampleGroups splits a write's requests into the groups that get an
// insert each: the requests without a token of their own together, in
// their order, then every request with one alone.
func sampleGroups(ps []*pending) [][]*pending {
	var shared []*pending
	var groups [][]*pending
	for _, p := range ps {
		if p.batch.DedupToken != "" {
			groups = append(groups, []*pending{p})
		} else {
			shared = append(shared, p)
		}
	}
	if len(shared) > 0 {
		groups = append([][]*pending{shared}, groups...)
	}
	return groups
}

// insertSampleGroup sends one group's samples as one insert.
func (w *Writer) insertSampleGroup(ctx context.Context, ps []*pending) (int, error) {
	n := 0
	for _, p := range ps {
		n += len(p.batch.Samples)
	}
	if n == 0 {
		return 0, nil
	}
	settings := map[string]string{
		"insert_deduplication_token": dedupToken(ps),
		// The rollups' views deduplicate the same insert too, where their
		// tables keep a deduplication window.
		"deduplicate_blocks_in_dependent_materialized_views": "1",
		// The rollup views group the inserted block by their whole sort
		// key, so merging equal keys of the block again as it is written
		// finds nothing to merge; skipping it makes the sample insert
		// 6-8% faster (BenchmarkInsertSamples). Queries sum rollup rows
		// across parts in any case.
		"optimize_on_insert": "0",
	}
	insert := "INSERT INTO " + w.tables.Qualified(schema.Samples) + " (" + sampleColumns + ")"
	marks := minuteRollupMarks(ps, w.cfg.MinuteRollupMinMerge)
	if w.native != nil {
		return n, w.native.Insert(ctx, insert, settings, encodeSamples(ps, marks))
	}
	return n, w.batchSamples(ctx, insert, settings, ps, marks)
}

// sampleWireTypes are the types clickhouse-go sends the samples as.
// LowCardinality columns go as plain String (the server converts them):
// the client's LowCardinality encoder works row by row through reflection
// and costs more than the server-side conversion. Declaring the types also
// saves the DESCRIBE round trip before every insert.
var sampleWireTypes = func() []clickhouse.ColumnNameAndType {
	types := []string{
		"DateTime", "String", "String", "String", "UInt64", "UInt64", "Int64", "String", "String", "Map(String, String)", "Bool",
	}
	out := make([]clickhouse.ColumnNameAndType, len(sampleColumnNames))
	for i, n := range sampleColumnNames {
		out[i] = clickhouse.ColumnNameAndType{Name: n, Type: types[i]}
	}
	return out
}()

// batchSamples sends the samples through clickhouse-go, column by column
// (the path for the native protocol).
func (w *Writer) batchSamples(ctx context.Context, insert string, settings map[string]string, ps []*pending, marks []bool) error {
	chSettings := clickhouse.Settings{}
	for k, v := range settings {
		chSettings[k] = v
	}
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(chSettings), clickhouse.WithColumnNamesAndTypes(sampleWireTypes))
	b, err := w.conn.PrepareBatch(ctx, insert)
	if err != nil {
		return err
	}
	cols := newSampleColumns(len(marks))
	cols.marks = marks
	eachSample(ps, cols.add)
	for i, col := range cols.all() {
		if err := b.Column(i).Append(col); err != nil {
			_ = b.Abort()
			return fmt.Errorf("column %s: %w", sampleColumnNames[i], err)
		}
	}
	return b.Send()
}

// dedupToken identifies a group of requests across retries: a request's
// own token when it is alone with one, else a random token of the group.
func dedupToken(ps []*pending) string {
	if len(ps) == 0 {
		return ""
	}
	if len(ps) == 1 && ps[0].batch.DedupToken != "" {
		return ps[0].batch.DedupToken
	}
	// The first pending of a group is unique to it and stays first across
	// retries unless it expires, in which case the content changes too.
	p := ps[0]
	if p.token == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		p.token = hex.EncodeToString(b[:])
	}
	return fmt.Sprintf("%s-%d", p.token, len(ps))
}

// sampleColumnData holds the samples table's columns for clickhouse-go.
type sampleColumnData struct {
	ts     []int64
	stack  []uint64
	series []uint64
	value  []int64
	trace  []string
	span   []string
	attrs  []map[string]string
	marks  []bool
	// lc holds TenantId, ServiceName and ProfileType.
	lc [lcScalarFields][]string
}

func newSampleColumns(n int) *sampleColumnData {
	c := &sampleColumnData{
		ts: make([]int64, 0, n), stack: make([]uint64, 0, n), series: make([]uint64, 0, n), value: make([]int64, 0, n),
		trace: make([]string, 0, n), span: make([]string, 0, n), attrs: make([]map[string]string, 0, n),
	}
	for i := range c.lc {
		c.lc[i] = make([]string, 0, n)
	}
	return c
}

func (c *sampleColumnData) add(s *model.Sample) {
	m := s.Meta
	attrs := model.KVMap(s.Attributes)
	c.ts = append(c.ts, s.Timestamp)
	c.stack = append(c.stack, s.StackID)
	c.series = append(c.series, m.Series.ID)
	c.value = append(c.value, s.Value)
	c.trace = append(c.trace, m.TraceID)
	c.span = append(c.span, m.SpanID)
	c.attrs = append(c.attrs, attrs)
	for i, v := range scalarValues(m) {
		c.lc[i] = append(c.lc[i], v)
	}
}

// all returns the columns in sampleColumns order.
func (c *sampleColumnData) all() []any {
	return []any{c.ts, c.lc[0], c.lc[1], c.lc[2], c.stack, c.series, c.value, c.trace, c.span, c.attrs, c.marks}
}
