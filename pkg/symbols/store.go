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
	SourceHost       = "ingest host" // found on the ingest's own machine by build id (not "on host": names the sender sent)
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
	// Merged says how an earlier upload of the same build id was combined
	// with this one ("" when it was not): see Put.
	Merged string
}

// Put writes an executable's ranges for a tenant, in batches, then its
// profile_executables row: a row there means its symbols are complete.
// An earlier upload of the same build id stays until merges replace it;
// readers take the ranges of the Version the executable row names.
//
// A stripped executable and its separate debug file share a build id and
// may arrive in either order; each holds half of what resolution needs:
// the debug file the symbols, the executable the PT_LOAD segments (a
// debug file's have no file size, so the address rule finds nothing in
// them). Put therefore combines the upload with the stored row of the
// same build id:
//
//   - a file with unusable segments (a debug file) takes the stored
//     segments, file name and size when those segments are usable;
//   - a file with poorer symbols than the stored ones (by kind: DWARF,
//     then Go pclntab, then .symtab, then .dynsym) keeps the stored
//     ranges (copied to the new Version inside ClickHouse) and only
//     contributes its segments and file name, when its segments are
//     usable and the stored ones are not; otherwise nothing is written.
func (s *Store) Put(ctx context.Context, tenant, source, fileName string, exe *Executable) (Stored, error) {
	if exe == nil || exe.BuildID == "" {
		return Stored{}, errors.New("store symbols: no executable or no build id")
	}
	version := uint64(s.Now().UnixMilli())
	out := Stored{BuildID: exe.BuildID, Version: version}
	prev, err := s.current(ctx, tenant, exe.BuildID)
	if err != nil {
		return out, err
	}
	row := executableRow{
		fileName: fileName, size: exe.Size, source: source,
		symtab: exe.HasSymtab, dynsym: exe.HasDynsym, dwarf: exe.HasDwarf, pclntab: exe.HasGoPclntab,
		ranges: uint64(len(exe.Ranges)), segs: exe.Segments,
	}
	if prev != nil && !row.usableSegments() && prev.usableSegments() {
		row.segs, row.fileName, row.size = prev.segs, prev.fileName, prev.size
		out.Merged = "segments and file name taken from the stored upload of the executable (" + prev.fileName + ")"
	}
	if prev != nil && prev.rank() > row.rank() {
		if row.usableSegments() && !prev.usableSegments() {
			return s.keepRanges(ctx, tenant, exe.BuildID, version, prev, row)
		}
		out.Version = prev.version
		out.Merged = "nothing written: the stored symbols (" + prev.fileName + ", " + prev.kinds() + ") are richer and its segments usable"
		return out, nil
	}
	batch := max(s.BatchRows, 1)
	for start := 0; start < len(exe.Ranges); start += batch {
		rows := exe.Ranges[start:min(start+batch, len(exe.Ranges))]
		if err := s.insertRanges(ctx, tenant, exe.BuildID, version, rows); err != nil {
			return out, fmt.Errorf("store symbols of %s: insert into %s: %w", exe.BuildID, s.tables.Name(schema.Symbols), err)
		}
		out.Ranges += len(rows)
	}
	if err := s.insertExecutable(ctx, tenant, exe.BuildID, row, version); err != nil {
		return out, fmt.Errorf("store symbols of %s: insert into %s: %w", exe.BuildID, s.tables.Name(schema.Executables), err)
	}
	return out, nil
}

// keepRanges stores an executable's segments and file name with the
// richer symbols stored earlier: their ranges are copied to the new
// version inside ClickHouse, then the executable row is written.
func (s *Store) keepRanges(ctx context.Context, tenant, buildID string, version uint64, prev *executableRow, row executableRow) (Stored, error) {
	out := Stored{
		BuildID: buildID, Version: version, Ranges: int(min(prev.ranges, 1<<62)),
		Merged: "kept the stored symbols (" + prev.fileName + ", " + prev.kinds() + "), with this file's segments",
	}
	cctx, cancel := context.WithTimeout(ctx, insertTimeout)
	defer cancel()
	copyRanges := "INSERT INTO " + s.tables.Qualified(schema.Symbols) + " (" + symbolColumns + ") " +
		"SELECT TenantId, BuildId, Start, End, Functions, Files, Lines, toUInt64(?) FROM " + s.tables.Qualified(schema.Symbols) +
		" WHERE TenantId = ? AND BuildId = ? AND Version = ?"
	if err := s.conn.Exec(cctx, copyRanges, version, tenant, buildID, prev.version); err != nil {
		return out, fmt.Errorf("store symbols of %s: copy the stored ranges: %w", buildID, err)
	}
	kept := *prev
	kept.fileName, kept.size, kept.source, kept.segs = row.fileName, row.size, row.source, row.segs
	if err := s.insertExecutable(ctx, tenant, buildID, kept, version); err != nil {
		return out, fmt.Errorf("store symbols of %s: insert into %s: %w", buildID, s.tables.Name(schema.Executables), err)
	}
	return out, nil
}

