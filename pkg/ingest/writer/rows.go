package writer

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// The metadata tables (series, frames, stacks, catalogs) are described
// once as columns with getters; rowSet then sends them either as a Native
// block over HTTP or row by row through clickhouse-go.

// colKind is a column's type as the writer sends it.
type colKind uint8

const (
	colString      colKind = iota // String
	colLC                         // LowCardinality(String)
	colUInt64                     // UInt64
	colUInt32                     // UInt32
	colBool                       // Bool
	colDate                       // Date: days since 1970
	colDateTime                   // DateTime: seconds since 1970
	colUInt64Array                // Array(UInt64)
	colLCStringMap                // Map(LowCardinality(String), String)
	colInt64                      // Int64: the getter's bits
	colDateTime64                 // DateTime64(9): nanoseconds since 1970
)

var colTypes = [...]string{
	colString: "String", colLC: typeLC, colUInt64: "UInt64", colUInt32: "UInt32", colBool: "Bool",
	colDate: "Date", colDateTime: "DateTime", colUInt64Array: "Array(UInt64)", colLCStringMap: "Map(LowCardinality(String), String)",
	colInt64: "Int64", colDateTime64: "DateTime64(9)",
}

// column is one column of a rowSet; the getter that matches kind is set.
type column struct {
	name string
	kind colKind
	str  func(i int) string     // String, LowCardinality(String)
	num  func(i int) uint64     // UInt64, UInt32, Bool (0/1), Date, DateTime, Int64, DateTime64
	ids  func(i int) []uint64   // Array(UInt64)
	kvs  func(i int) []model.KV // Map
}

// rowSet is rows of one table, column by column.
type rowSet struct {
	table string
	rows  int
	cols  []column
}

func (r *rowSet) columnNames() string {
	names := make([]string, len(r.cols))
	for i, c := range r.cols {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// insertRows sends a rowSet: a Native block over HTTP when the writer has
// an inserter, else a clickhouse-go batch.
func (w *Writer) insertRows(ctx context.Context, r *rowSet) error {
	insert := "INSERT INTO " + w.tables.Qualified(r.table) + " (" + r.columnNames() + ")"
	if w.native != nil {
		return w.native.Insert(ctx, insert, nil, r.native())
	}
	return w.batchRows(ctx, insert, r)
}

func (w *Writer) batchRows(ctx context.Context, insert string, r *rowSet) error {
	types := make([]clickhouse.ColumnNameAndType, len(r.cols))
	for i, c := range r.cols {
		types[i] = clickhouse.ColumnNameAndType{Name: c.name, Type: colTypes[c.kind]}
	}
	b, err := w.conn.PrepareBatch(clickhouse.Context(ctx, clickhouse.WithColumnNamesAndTypes(types)), insert)
	if err != nil {
		return err
	}
	values := make([]any, len(r.cols))
	for i := range r.rows {
		for j, c := range r.cols {
			values[j] = c.value(i)
		}
		if err := b.Append(values...); err != nil {
			_ = b.Abort()
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	return b.Send()
}

// value is row i of the column as clickhouse-go takes it.
func (c *column) value(i int) any {
	switch c.kind {
	case colString, colLC:
		return c.str(i)
	case colUInt64:
		return c.num(i)
	case colUInt32:
		return uint32(c.num(i))
	case colBool:
		return c.num(i) != 0
	case colDate:
		return time.Unix(int64(c.num(i))*86400, 0).UTC()
	case colDateTime:
		return time.Unix(int64(c.num(i)), 0).UTC()
	case colUInt64Array:
		return c.ids(i)
	case colInt64:
		return int64(c.num(i)) //nolint:gosec // G115: the getter returns an Int64's bits
	case colDateTime64:
		return time.Unix(0, int64(c.num(i))).UTC() //nolint:gosec // G115: nanoseconds since 1970 fit
	default:
		return model.KVMap(c.kvs(i))
	}
}

// native encodes the rows as one Native block.
func (r *rowSet) native() []byte {
	var e nativeBuf
	e.buf = binary.AppendUvarint(e.buf, uint64(len(r.cols)))
	e.buf = binary.AppendUvarint(e.buf, uint64(r.rows))
	for i := range r.cols {
		c := &r.cols[i]
		e.header(c.name, colTypes[c.kind])
		e.column(c, r.rows)
	}
	return e.buf
}

func (e *nativeBuf) column(c *column, rows int) {
	switch c.kind {
	case colString:
		for i := range rows {
			e.appendString(c.str(i))
		}
	case colLC:
		e.buf = binary.LittleEndian.AppendUint64(e.buf, lcVersionSharedDictionaries)
		e.lcStrings(rows, c.str)
	case colUInt64, colInt64, colDateTime64:
		for i := range rows {
			e.buf = binary.LittleEndian.AppendUint64(e.buf, c.num(i))
		}
	case colUInt32, colDateTime:
		for i := range rows {
			e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(min(c.num(i), math.MaxUint32)))
		}
	case colBool:
		for i := range rows {
			e.buf = append(e.buf, byte(min(c.num(i), 1)))
		}
	case colDate:
		for i := range rows {
			e.buf = binary.LittleEndian.AppendUint16(e.buf, uint16(min(c.num(i), math.MaxUint16)))
		}
	case colUInt64Array:
		e.uint64Arrays(rows, c.ids)
	case colLCStringMap:
		e.lcStringMap(rows, c.kvs)
	}
}

// lcStrings writes the data of a LowCardinality(String) column.
func (e *nativeBuf) lcStrings(rows int, get func(i int) string) {
	var d lcDict
	ids := make([]uint32, rows)
	for i := range rows {
		ids[i] = d.id(get(i))
	}
	e.lcData(&d, ids)
}

// uint64Arrays writes an Array(UInt64) column: the cumulative end offset
// of every row, then all elements.
func (e *nativeBuf) uint64Arrays(rows int, get func(i int) []uint64) {
	var end uint64
	for i := range rows {
		end += uint64(len(get(i)))
		e.buf = binary.LittleEndian.AppendUint64(e.buf, end)
	}
	for i := range rows {
		for _, v := range get(i) {
			e.buf = binary.LittleEndian.AppendUint64(e.buf, v)
		}
	}
}

// lcStringMap writes a Map(LowCardinality(String), String) column: the
// keys' state prefix, row end offsets, all keys, all values.
func (e *nativeBuf) lcStringMap(rows int, get func(i int) []model.KV) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, lcVersionSharedDictionaries)
	var d lcDict
	var keys []uint32
	var end uint64
	for i := range rows {
		kvs := get(i)
		end += uint64(len(kvs))
		e.buf = binary.LittleEndian.AppendUint64(e.buf, end)
		for _, kv := range kvs {
			keys = append(keys, d.id(kv.Key))
		}
	}
	if len(keys) == 0 {
		return
	}
	e.lcData(&d, keys)
	for i := range rows {
		for _, kv := range get(i) {
			e.appendString(kv.Value)
		}
	}
}
