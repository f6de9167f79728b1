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
func (w *Writer) write(ps []*pending) error {
	ctx, cancel := context.WithTimeout(context.Background(), insertTimeout)
	defer cancel()
	day := w.now().UTC().Truncate(24 * time.Hour)
	dayNum := int32(day.Unix() / 86400) //nolint:gosec // G115: days since 1970 fit
	meta := w.newMetadata(ps, dayNum)
	cats := w.newCatalogs(ps)
	steps := []struct {
		table string
		rows  int
		send  func(context.Context) error
	}{
		{schema.Series, len(meta.series), func(ctx context.Context) error { return w.insertSeries(ctx, meta.series, day) }},
		{schema.Frames, len(meta.frames), func(ctx context.Context) error { return w.insertFrames(ctx, meta.frames, day) }},
		{schema.Stacks, len(meta.stacks), func(ctx context.Context) error { return w.insertStacks(ctx, meta.stacks, day) }},
		{schema.Catalog, len(cats.series), func(ctx context.Context) error { return w.insertCatalog(ctx, cats.series) }},
		{schema.SampleLabels, len(cats.labels), func(ctx context.Context) error { return w.insertLabels(ctx, cats.labels) }},
	}
	for _, st := range steps {
		if st.rows == 0 {
			continue
		}
		if err := st.send(ctx); err != nil {
			return fmt.Errorf("insert into %s: %w", w.tables.Name(st.table), err)
		}
		w.metrics.written.WithLabelValues(st.table).Add(float64(st.rows))
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
			for id, st := range sym.Stacks {
				if add(cacheKey(kindStack, svc.Tenant, svc.Service, id)) {
					m.stacks = append(m.stacks, serviceStack{svc: svc, stack: st})
				}
			}
			for id, f := range sym.Frames {
				if add(cacheKey(kindFrame, svc.Tenant, svc.Service, id)) {
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

func (w *Writer) prepare(ctx context.Context, table, columns string) (batchSender, error) {
	b, err := w.conn.PrepareBatch(ctx, "INSERT INTO "+w.tables.Qualified(table)+" ("+columns+")")
	if err != nil {
		return nil, err
	}
	return b, nil
}

// batchSender is the part of a clickhouse-go batch the writer uses.
type batchSender interface {
	Append(v ...any) error
	Send() error
	Abort() error
}

func (w *Writer) insertSeries(ctx context.Context, series []*model.Series, day time.Time) error {
	b, err := w.prepare(ctx, schema.Series, "TenantId, ServiceName, SeriesId, ResourceAttributes, LastSeen")
	if err != nil {
		return err
	}
	for _, s := range series {
		if err := b.Append(s.Tenant, s.Service, s.ID, s.Attributes, day); err != nil {
			_ = b.Abort()
			return err
		}
	}
	return b.Send()
}

func (w *Writer) insertFrames(ctx context.Context, frames []serviceFrame, day time.Time) error {
	b, err := w.prepare(ctx, schema.Frames, "TenantId, ServiceName, FrameId, FunctionName, SystemName, FileName, Line, Column, "+
		"Inlined, MappingFile, BuildId, Address, FrameType, LastSeen")
	if err != nil {
		return err
	}
	for _, sf := range frames {
		f := sf.frame
		if err := b.Append(sf.svc.Tenant, sf.svc.Service, f.ID, f.FunctionName, f.SystemName, f.FileName, f.Line, f.Column,
			f.Inlined, f.MappingFile, f.BuildID, f.Address, f.FrameType, day); err != nil {
			_ = b.Abort()
			return err
		}
	}
	return b.Send()
}

func (w *Writer) insertStacks(ctx context.Context, stacks []serviceStack, day time.Time) error {
	b, err := w.prepare(ctx, schema.Stacks, "TenantId, ServiceName, StackId, FrameIds, LastSeen")
	if err != nil {
		return err
	}
	for _, ss := range stacks {
		if err := b.Append(ss.svc.Tenant, ss.svc.Service, ss.stack.ID, ss.stack.FrameIDs, day); err != nil {
			_ = b.Abort()
			return err
		}
	}
	return b.Send()
}

// sampleColumns are the samples table's columns, in insert order.
const sampleColumns = "Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value, TraceId, SpanId, SampleAttributes, " +
	"ServiceNamespace, ServiceInstanceId, K8sClusterName, K8sNamespaceName, K8sPodName, K8sNodeName, K8sContainerName"

var sampleColumnNames = strings.Split(sampleColumns, ", ")

// insertSamples sends the samples of every request as one insert: a
// Native block encoded here when ClickHouse is reached over HTTP, else
// clickhouse-go's batch. A deduplication token makes a retried insert that
// had in fact committed a no-op.
func (w *Writer) insertSamples(ctx context.Context, ps []*pending) (int, error) {
	n := 0
	for _, p := range ps {
		n += len(p.batch.Samples)
	}
	if n == 0 {
		return 0, nil
	}
	settings := map[string]string{"insert_deduplication_token": dedupToken(ps)}
	insert := "INSERT INTO " + w.tables.Qualified(schema.Samples) + " (" + sampleColumns + ")"
	if w.native != nil {
		return n, w.native.Insert(ctx, insert, settings, encodeSamples(ps))
	}
	return n, w.batchSamples(ctx, insert, settings, ps, n)
}

// sampleWireTypes are the types clickhouse-go sends the samples as.
// LowCardinality columns go as plain String (the server converts them):
// the client's LowCardinality encoder works row by row through reflection
// and costs more than the server-side conversion. Declaring the types also
// saves the DESCRIBE round trip before every insert.
var sampleWireTypes = func() []clickhouse.ColumnNameAndType {
	types := []string{
		"DateTime", "String", "String", "String", "UInt64", "UInt64", "Int64", "String", "String", "Map(String, String)",
		"String", "String", "String", "String", "String", "String", "String",
	}
	out := make([]clickhouse.ColumnNameAndType, len(sampleColumnNames))
	for i, n := range sampleColumnNames {
		out[i] = clickhouse.ColumnNameAndType{Name: n, Type: types[i]}
	}
	return out
}()

// batchSamples sends the samples through clickhouse-go, column by column
// (the path for the native protocol).
func (w *Writer) batchSamples(ctx context.Context, insert string, settings map[string]string, ps []*pending, n int) error {
	chSettings := clickhouse.Settings{}
	for k, v := range settings {
		chSettings[k] = v
	}
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(chSettings), clickhouse.WithColumnNamesAndTypes(sampleWireTypes))
	b, err := w.conn.PrepareBatch(ctx, insert)
	if err != nil {
		return err
	}
	cols := newSampleColumns(n)
	for _, p := range ps {
		for i := range p.batch.Samples {
			cols.add(&p.batch.Samples[i])
		}
	}
	for i, col := range cols.all() {
		if err := b.Column(i).Append(col); err != nil {
			_ = b.Abort()
			return fmt.Errorf("column %s: %w", sampleColumnNames[i], err)
		}
	}
	return b.Send()
}

// dedupToken identifies a group of requests across retries.
func dedupToken(ps []*pending) string {
	if len(ps) == 0 {
		return ""
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
	// lc holds TenantId, ServiceName, ProfileType and the label columns.
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
	out := []any{c.ts, c.lc[0], c.lc[1], c.lc[2], c.stack, c.series, c.value, c.trace, c.span, c.attrs}
	for _, l := range c.lc[3:] {
		out = append(out, l)
	}
	return out
}
