package symbols

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

// Sources of stored symbols (profile_executables.Source).
const (
	SourceUpload     = "upload"
	SourceDebuginfod = "debuginfod"
)

// NativeInserter sends an insert whose data is a ClickHouse Native block
// (chclient.NativeInserter, over ClickHouse's HTTP interface).
type NativeInserter interface {
	Insert(ctx context.Context, insert string, settings map[string]string, data []byte) error
}

// Store writes executables' symbols into profile_symbols and
// profile_executables and answers which build ids it holds.
type Store struct {
	tables schema.Config
	conn   clickhouse.Conn
	native NativeInserter
	// BatchRows is the number of ranges per insert. Default 50,000.
	BatchRows int
	// Now is the clock of the upload time (tests may set it).
	Now func() time.Time
}

// DefaultBatchRows is the number of ranges per insert.
const DefaultBatchRows = 50_000

// insertTimeout bounds one insert.
const insertTimeout = 2 * time.Minute

// NewStore returns a store over conn; native, when not nil, carries the
// inserts as Native blocks (use it when conn speaks HTTP, as the ingest
// writer does).
func NewStore(tables schema.Config, conn clickhouse.Conn, native NativeInserter) *Store {
	return &Store{tables: tables, conn: conn, native: native, BatchRows: DefaultBatchRows, Now: time.Now}
}

// Stored says what Put wrote.
type Stored struct {
	BuildID string
	// Ranges is the number of rows written to profile_symbols.
	Ranges int
	// Version is the rows' Version and the executable's UpdatedAt, in Unix
	// milliseconds.
	Version uint64
}

// Put writes an executable's ranges for a tenant, in batches, then its
// profile_executables row: a row there means its symbols are complete.
// An earlier upload of the same build id stays until merges replace it;
// readers take the ranges of the Version the executable row names.
func (s *Store) Put(ctx context.Context, tenant, source, fileName string, exe *Executable) (Stored, error) {
	if exe == nil || exe.BuildID == "" {
		return Stored{}, errors.New("store symbols: no executable or no build id")
	}
	version := uint64(s.Now().UnixMilli()) //nolint:gosec // G115: after 1970
	out := Stored{BuildID: exe.BuildID, Version: version}
	batch := max(s.BatchRows, 1)
	for start := 0; start < len(exe.Ranges); start += batch {
		rows := exe.Ranges[start:min(start+batch, len(exe.Ranges))]
		if err := s.insertRanges(ctx, tenant, exe.BuildID, version, rows); err != nil {
			return out, fmt.Errorf("store symbols of %s: insert into %s: %w", exe.BuildID, s.tables.Name(schema.Symbols), err)
		}
		out.Ranges += len(rows)
	}
	if err := s.insertExecutable(ctx, tenant, source, fileName, exe, version); err != nil {
		return out, fmt.Errorf("store symbols of %s: insert into %s: %w", exe.BuildID, s.tables.Name(schema.Executables), err)
	}
	return out, nil
}

// Has reports whether symbols of a build id are stored for a tenant.
func (s *Store) Has(ctx context.Context, tenant, buildID string) (bool, error) {
	var n uint64
	err := s.conn.QueryRow(ctx, "SELECT count() FROM "+s.tables.Qualified(schema.Executables)+" WHERE TenantId = ? AND BuildId = ?",
		tenant, buildID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look up symbols of %s: %w", buildID, err)
	}
	return n > 0, nil
}

const (
	symbolColumns     = "TenantId, BuildId, Start, End, Functions, Files, Lines, Version"
	executableColumns = "TenantId, BuildId, FileName, Size, Source, HasSymtab, HasDynsym, HasDwarf, HasGoPclntab, Ranges, " +
		"SegmentOffsets, SegmentVaddrs, SegmentSizes, UpdatedAt"
)

