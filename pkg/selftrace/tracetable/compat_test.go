package tracetable_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/pkg/selftrace/tracetable"
)

func TestMain(m *testing.M) { chtest.Main(m) }

// TestCollectorExporterCompatibility runs the contrib ClickHouse exporter
// (v0.161) in a real Collector next to our DDL and exporter: the tables are
// the same, column for column and index for index; the same spans written
// by both are the same rows; and the Collector writes into tables we
// created.
func TestCollectorExporterCompatibility(t *testing.T) {
	srv := chtest.Get(t)
	bin := otelcoltest.Build(t, otelcoltest.ClickHouseCollector)
	conn := srv.Open(t)
	ctx := context.Background()
	theirs, ours := srv.NewDatabase(t), srv.NewDatabase(t)

	col := otelcoltest.Start(t, bin, otelcoltest.Config{
		Exporters: map[string]any{"clickhouse": otelcoltest.ClickHouseExporter(srv, theirs)},
		Pipelines: map[string]otelcoltest.Pipeline{"traces": {Exporters: []string{"clickhouse"}}},
	})
	table := tracetable.Table{Database: ours, Name: tracetable.DefaultTable, TTL: 7 * 24 * time.Hour}
	require.NoError(t, table.Create(ctx, conn))
	require.NoError(t, table.Create(ctx, conn), "creating again is a no-op")

	t.Run("tables", func(t *testing.T) {
		for _, name := range []string{"otel_traces", "otel_traces_trace_id_ts"} {
			q := "SELECT name, type, toString(position), compression_codec, default_kind, default_expression FROM system.columns " +
				"WHERE database = ? AND table = ? ORDER BY position"
			want, got := rowStrings(t, conn, q, theirs, name), rowStrings(t, conn, q, ours, name)
			require.NotEmpty(t, want)
			require.Equal(t, want, got, "columns of %s", name)

			q = "SELECT name, type_full, expr, toString(granularity) FROM system.data_skipping_indices WHERE database = ? AND table = ? ORDER BY name"
			want, got = rowStrings(t, conn, q, theirs, name), rowStrings(t, conn, q, ours, name)
			require.NotEmpty(t, want)
			require.Equal(t, want, got, "indexes of %s", name)

			q = "SELECT engine, partition_key, sorting_key, primary_key, extract(engine_full, 'SETTINGS .*$') FROM system.tables WHERE database = ? AND name = ?"
			require.Equal(t, rowStrings(t, conn, q, theirs, name), rowStrings(t, conn, q, ours, name), "engine, keys and settings of %s", name)
		}
		// The view that fills the lookup: the same query over each database's tables.
		q := "SELECT replaceAll(as_select, database, 'db') FROM system.tables WHERE database = ? AND name = 'otel_traces_trace_id_ts_mv'"
		want := rowStrings(t, conn, q, theirs)
		require.Len(t, want, 1)
		require.Equal(t, want, rowStrings(t, conn, q, ours))
		// Our TTL follows the retention we gave.
		q = "SELECT name, extract(engine_full, 'TTL (.*) SETTINGS') FROM system.tables WHERE database = ? AND engine = 'MergeTree' ORDER BY name"
		require.Equal(t, []string{
			"otel_traces|toDateTime(Timestamp) + toIntervalSecond(604800)",
			"otel_traces_trace_id_ts|toDateTime(Start) + toIntervalSecond(604800)",
		}, rowStrings(t, conn, q, ours))
	})

	t.Run("rows", func(t *testing.T) {
		exp, err := tracetable.NewExporter(conn, table)
		require.NoError(t, err)
		otlp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(col.GRPCEndpoint), otlptracegrpc.WithInsecure())
		require.NoError(t, err)
		// Every span goes through both: ours into ours, OTLP to the
		// Collector into theirs. Without a sending queue the Collector
		// answers after its insert.
		tp := sdktrace.NewTracerProvider(
			sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)),
			sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(otlp)),
			sdktrace.WithResource(resource.NewSchemaless(
				attribute.String("service.name", "checkout"), attribute.Int("process.pid", 4242), attribute.Bool("demo", true))),
		)
		emitSpans(t, tp)
		require.NoError(t, tp.Shutdown(ctx), "Collector log:\n%s", col.Logs())

		q := "SELECT formatRow('JSONEachRow', *) FROM %s.otel_traces ORDER BY SpanName"
		want := rowStrings(t, conn, fmt.Sprintf(q, theirs))
		require.Len(t, want, 3, "the Collector wrote every span; log:\n%s", col.Logs())
		got := rowStrings(t, conn, fmt.Sprintf(q, ours))
		require.Equal(t, want, got)
		for _, row := range got {
			t.Log(row)
		}
		q = "SELECT TraceId, toString(Start), toString(End) FROM %s.otel_traces_trace_id_ts ORDER BY TraceId"
		require.Equal(t, rowStrings(t, conn, fmt.Sprintf(q, theirs)), rowStrings(t, conn, fmt.Sprintf(q, ours)), "the lookup view")
	})

	// The SDK's OTLP exporter (v1.47) drops a link's trace state, so the
	// comparison above has none; ours keeps it, as the Collector's exporter
	// keeps what OTLP carries.
	t.Run("link trace state", func(t *testing.T) {
		exp, err := tracetable.NewExporter(conn, table)
		require.NoError(t, err)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)))
		ts, err := trace.ParseTraceState("vendor=opaque")
		require.NoError(t, err)
		linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}, TraceState: ts})
		_, span := tp.Tracer("compat-test").Start(ctx, "with a linked trace state", trace.WithLinks(trace.Link{SpanContext: linked}))
		span.End()
		require.NoError(t, tp.Shutdown(ctx))
		require.Equal(t, []string{"09000000000000000000000000000000|0900000000000000|vendor=opaque"}, rowStrings(t, conn,
			"SELECT Links.TraceId[1], Links.SpanId[1], Links.TraceState[1] FROM "+ours+".otel_traces WHERE SpanName = 'with a linked trace state'"))
	})

	t.Run("the exporter writes into our table", func(t *testing.T) {
		db := srv.NewDatabase(t)
		ourTable := tracetable.Table{Database: db, Name: tracetable.DefaultTable}
		require.NoError(t, ourTable.Create(ctx, conn))
		cfg := otelcoltest.ClickHouseExporter(srv, db)
		cfg["create_schema"] = false
		col := otelcoltest.Start(t, bin, otelcoltest.Config{
			Exporters: map[string]any{"clickhouse": cfg},
			Pipelines: map[string]otelcoltest.Pipeline{"traces": {Exporters: []string{"clickhouse"}}},
		})
		otlp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(col.GRPCEndpoint), otlptracegrpc.WithInsecure())
		require.NoError(t, err)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(otlp)),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "checkout"))))
		_, span := tp.Tracer("compat").Start(ctx, "GET /cart")
		span.End()
		require.NoError(t, tp.Shutdown(ctx), "Collector log:\n%s", col.Logs())
		require.Equal(t, []string{"GET /cart|checkout|" + span.SpanContext().TraceID().String()},
			rowStrings(t, conn, "SELECT SpanName, ServiceName, TraceId FROM "+db+".otel_traces"))
		require.Equal(t, []string{span.SpanContext().TraceID().String()}, rowStrings(t, conn, "SELECT TraceId FROM "+db+".otel_traces_trace_id_ts"))
		var tables []string
		require.NoError(t, conn.QueryRow(ctx, "SELECT arraySort(groupArray(name)) FROM system.tables WHERE database = ?", db).Scan(&tables))
		require.Equal(t, []string{"otel_traces", "otel_traces_trace_id_ts", "otel_traces_trace_id_ts_mv"}, tables,
			"the Collector created nothing of its own")
	})
}

