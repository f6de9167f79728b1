package query

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

// DefaultTracesTable is the OpenTelemetry Collector ClickHouse exporter's
// spans table; its trace id lookup table is named with traceLookupSuffix
// appended, as the exporter names it.
const DefaultTracesTable = "otel_traces"

// traceLookupSuffix names the exporter's trace id lookup table (TraceId,
// Start = min(Timestamp), End = max(Timestamp), whole seconds) after its
// spans table.
const traceLookupSuffix = "_trace_id_ts"

// ErrNoTracesTable is returned by a traces query when the spans table does
// not exist: the datasource's traces database and table point nowhere.
var ErrNoTracesTable = errors.New("the traces table does not exist")

// tracesTables locates the exporter's spans table and its trace id lookup
// table, and says which of them exist.
type tracesTables struct {
	database, table     string
	spans, lookup       string // qualified
	hasSpans, hasLookup bool
}

// tracesTables checks, in system.tables, which of the spans and lookup
// tables exist (once per query that reads them: nothing is cached).
func (e *Engine) tracesTables(ctx context.Context) (*tracesTables, error) {
	db, table := e.TracesDatabase, e.TracesTable
	if db == "" {
		db = e.Tables.Database
	}
	if table == "" {
		table = DefaultTracesTable
	}
	lookup := table + traceLookupSuffix
	t := &tracesTables{
		database: db, table: table,
		spans:  schema.QuoteIdentifier(db) + "." + schema.QuoteIdentifier(table),
		lookup: schema.QuoteIdentifier(db) + "." + schema.QuoteIdentifier(lookup),
	}
	var p params
	names, err := e.strings(ctx, "SELECT name FROM system.tables WHERE database = "+p.str(db)+
		" AND name IN ("+strList(&p, []string{table, lookup})+")", &p)
	if err != nil {
		return nil, fmt.Errorf("look up the traces tables: %w", err)
	}
	for _, n := range names {
		t.hasSpans = t.hasSpans || n == table
		t.hasLookup = t.hasLookup || n == lookup
	}
	return t, nil
}

// traceScope is a trace's stored spans: those of the trace id in the
// spans table that started in [from, to) (Unix seconds).
type traceScope struct {
	table    string // qualified
	traceID  string
	from, to int64
}

// cond keeps the samples of the trace's stored spans. GLOBAL: the spans
// are read once, where the query runs, even when the samples table is
// distributed.
func (s *traceScope) cond(p *params) string {
	return "SpanId GLOBAL IN (SELECT SpanId FROM " + s.table + " WHERE TraceId = " + p.str(s.traceID) +
		" AND " + nanoTimeRange(p, s.from, s.to) + ")"
}

// traceWindow is the time range, in Unix seconds [from, to), in which
// the trace's spans started: the lookup table's Start and End when it
// knows the trace, else the request's range.
func (e *Engine) traceWindow(ctx context.Context, t *tracesTables, r *Request) (from, to int64, err error) {
	from, to = r.From.Unix(), ceilSecond(r.To)
	if !t.hasLookup {
		return from, to, nil
	}
	var p params
	q := "SELECT count(), toInt64(toUnixTimestamp(min(Start))), toInt64(toUnixTimestamp(max(End))) FROM " + t.lookup +
		" WHERE TraceId = " + p.str(r.TraceID)
	var n uint64
	var start, end int64
	if err := e.Conn.QueryRow(ctx, q, p.args...).Scan(&n, &start, &end); err != nil {
		return 0, 0, fmt.Errorf("look up the trace's time range: %w", err)
	}
	if n == 0 {
		return from, to, nil
	}
	return start, end + 1, nil
}

// scopeTrace prepares a trace-wide read (a query with a trace id). When
// the spans table holds spans of the trace, only samples of those spans
// are read — the eBPF profiler can pass a trace context on to processes
// that are not part of the trace, whose samples carry the trace id with
// span ids that are not the trace's — and the trace's extent (first span
// start to last span end) widened by the padding replaces the query's
// range. Without the table, or without spans of the trace, the read is
// left as it is: the query's range and every sample with the trace id.
func (e *Engine) scopeTrace(ctx context.Context, t *tracesTables, r *Request) error {
	if !t.hasSpans {
		return nil
	}
	from, to, err := e.traceWindow(ctx, t, r)
	if err != nil {
		return err
	}
	var p params
	q := "SELECT count(), min(toUnixTimestamp64Nano(Timestamp)), max(toUnixTimestamp64Nano(Timestamp) + toInt64(Duration)) FROM " +
		t.spans + " WHERE TraceId = " + p.str(r.TraceID) +
		" AND " + nanoTimeRange(&p, from, to)
	var n uint64
	var start, end int64
	if err := e.Conn.QueryRow(ctx, q, p.args...).Scan(&n, &start, &end); err != nil {
		return fmt.Errorf("read the trace's extent: %w", err)
	}
	if n > 0 {
		r.scopeToTrace(&traceScope{table: t.spans, traceID: r.TraceID, from: from, to: to}, start, end)
	}
	return nil
}

// scopeToTrace restricts a request to a trace's stored spans and its
// extent [start, end] (Unix nanoseconds) widened by the padding.
func (r *Request) scopeToTrace(s *traceScope, start, end int64) {
	r.traceSpans = s
	r.From = time.Unix(0, start).Add(-r.Padding)
	r.To = time.Unix(0, end).Add(r.Padding)
	if !r.To.After(r.From) {
		r.To = r.From.Add(time.Second)
	}
	r.Step = max(r.Step, stepFor(0, 0, r.To.Sub(r.From)))
}