func (s *Store) insertRanges(ctx context.Context, tenant, buildID string, version uint64, rows []Range) error {
	ctx, cancel := context.WithTimeout(ctx, insertTimeout)
	defer cancel()
	insert := "INSERT INTO " + s.tables.Qualified(schema.Symbols) + " (" + symbolColumns + ")"
	if s.native != nil {
		return s.native.Insert(ctx, insert, nil, encodeRanges(tenant, buildID, version, rows))
	}
	b, err := s.conn.PrepareBatch(ctx, insert)
	if err != nil {
		return err
	}
	for i := range rows {
		r := &rows[i]
		funcs, files, lines := levels(r.Frames)
		if err := b.Append(tenant, buildID, r.Start, r.End, funcs, files, lines, version); err != nil {
			_ = b.Abort()
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	return b.Send()
}

func (s *Store) insertExecutable(ctx context.Context, tenant, source, fileName string, exe *Executable, version uint64) error {
	ctx, cancel := context.WithTimeout(ctx, insertTimeout)
	defer cancel()
	insert := "INSERT INTO " + s.tables.Qualified(schema.Executables) + " (" + executableColumns + ")"
	offs, vaddrs, sizes := segmentColumns(exe.Segments)
	if s.native != nil {
		return s.native.Insert(ctx, insert, nil, encodeExecutable(tenant, source, fileName, exe, version))
	}
	b, err := s.conn.PrepareBatch(ctx, insert)
	if err != nil {
		return err
	}
	err = b.Append(tenant, exe.BuildID, fileName, uint64(max(exe.Size, 0)), source, //nolint:gosec // G115: clamped
		exe.HasSymtab, exe.HasDynsym, exe.HasDwarf, exe.HasGoPclntab, uint64(len(exe.Ranges)),
		offs, vaddrs, sizes, time.UnixMilli(int64(version))) //nolint:gosec // G115: a time in ms
	if err != nil {
		_ = b.Abort()
		return err
	}
	return b.Send()
}

// levels splits an inline stack into the three array columns.
func levels(frames []Frame) (funcs, files []string, lines []uint32) {
	funcs, files, lines = make([]string, len(frames)), make([]string, len(frames)), make([]uint32, len(frames))
	for i, f := range frames {
		funcs[i], files[i], lines[i] = f.Function, f.File, f.Line
	}
	return funcs, files, lines
}

func segmentColumns(segs []Segment) (offs, vaddrs, sizes []uint64) {
	for _, s := range segs {
		offs, vaddrs, sizes = append(offs, s.Offset), append(vaddrs, s.Vaddr), append(sizes, s.Filesz)
	}
	return offs, vaddrs, sizes
}

// The Native blocks below follow ClickHouse's Native format as its HTTP
// interface reads it with FORMAT Native: column and row counts, then per
// column its name, type and data.

type block struct{ buf []byte }

func (b *block) start(cols, rows int) {
	b.buf = binary.AppendUvarint(b.buf, uint64(cols)) //nolint:gosec // G115: counts
	b.buf = binary.AppendUvarint(b.buf, uint64(rows)) //nolint:gosec // G115: counts
}

func (b *block) header(name, typ string) {
	b.str(name)
	b.str(typ)
}

func (b *block) str(s string) {
	b.buf = binary.AppendUvarint(b.buf, uint64(len(s)))
	b.buf = append(b.buf, s...)
}

func (b *block) u64(v uint64) { b.buf = binary.LittleEndian.AppendUint64(b.buf, v) }

// lowCardinality writes a LowCardinality(String) column whose rows all
// hold one value: the state prefix (shared dictionaries version), then
// flags (additional keys, update the dictionary, UInt8 indices), the
// one-entry dictionary and a zero index per row.
func (b *block) lowCardinality(name, value string, rows int) {
	b.header(name, "LowCardinality(String)")
	b.u64(1)
	b.u64(1<<9 | 1<<10)
	b.u64(1)
	b.str(value)
	b.u64(uint64(rows)) //nolint:gosec // G115: a count
	b.buf = append(b.buf, make([]byte, rows)...)
}

// offsets writes the cumulative end offsets of an array column.
func (b *block) offsets(n int, length func(i int) int) {
	var end uint64
	for i := range n {
		end += uint64(length(i)) //nolint:gosec // G115: lengths
		b.u64(end)
	}
}

func encodeRanges(tenant, buildID string, version uint64, rows []Range) []byte {
	b := &block{buf: make([]byte, 0, 64+len(rows)*96)}
	b.start(8, len(rows))
	b.lowCardinality("TenantId", tenant, len(rows))
	b.header("BuildId", "String")
	for range rows {
		b.str(buildID)
	}
	b.header("Start", "UInt64")
	for i := range rows {
		b.u64(rows[i].Start)
	}
	b.header("End", "UInt64")
	for i := range rows {
		b.u64(rows[i].End)
	}
	depth := func(i int) int { return len(rows[i].Frames) }
	b.header("Functions", "Array(String)")
	b.offsets(len(rows), depth)
	for i := range rows {
		for _, f := range rows[i].Frames {
			b.str(f.Function)
		}
	}
	b.header("Files", "Array(String)")
	b.offsets(len(rows), depth)
	for i := range rows {
		for _, f := range rows[i].Frames {
			b.str(f.File)
		}
	}
	b.header("Lines", "Array(UInt32)")
	b.offsets(len(rows), depth)
	for i := range rows {
		for _, f := range rows[i].Frames {
			b.buf = binary.LittleEndian.AppendUint32(b.buf, f.Line)
		}
	}
	b.header("Version", "UInt64")
	for range rows {
		b.u64(version)
	}
	return b.buf
}

func encodeExecutable(tenant, source, fileName string, exe *Executable, version uint64) []byte {
	b := &block{}
	b.start(14, 1)
	b.lowCardinality("TenantId", tenant, 1)
	b.header("BuildId", "String")
	b.str(exe.BuildID)
	b.header("FileName", "String")
	b.str(fileName)
	b.header("Size", "UInt64")
	b.u64(uint64(max(exe.Size, 0))) //nolint:gosec // G115: clamped
	b.lowCardinality("Source", source, 1)
	for _, flag := range []struct {
		name string
		v    bool
	}{{"HasSymtab", exe.HasSymtab}, {"HasDynsym", exe.HasDynsym}, {"HasDwarf", exe.HasDwarf}, {"HasGoPclntab", exe.HasGoPclntab}} {
		b.header(flag.name, "Bool")
		if flag.v {
			b.buf = append(b.buf, 1)
		} else {
			b.buf = append(b.buf, 0)
		}
	}
	b.header("Ranges", "UInt64")
	b.u64(uint64(len(exe.Ranges)))
	offs, vaddrs, sizes := segmentColumns(exe.Segments)
	for _, col := range []struct {
		name string
		v    []uint64
	}{{"SegmentOffsets", offs}, {"SegmentVaddrs", vaddrs}, {"SegmentSizes", sizes}} {
		b.header(col.name, "Array(UInt64)")
		b.u64(uint64(len(col.v)))
		for _, v := range col.v {
			b.u64(v)
		}
	}
	b.header("UpdatedAt", "DateTime64(3)")
	b.u64(version)
	return b.buf
}