// executableRow is one profile_executables row.
type executableRow struct {
	fileName, source               string
	size                           int64
	symtab, dynsym, dwarf, pclntab bool
	ranges                         uint64
	segs                           []Segment
	version                        uint64 // UpdatedAt in ms (stored rows)
}

// rank orders the kinds of symbols: DWARF (inline stacks and lines), Go
// pclntab (lines), .symtab (every function), .dynsym (exported ones).
func (r *executableRow) rank() int {
	switch {
	case r.dwarf:
		return 4
	case r.pclntab:
		return 3
	case r.symtab:
		return 2
	case r.dynsym:
		return 1
	}
	return 0
}

func (r *executableRow) kinds() string {
	e := Executable{HasSymtab: r.symtab, HasDynsym: r.dynsym, HasDwarf: r.dwarf, HasGoPclntab: r.pclntab}
	return e.Sources()
}

// usableSegments reports whether the row's segments can place a
// mapping's addresses (UsableSegments).
func (r *executableRow) usableSegments() bool { return UsableSegments(r.segs) }

// current reads the newest stored row of a build id, nil when none.
func (s *Store) current(ctx context.Context, tenant, buildID string) (*executableRow, error) {
	q := "SELECT FileName, Size, Source, HasSymtab, HasDynsym, HasDwarf, HasGoPclntab, Ranges, SegmentOffsets, SegmentVaddrs, SegmentSizes, " +
		"toUInt64(toUnixTimestamp64Milli(UpdatedAt)) FROM " + s.tables.Qualified(schema.Executables) +
		" WHERE TenantId = ? AND BuildId = ? ORDER BY UpdatedAt DESC LIMIT 1"
	rows, err := s.conn.Query(ctx, q, tenant, buildID)
	if err != nil {
		return nil, fmt.Errorf("read the stored symbols of %s: %w", buildID, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	var r executableRow
	var size uint64
	var offs, vaddrs, sizes []uint64
	if err := rows.Scan(&r.fileName, &size, &r.source, &r.symtab, &r.dynsym, &r.dwarf, &r.pclntab, &r.ranges,
		&offs, &vaddrs, &sizes, &r.version); err != nil {
		return nil, fmt.Errorf("read the stored symbols of %s: %w", buildID, err)
	}
	r.size = int64(min(size, 1<<62))
	for i := range min(len(offs), len(vaddrs), len(sizes)) {
		r.segs = append(r.segs, Segment{Offset: offs[i], Vaddr: vaddrs[i], Filesz: sizes[i]})
	}
	return &r, rows.Err()
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

func (s *Store) insertExecutable(ctx context.Context, tenant, buildID string, row executableRow, version uint64) error {
	ctx, cancel := context.WithTimeout(ctx, insertTimeout)
	defer cancel()
	insert := "INSERT INTO " + s.tables.Qualified(schema.Executables) + " (" + executableColumns + ")"
	if s.native != nil {
		return s.native.Insert(ctx, insert, nil, encodeExecutable(tenant, buildID, row, version))
	}
	offs, vaddrs, sizes := segmentColumns(row.segs)
	b, err := s.conn.PrepareBatch(ctx, insert)
	if err != nil {
		return err
	}
	err = b.Append(tenant, buildID, row.fileName, uint64(max(row.size, 0)), row.source,
		row.symtab, row.dynsym, row.dwarf, row.pclntab, row.ranges,
		offs, vaddrs, sizes, time.UnixMilli(int64(version)))
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
	b.buf = binary.AppendUvarint(b.buf, uint64(cols))
	b.buf = binary.AppendUvarint(b.buf, uint64(rows))
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
	b.u64(uint64(rows))
	b.buf = append(b.buf, make([]byte, rows)...)
}

// offsets writes the cumulative end offsets of an array column.
func (b *block) offsets(n int, length func(i int) int) {
	var end uint64
	for i := range n {
		end += uint64(length(i))
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

func encodeExecutable(tenant, buildID string, row executableRow, version uint64) []byte {
	b := &block{}
	b.start(14, 1)
	b.lowCardinality("TenantId", tenant, 1)
	b.header("BuildId", "String")
	b.str(buildID)
	b.header("FileName", "String")
	b.str(row.fileName)
	b.header("Size", "UInt64")
	b.u64(uint64(max(row.size, 0)))
	b.lowCardinality("Source", row.source, 1)
	for _, flag := range []struct {
		name string
		v    bool
	}{{"HasSymtab", row.symtab}, {"HasDynsym", row.dynsym}, {"HasDwarf", row.dwarf}, {"HasGoPclntab", row.pclntab}} {
		b.header(flag.name, "Bool")
		if flag.v {
			b.buf = append(b.buf, 1)
		} else {
			b.buf = append(b.buf, 0)
		}
	}
	b.header("Ranges", "UInt64")
	b.u64(row.ranges)
	offs, vaddrs, sizes := segmentColumns(row.segs)
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
