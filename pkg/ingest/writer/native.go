package writer

import (
	"encoding/binary"
	"math"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// The sample insert is encoded by hand in ClickHouse's Native format
// (the format clickhouse-go sends, as ClickHouse's HTTP interface reads it
// with `FORMAT Native`). Doing it here rather than through clickhouse-go's
// generic columns matters for speed: LowCardinality columns go out as a
// dictionary plus one small index per row, computed once per SampleMeta
// (rows of a request share a handful of them), so ClickHouse neither parses
// nor hashes a string per row, and the client does no per-row reflection.

// LowCardinality serialization constants (ClickHouse's
// SerializationLowCardinality): the state prefix names the
// "shared dictionaries with additional keys" version, and every column
// sends its own dictionary ("additional keys") and asks the reader to use it.
const (
	lcVersionSharedDictionaries = 1
	lcHasAdditionalKeys         = 1 << 9
	lcNeedUpdateDictionary      = 1 << 10
	lcIndexUInt8                = 0
	lcIndexUInt16               = 1
	lcIndexUInt32               = 2
)

// Native type names of the samples table's columns as they are sent.
const (
	typeDateTime   = "DateTime"
	typeLC         = "LowCardinality(String)"
	typeUInt64     = "UInt64"
	typeInt64      = "Int64"
	typeString     = "String"
	typeLCMap      = "Map(LowCardinality(String), LowCardinality(String))"
	typeBool       = "Bool"
	lcScalarFields = 3 // TenantId, ServiceName, ProfileType
)

// lcDict is the dictionary of one LowCardinality column.
type lcDict struct {
	index  map[string]uint32
	values []string
}

func (d *lcDict) id(s string) uint32 {
	if i, ok := d.index[s]; ok {
		return i
	}
	if d.index == nil {
		d.index = map[string]uint32{}
	}
	i := uint32(len(d.values))
	d.index[s] = i
	d.values = append(d.values, s)
	return i
}

// nativeBuf is a Native block being written.
type nativeBuf struct {
	buf []byte
	// scratch holds one column's dictionary indices.
	scratch []uint32
}

// nativeSamples encodes sample rows as one Native block.
type nativeSamples struct {
	nativeBuf
	rows int
	// rowMeta is each row's index into metaIDs.
	rowMeta []uint32
	// metaIDs are each SampleMeta's dictionary indices of the
	// LowCardinality scalar columns.
	metaIDs [][lcScalarFields]uint32
	scalar  [lcScalarFields]lcDict
	// keyIDs and valueIDs are the dictionary indices of every attribute
	// of every row, in row order.
	keyIDs, valueIDs []uint32
	mapKeys, mapVals lcDict
}

// scalarValues returns the LowCardinality scalar columns of a meta:
// TenantId, ServiceName, ProfileType.
func scalarValues(m *model.SampleMeta) [lcScalarFields]string {
	return [lcScalarFields]string{m.Series.Tenant, m.Series.Service, m.ProfileType}
}

// encodeSamples encodes the samples of a group of requests, with each
// row's minute rollup mark (minuteRollupMarks).
func encodeSamples(ps []*pending, marks []bool) []byte {
	n := len(marks) // one per row
	e := &nativeSamples{rows: n, rowMeta: make([]uint32, 0, n)}
	e.index(ps)
	size := 4096 + n*(4+3*8+2*lcScalarFields+8+1) + len(e.keyIDs)*4
	e.buf = make([]byte, 0, size)
	e.encode(ps, marks)
	return e.buf
}

// index assigns every row its dictionary indices.
func (e *nativeSamples) index(ps []*pending) {
	seen := map[*model.SampleMeta]uint32{}
	var last *model.SampleMeta
	var lastID uint32
	for _, p := range ps {
		for i := range p.batch.Samples {
			s := &p.batch.Samples[i]
			if s.Meta != last {
				id, ok := seen[s.Meta]
				if !ok {
					id = e.addMeta(s.Meta)
					seen[s.Meta] = id
				}
				last, lastID = s.Meta, id
			}
			e.rowMeta = append(e.rowMeta, lastID)
			for _, kv := range s.Attributes {
				e.keyIDs = append(e.keyIDs, e.mapKeys.id(kv.Key))
				e.valueIDs = append(e.valueIDs, e.mapVals.id(kv.Value))
			}
		}
	}
}

func (e *nativeSamples) addMeta(m *model.SampleMeta) uint32 {
	var ids [lcScalarFields]uint32
	for i, v := range scalarValues(m) {
		ids[i] = e.scalar[i].id(v)
	}
	e.metaIDs = append(e.metaIDs, ids)
	return uint32(len(e.metaIDs) - 1)
}

// encode writes the block: column and row counts, then each column's name,
// type, state prefix and data, in sampleColumns order.
func (e *nativeSamples) encode(ps []*pending, marks []bool) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(sampleColumnNames)))
	e.buf = binary.AppendUvarint(e.buf, uint64(e.rows))
	e.header("Timestamp", typeDateTime)
	eachSample(ps, func(s *model.Sample) {
		e.buf = binary.LittleEndian.AppendUint32(e.buf, clampDateTime(s.Timestamp))
	})
	for i, name := range sampleColumnNames[1:4] {
		e.lcColumn(name, i)
	}
	e.header("StackId", typeUInt64)
	eachSample(ps, func(s *model.Sample) { e.buf = binary.LittleEndian.AppendUint64(e.buf, s.StackID) })
	e.header("SeriesId", typeUInt64)
	eachSample(ps, func(s *model.Sample) { e.buf = binary.LittleEndian.AppendUint64(e.buf, s.Meta.Series.ID) })
	e.header("Value", typeInt64)
	eachSample(ps, func(s *model.Sample) { e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(s.Value)) })
	e.header("TraceId", typeString)
	eachSample(ps, func(s *model.Sample) { e.appendString(s.Meta.TraceID) })
	e.header("SpanId", typeString)
	eachSample(ps, func(s *model.Sample) { e.appendString(s.Meta.SpanID) })
	e.mapColumn(ps)
	e.header(schema.MinuteRollupColumn, typeBool)
	for _, m := range marks {
		e.buf = append(e.buf, byte(boolNum(m)))
	}
}