// emitSpans makes a small trace that uses every field of the table: a
// remote parent with a trace state, span kinds, statuses with and without
// messages, attributes of every type, events and links (without a trace
// state: see "link trace state").
func emitSpans(t *testing.T, tp trace.TracerProvider) {
	t.Helper()
	ts, err := trace.ParseTraceState("vendor=opaque,other=1")
	require.NoError(t, err)
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x5b, 0x8e, 0xff, 0xf7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		SpanID:  trace.SpanID{0xee, 0xe1, 0x9b, 0x7e, 1, 2, 3, 4}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true,
	})
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x11, 0x22, 1}, SpanID: trace.SpanID{0x33, 0x44, 1}})
	tracer := tp.Tracer("compat-test", trace.WithInstrumentationVersion("1.2.3"))
	start := time.Now().Truncate(time.Microsecond).Add(123 * time.Nanosecond)
	ctx, root := tracer.Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "POST /checkout",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start), trace.WithLinks(trace.Link{
			SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("link.kind", "follows"), attribute.Int("n", 2)},
		}))
	root.SetAttributes(
		attribute.String("http.route", "/checkout"), attribute.Bool("ok", false), attribute.Int64("big", -9223372036854775808),
		attribute.Float64("ratio", 0.25), attribute.Float64("tiny", 1.5e-7), attribute.Float64("huge", 3e21), attribute.Float64("whole", 2),
		attribute.StringSlice("tags", []string{"a", "<b>&"}), attribute.IntSlice("ints", []int{1, -2}),
		attribute.Float64Slice("floats", []float64{0.5, 1e-9}), attribute.BoolSlice("bools", []bool{true, false}),
		attribute.ByteSlice("raw", []byte{0, 1, 0xfe, 0xff}),
		attribute.Slice("mixed", attribute.StringValue("x"), attribute.IntValue(3)),
		attribute.Map("nested", attribute.String("z", "last"), attribute.Int("a", 1)),
		attribute.String("empty", ""),
	)
	root.AddEvent("cache miss", trace.WithTimestamp(start.Add(time.Millisecond)),
		trace.WithAttributes(attribute.String("key", "cart:42"), attribute.Int("size", 7)))
	root.AddEvent("no attributes", trace.WithTimestamp(start.Add(2*time.Millisecond)))
	_, child := tracer.Start(ctx, "SELECT cart", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start.Add(3*time.Millisecond)))
	child.SetStatus(codes.Ok, "ignored for Ok")
	child.End(trace.WithTimestamp(start.Add(5*time.Millisecond + 7)))
	_, internal := tracer.Start(ctx, "charge", trace.WithTimestamp(start.Add(6*time.Millisecond)))
	internal.SetStatus(codes.Error, "card declined")
	internal.End(trace.WithTimestamp(start.Add(9 * time.Millisecond)))
	root.End(trace.WithTimestamp(start.Add(10 * time.Millisecond)))
}

// rowStrings runs a query whose columns are all strings and renders each
// row as its columns joined by "|".
func rowStrings(t *testing.T, conn clickhouse.Conn, query string, args ...any) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), query, args...)
	require.NoError(t, err, query)
	defer rows.Close()
	var out []string
	for rows.Next() {
		cols := make([]string, len(rows.Columns()))
		ptrs := make([]any, len(cols))
		for i := range cols {
			ptrs[i] = &cols[i]
		}
		require.NoError(t, rows.Scan(ptrs...), query)
		out = append(out, strings.Join(cols, "|"))
	}
	require.NoError(t, rows.Err())
	return out
}
