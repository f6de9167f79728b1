package tracetable

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column/orderedmap"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Exporter writes finished spans into a spans table (see Table), one
// insert per batch, through a clickhouse-go connection it does not own.
type Exporter struct {
	conn    driver.Conn
	insert  string
	stopped atomic.Bool
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// insertColumns are the columns an export fills, in row order: the spans
// table's columns with the nested ones flattened.
var insertColumns = []string{
	"Timestamp", "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName", "SpanKind", "ServiceName",
	"ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes", "Duration", "StatusCode", "StatusMessage",
	"Events.Timestamp", "Events.Name", "Events.Attributes", "Links.TraceId", "Links.SpanId", "Links.TraceState", "Links.Attributes",
}

// NewExporter returns an exporter into t over conn. The connection stays
// the caller's: Shutdown does not close it.
func NewExporter(conn driver.Conn, t Table) (*Exporter, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	cols := make([]string, len(insertColumns))
	for i, c := range insertColumns {
		cols[i] = quoteColumn(c)
	}
	return &Exporter{conn: conn, insert: "INSERT INTO " + t.Qualified("") + " (" + strings.Join(cols, ", ") + ")"}, nil
}

// quoteColumn quotes a column name; a nested column's two parts are quoted
// apart (`Events`.`Name`).
func quoteColumn(name string) string {
	parent, child, nested := strings.Cut(name, ".")
	if !nested {
		return "`" + name + "`"
	}
	return "`" + parent + "`.`" + child + "`"
}

// errStopped is returned by exports after Shutdown.
var errStopped = errors.New("the span exporter is shut down")

// ExportSpans inserts spans as one batch. It returns once ClickHouse has
// committed them, or with the error that kept it from doing so.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return errStopped
	}
	if len(spans) == 0 {
		return nil
	}
	batch, err := e.conn.PrepareBatch(ctx, e.insert)
	if err != nil {
		return fmt.Errorf("prepare span insert: %w", err)
	}
	for _, s := range spans {
		if err := batch.Append(row(s)...); err != nil {
			_ = batch.Abort()
			return fmt.Errorf("append span %s: %w", s.SpanContext().SpanID(), err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d spans: %w", len(spans), err)
	}
	return nil
}

// Shutdown stops accepting exports. The provider calls it after writing
// what it holds.
func (e *Exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	return nil
}

// row is a span's row in the spans table, in insertColumns order, filled as
// the Collector exporter fills it: start time, lower-case hex ids ("" when
// unset), the kind and status code by their OTLP names ("Server", "Error"),
// the service from the resource's service.name, attribute values as
// strings (AsString), the duration in nanoseconds, events and links as
// parallel arrays.
func row(s sdktrace.ReadOnlySpan) []any {
	sc := s.SpanContext()
	res := s.Resource()
	service := ""
	if v, ok := res.Set().Value("service.name"); ok {
		service = valueString(v)
	}
	start, end := s.StartTime(), s.EndTime()
	events := s.Events()
	eventTimes, eventNames := make([]time.Time, len(events)), make([]string, len(events))
	eventAttrs := make([]column.IterableOrderedMap, len(events))
	for i, ev := range events {
		eventTimes[i], eventNames[i], eventAttrs[i] = ev.Time, ev.Name, attrs(ev.Attributes)
	}
	links := s.Links()
	linkTraces, linkSpans, linkStates := make([]string, len(links)), make([]string, len(links)), make([]string, len(links))
	linkAttrs := make([]column.IterableOrderedMap, len(links))
	for i, l := range links {
		linkTraces[i], linkSpans[i] = traceHex(l.SpanContext.TraceID()), spanHex(l.SpanContext.SpanID())
		linkStates[i], linkAttrs[i] = l.SpanContext.TraceState().String(), attrs(l.Attributes)
	}
	scope := s.InstrumentationScope()
	return []any{
		start, traceHex(sc.TraceID()), spanHex(sc.SpanID()), spanHex(s.Parent().SpanID()), sc.TraceState().String(),
		s.Name(), kindName(s.SpanKind()), service, attrs(res.Attributes()), scope.Name, scope.Version, attrs(s.Attributes()),
		uint64(end.UnixNano()) - uint64(start.UnixNano()),
		statusName(s.Status().Code), s.Status().Description,
		eventTimes, eventNames, eventAttrs, linkTraces, linkSpans, linkStates, linkAttrs,
	}
}

func traceHex(id trace.TraceID) string {
	if !id.IsValid() {
		return ""
	}
	return id.String()
}

func spanHex(id trace.SpanID) string {
	if !id.IsValid() {
		return ""
	}
	return id.String()
}

// kindName is the OTLP span kind's name (pdata's SpanKind.String).
func kindName(k trace.SpanKind) string {
	switch k {
	case trace.SpanKindInternal:
		return "Internal"
	case trace.SpanKindServer:
		return "Server"
	case trace.SpanKindClient:
		return "Client"
	case trace.SpanKindProducer:
		return "Producer"
	case trace.SpanKindConsumer:
		return "Consumer"
	}
	return "Unspecified"
}

// statusName is the OTLP status code's name (pdata's StatusCode.String).
func statusName(c codes.Code) string {
	switch c {
	case codes.Ok:
		return "Ok"
	case codes.Error:
		return "Error"
	}
	return "Unset"
}

// attrs renders attributes as a map ordered by key, as the exporter's
// maps are, with values as strings.
func attrs(kvs []attribute.KeyValue) column.IterableOrderedMap {
	return orderedmap.CollectN(func(yield func(string, string) bool) {
		for _, kv := range kvs {
			if !yield(string(kv.Key), valueString(kv.Value)) {
				return
			}
		}
	}, len(kvs))
}

// valueString renders an attribute value as OTLP's AnyValue.AsString does
// after the SDK's OTLP export: scalars in Go's formatting (floats as
// JavaScript numbers), bytes as base64, slices and maps as JSON.
func valueString(v attribute.Value) string {
	switch v.Type() {
	case attribute.STRING:
		return v.AsString()
	case attribute.BOOL:
		return strconv.FormatBool(v.AsBool())
	case attribute.INT64:
		return strconv.FormatInt(v.AsInt64(), 10)
	case attribute.FLOAT64:
		return floatString(v.AsFloat64())
	case attribute.BYTESLICE:
		return base64.StdEncoding.EncodeToString(v.AsByteSlice())
	case attribute.EMPTY:
		return ""
	}
	return jsonString(rawValue(v))
}

// floatString formats a float as a JavaScript number (ES6 Number to
// string), as pdata does: plain notation within [1e-6, 1e21), exponent
// notation outside, with no zero padding in the exponent.
func floatString(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, 64)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if format == 'e' {
		// 1e-07 -> 1e-7
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
	}
	return s
}

// rawValue is a composite value as plain Go values for JSON.
func rawValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.BOOLSLICE:
		return v.AsBoolSlice()
	case attribute.INT64SLICE:
		return v.AsInt64Slice()
	case attribute.FLOAT64SLICE:
		return v.AsFloat64Slice()
	case attribute.STRINGSLICE:
		return v.AsStringSlice()
	case attribute.SLICE:
		vs := v.AsSlice()
		out := make([]any, len(vs))
		for i, e := range vs {
			out[i] = rawValue(e)
		}
		return out
	case attribute.MAP:
		kvs := v.AsMap()
		out := make(map[string]any, len(kvs))
		for _, kv := range kvs {
			out[string(kv.Key)] = rawValue(kv.Value)
		}
		return out
	case attribute.BYTESLICE:
		return v.AsByteSlice() // JSON renders it as base64
	case attribute.EMPTY:
		return nil
	}
	return v.AsInterface()
}

// jsonString encodes v as JSON without HTML escaping, as pdata renders
// composite values; "" when v cannot be encoded (a NaN in a slice).
func jsonString(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