func eachSample(ps []*pending, f func(*model.Sample)) {
	for _, p := range ps {
		for i := range p.batch.Samples {
			f(&p.batch.Samples[i])
		}
	}
}

func (e *nativeBuf) header(name, typ string) {
	e.appendString(name)
	e.appendString(typ)
}

func (e *nativeBuf) appendString(s string) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// lcColumn writes a LowCardinality(String) column from the rows' metas.
func (e *nativeSamples) lcColumn(name string, field int) {
	e.header(name, typeLC)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, lcVersionSharedDictionaries)
	ids := e.scratch[:0]
	for _, m := range e.rowMeta {
		ids = append(ids, e.metaIDs[m][field])
	}
	e.scratch = ids
	e.lcData(&e.scalar[field], ids)
}

// lcData writes the data of a LowCardinality column: flags with the index
// width, the dictionary, then one index per row.
func (e *nativeBuf) lcData(d *lcDict, ids []uint32) {
	var width uint64 = lcIndexUInt32
	switch {
	case len(d.values) <= math.MaxUint8+1:
		width = lcIndexUInt8
	case len(d.values) <= math.MaxUint16+1:
		width = lcIndexUInt16
	}
	e.buf = binary.LittleEndian.AppendUint64(e.buf, lcHasAdditionalKeys|lcNeedUpdateDictionary|width)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(len(d.values)))
	for _, v := range d.values {
		e.appendString(v)
	}
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(len(ids)))
	switch width {
	case lcIndexUInt8:
		for _, i := range ids {
			e.buf = append(e.buf, byte(i))
		}
	case lcIndexUInt16:
		for _, i := range ids {
			e.buf = binary.LittleEndian.AppendUint16(e.buf, uint16(i))
		}
	default:
		for _, i := range ids {
			e.buf = binary.LittleEndian.AppendUint32(e.buf, i)
		}
	}
}

// mapColumn writes SampleAttributes: a Map is an array of (key, value)
// tuples, sent as the state prefixes of both LowCardinality parts, the
// cumulative end offset of every row, then all keys and all values.
func (e *nativeSamples) mapColumn(ps []*pending) {
	e.header("SampleAttributes", typeLCMap)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, lcVersionSharedDictionaries)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, lcVersionSharedDictionaries)
	var end uint64
	eachSample(ps, func(s *model.Sample) {
		end += uint64(len(s.Attributes))
		e.buf = binary.LittleEndian.AppendUint64(e.buf, end)
	})
	if len(e.keyIDs) == 0 {
		return // LowCardinality parts without rows are not written
	}
	e.lcData(&e.mapKeys, e.keyIDs)
	e.lcData(&e.mapVals, e.valueIDs)
}

// clampDateTime fits Unix seconds into ClickHouse's DateTime (UInt32).
func clampDateTime(sec int64) uint32 {
	switch {
	case sec < 0:
		return 0
	case sec > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(sec)
}
