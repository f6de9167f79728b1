package tracetable

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

// DefaultTable is the spans table's default name, the Collector
// exporter's.
const DefaultTable = "otel_traces"

// Table locates the spans table and says how long spans are kept.
type Table struct {
	// Database holds the table (Flamehouse's schema.database, so that the
	// datasource's default tracesDatabase finds it).
	Database string
	// Name is the spans table; its trace id lookup table is Name +
	// "_trace_id_ts", filled by the view Name + "_trace_id_ts_mv".
	Name string
	// TTL is how long spans are kept, by their start; 0 keeps them forever.
	TTL time.Duration
}

// Validate checks the names, which go into DDL as identifiers.
func (t Table) Validate() error {
	var err error
	if !schema.IsIdentifier(t.Database) {
		err = errors.Join(err, fmt.Errorf("traces database must be a plain identifier, got %q", t.Database))
	}
	if !schema.IsIdentifier(t.Name) {
		err = errors.Join(err, fmt.Errorf("traces table must be a plain identifier (letters, digits, underscore), got %q", t.Name))
	}
	if t.TTL < 0 {
		err = errors.Join(err, errors.New("traces TTL must not be negative"))
	}
	return err
}

// Qualified returns `database`.`name` of the spans table, or of a table
// named after it with a suffix.
func (t Table) Qualified(suffix string) string {
	return schema.QuoteIdentifier(t.Database) + "." + schema.QuoteIdentifier(t.Name+suffix)
}

// Suffixes of the trace id lookup table and of the view that fills it.
const (
	LookupSuffix     = "_trace_id_ts"
	LookupViewSuffix = "_trace_id_ts_mv"
)

// columnDef is a column of a table definition: its name and the rest.
type columnDef struct{ name, def string }

// attrMap is the type of attribute maps, the values stringified.
const attrMap = "Map(LowCardinality(String), String)"

// spanColumns are the spans table's columns, in order.
var spanColumns = []columnDef{
	{"Timestamp", "DateTime64(9) CODEC(Delta, ZSTD(1))"},
	{"TraceId", "String CODEC(ZSTD(1))"},
	{"SpanId", "String CODEC(ZSTD(1))"},
	{"ParentSpanId", "String CODEC(ZSTD(1))"},
	{"TraceState", "String CODEC(ZSTD(1))"},
	{"SpanName", "LowCardinality(String) CODEC(ZSTD(1))"},
	{"SpanKind", "LowCardinality(String) CODEC(ZSTD(1))"},
	{"ServiceName", "LowCardinality(String) CODEC(ZSTD(1))"},
	{"ResourceAttributes", attrMap + " CODEC(ZSTD(1))"},
	{"ScopeName", "String CODEC(ZSTD(1))"},
	{"ScopeVersion", "String CODEC(ZSTD(1))"},
	{"SpanAttributes", attrMap + " CODEC(ZSTD(1))"},
	{"Duration", "UInt64 CODEC(ZSTD(1))"},
	{"StatusCode", "LowCardinality(String) CODEC(ZSTD(1))"},
	{"StatusMessage", "String CODEC(ZSTD(1))"},
	{"Events", "Nested(Timestamp DateTime64(9), Name LowCardinality(String), Attributes " + attrMap + ") CODEC(ZSTD(1))"},
	{"Links", "Nested(TraceId String, SpanId String, TraceState String, Attributes " + attrMap + ") CODEC(ZSTD(1))"},
}

// spanIndexes are the spans table's data skipping indexes.
var spanIndexes = []string{
	"INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1",
	"INDEX idx_res_attr_key mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1",
	"INDEX idx_res_attr_value mapValues(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1",
	"INDEX idx_span_attr_key mapKeys(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1",
	"INDEX idx_span_attr_value mapValues(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1",
	"INDEX idx_duration Duration TYPE minmax GRANULARITY 1",
}

// lookupColumns and lookupIndexes define the trace id lookup table: the
// first and last span start of each trace.
var (
	lookupColumns = []columnDef{
		{"TraceId", "String CODEC(ZSTD(1))"},
		{"Start", "DateTime CODEC(Delta, ZSTD(1))"},
		{"End", "DateTime CODEC(Delta, ZSTD(1))"},
	}
	lookupIndexes = []string{"INDEX idx_trace_id TraceId TYPE bloom_filter(0.01) GRANULARITY 1"}
)

// Statements returns the DDL that creates the spans table, its trace id
// lookup table and the view that fills the lookup, each IF NOT EXISTS.
// Columns, types, codecs, indexes, keys and settings are those of the
// Collector ClickHouse exporter's traces tables (exporter v0.161, single
// node, MergeTree); an existing table, the exporter's or ours, is left as
// it is.
func (t Table) Statements() ([]string, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	spans := createTable(t.Qualified(""), spanColumns, spanIndexes,
		"toDate(Timestamp)", "(ServiceName, SpanName, toDateTime(Timestamp))", t.ttl("toDateTime(Timestamp)"))
	lookup := createTable(t.Qualified(LookupSuffix), lookupColumns, lookupIndexes,
		"toDate(Start)", "(TraceId, Start)", t.ttl("toDateTime(Start)"))
	view := "CREATE MATERIALIZED VIEW IF NOT EXISTS " + t.Qualified(LookupViewSuffix) + " TO " + t.Qualified(LookupSuffix) + "\n" +
		"AS SELECT\n    TraceId,\n    min(Timestamp) AS Start,\n    max(Timestamp) AS End\n" +
		"FROM " + t.Qualified("") + "\nWHERE TraceId != ''\nGROUP BY TraceId"
	return []string{spans, lookup, view}, nil
}

// ttl is the TTL clause (with its newline) of a time expression, or "".
func (t Table) ttl(expr string) string {
	if t.TTL == 0 {
		return ""
	}
	return schema.TTLExpression(expr, t.TTL, false) + "\n"
}

// createTable renders a MergeTree table of the exporter's kind.
func createTable(name string, cols []columnDef, indexes []string, partition, order, ttl string) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + name + "\n(\n")
	lines := make([]string, 0, len(cols)+len(indexes))
	for _, c := range cols {
		lines = append(lines, "    "+schema.QuoteIdentifier(c.name)+" "+c.def)
	}
	for _, idx := range indexes {
		lines = append(lines, "    "+idx)
	}
	b.WriteString(strings.Join(lines, ",\n"))
	b.WriteString("\n)\nENGINE = MergeTree\nPARTITION BY " + partition + "\nORDER BY " + order + "\n" + ttl +
		"SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1")
	return b.String()
}

// Create creates the database, if needed, and the tables of Statements.
func (t Table) Create(ctx context.Context, conn driver.Conn) error {
	stmts, err := t.Statements()
	if err != nil {
		return err
	}
	stmts = append([]string{"CREATE DATABASE IF NOT EXISTS " + schema.QuoteIdentifier(t.Database)}, stmts...)
	for _, stmt := range stmts {
		if err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("create %s: %w", firstLine(stmt), err)
		}
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
