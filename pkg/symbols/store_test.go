package symbols_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

func TestMain(m *testing.M) { chtest.Main(m) }

// migratedTables returns the schema config of a new migrated database,
// dropped after the test, and a connection.
func migratedTables(t *testing.T) (schema.Config, clickhouse.Conn, *chtest.Server) {
	t.Helper()
	srv := chtest.Get(t)
	conn := srv.Open(t)
	var b [5]byte
	_, _ = rand.Read(b[:])
	cfg := schema.DefaultConfig()
	cfg.Database = "symbols_" + hex.EncodeToString(b[:])
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+cfg.Database) })
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	_, err = m.Migrate(t.Context())
	require.NoError(t, err)
	return cfg, conn, srv
}

// storedExecutable is a profile_executables row as read back.
type storedExecutable struct {
	FileName, Source                             string
	HasSymtab, HasDynsym, HasDwarf, HasGoPclntab bool
	Ranges                                       uint64
	Offsets, Vaddrs, Sizes                       []uint64
	Version                                      uint64
}

// ReadExecutable reads the newest profile_executables row of a build id.
func readExecutable(t *testing.T, conn clickhouse.Conn, cfg schema.Config, tenant, buildID string) (storedExecutable, bool) {
	t.Helper()
	var e storedExecutable
	rows, err := conn.Query(t.Context(), "SELECT FileName, Source, HasSymtab, HasDynsym, HasDwarf, HasGoPclntab, Ranges, "+
		"SegmentOffsets, SegmentVaddrs, SegmentSizes, toUInt64(toUnixTimestamp64Milli(UpdatedAt)) FROM "+cfg.Qualified(schema.Executables)+
		" WHERE TenantId = ? AND BuildId = ? ORDER BY UpdatedAt DESC LIMIT 1", tenant, buildID)
	require.NoError(t, err)
	defer rows.Close()
	if !rows.Next() {
		require.NoError(t, rows.Err())
		return e, false
	}
	require.NoError(t, rows.Scan(&e.FileName, &e.Source, &e.HasSymtab, &e.HasDynsym, &e.HasDwarf, &e.HasGoPclntab, &e.Ranges,
		&e.Offsets, &e.Vaddrs, &e.Sizes, &e.Version))
	return e, true
}

// countRanges counts the stored ranges of one version.
func countRanges(t *testing.T, conn clickhouse.Conn, cfg schema.Config, tenant, buildID string, version uint64) uint64 {
	t.Helper()
	var n uint64
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT count() FROM "+cfg.Qualified(schema.Symbols)+
		" WHERE TenantId = ? AND BuildId = ? AND Version = ?", tenant, buildID, version).Scan(&n))
	return n
}

// lookupStored answers one address from the stored ranges of a version.
func lookupStored(t *testing.T, conn clickhouse.Conn, cfg schema.Config, tenant, buildID string, version, va uint64) []symbols.Frame {
	t.Helper()
	var funcs, files []string
	var lines []uint32
	err := conn.QueryRow(t.Context(), "SELECT Functions, Files, Lines FROM "+cfg.Qualified(schema.Symbols)+
		" WHERE TenantId = ? AND BuildId = ? AND Version = ? AND Start <= ? AND ? < End", tenant, buildID, version, va, va).
		Scan(&funcs, &files, &lines)
	require.NoError(t, err, "address %#x", va)
	out := make([]symbols.Frame, len(funcs))
	for i := range funcs {
		out[i] = symbols.Frame{Function: funcs[i], File: files[i], Line: lines[i]}
	}
	return out
}

// TestStorePutReadsBack writes an executable's symbols through both insert
// paths (Native blocks over HTTP and clickhouse-go batches) and reads them
// back: the executable row, every range, and the inline stacks of
// addresses inside inlined code.
func TestStorePutReadsBack(t *testing.T) {
	nativebin.Require(t, "gcc")
	cfg, conn, srv := migratedTables(t)
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	exe := extractFile(t, bin.Path)
	for _, tc := range []struct {
		name   string
		tenant string
		native symbols.NativeInserter
	}{{"native-blocks", "tenant-native", nil}, {"clickhouse-go", "tenant-batch", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			native := tc.native
			if tc.name == "native-blocks" {
				n := srv.NativeInserter(t)
				if n == nil {
					t.Skip("the server is reached over the native protocol: no Native-over-HTTP inserter")
				}
				native = n
			}
			store := symbols.NewStore(cfg, conn, native)
			store.BatchRows = 7 // several batches
			stored, err := store.Put(t.Context(), tc.tenant, symbols.SourceUpload, "prog", exe)
			require.NoError(t, err)
			require.Equal(t, len(exe.Ranges), stored.Ranges)
			require.Empty(t, stored.Merged)

			row, ok := readExecutable(t, conn, cfg, tc.tenant, bin.BuildID)
			require.True(t, ok)
			require.Equal(t, "prog", row.FileName)
			require.Equal(t, symbols.SourceUpload, row.Source)
			require.True(t, row.HasSymtab)
			require.True(t, row.HasDwarf)
			require.False(t, row.HasGoPclntab)
			require.Equal(t, uint64(len(exe.Ranges)), row.Ranges)
			require.Equal(t, stored.Version, row.Version)
			require.Len(t, row.Offsets, len(exe.Segments))
			for i, sg := range exe.Segments {
				require.Equal(t, []uint64{sg.Offset, sg.Vaddr, sg.Filesz}, []uint64{row.Offsets[i], row.Vaddrs[i], row.Sizes[i]})
			}
			require.Equal(t, uint64(len(exe.Ranges)), countRanges(t, conn, cfg, tc.tenant, bin.BuildID, stored.Version))
			for _, va := range append(bin.InlinedAddrs(t), bin.Inside(t, nativebin.FuncWorkOuter)...) {
				require.Equal(t, lookup(exe, va), lookupStored(t, conn, cfg, tc.tenant, bin.BuildID, stored.Version, va), "%#x", va)
			}
			has, err := store.Has(t.Context(), tc.tenant, bin.BuildID)
			require.NoError(t, err)
			require.True(t, has)
			has, err = store.Has(t.Context(), "another-tenant", bin.BuildID)
			require.NoError(t, err)
			require.False(t, has, "symbols are per tenant")
		})
	}
}

// TestStoreCombinesExecutableAndDebugFile uploads a stripped executable
// and its separate debug file in both orders: either way the store ends
// with the debug file's DWARF ranges and the executable's segments.
func TestStoreCombinesExecutableAndDebugFile(t *testing.T) {
	nativebin.Require(t, "gcc", "objcopy")
	cfg, conn, _ := migratedTables(t)
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	stripped := extractFile(t, nativebin.Stripped(t, bin).Path)
	debug := extractFile(t, nativebin.DebugOnly(t, bin).Path)
	require.True(t, debug.HasDwarf)
	require.False(t, stripped.HasDwarf)
	clock := time.UnixMilli(1_700_000_000_000)
	store := symbols.NewStore(cfg, conn, nil)
	store.Now = func() time.Time { clock = clock.Add(time.Second); return clock }

	for _, order := range []struct {
		name   string
		tenant string
		first  *symbols.Executable
		second *symbols.Executable
		names  [2]string
	}{
		{"executable-first", "t1", stripped, debug, [2]string{"libprog.so", "libprog.so.debug"}},
		{"debug-file-first", "t2", debug, stripped, [2]string{"libprog.so.debug", "libprog.so"}},
	} {
		t.Run(order.name, func(t *testing.T) {
			_, err := store.Put(t.Context(), order.tenant, symbols.SourceUpload, order.names[0], order.first)
			require.NoError(t, err)
			second, err := store.Put(t.Context(), order.tenant, symbols.SourceUpload, order.names[1], order.second)
			require.NoError(t, err)
			require.NotEmpty(t, second.Merged)
			row, ok := readExecutable(t, conn, cfg, order.tenant, bin.BuildID)
			require.True(t, ok)
			require.Equal(t, second.Version, row.Version)
			require.True(t, row.HasDwarf, "the debug file's symbols")
			require.Equal(t, "libprog.so", row.FileName, "the executable's name")
			require.Equal(t, uint64(len(debug.Ranges)), row.Ranges)
			require.Equal(t, row.Ranges, countRanges(t, conn, cfg, order.tenant, bin.BuildID, row.Version))
			require.Len(t, row.Sizes, len(stripped.Segments))
			for i, sg := range stripped.Segments {
				require.Equal(t, sg.Filesz, row.Sizes[i], "the executable's segments")
				require.Equal(t, sg.Offset, row.Offsets[i])
			}
			// The address rule places the library's code with them.
			segs := make([]symbols.Segment, len(row.Sizes))
			for i := range segs {
				segs[i] = symbols.Segment{Offset: row.Offsets[i], Vaddr: row.Vaddrs[i], Filesz: row.Sizes[i]}
			}
			fn := bin.Func(t, nativebin.FuncLibHelper)
			const base = 0x7f1200000000
			va, ok := symbols.VA(base+fn.Addr, base, 0, segs) // mapped from offset 0, as ld.so maps the first segment
			require.True(t, ok)
			frames := lookupStored(t, conn, cfg, order.tenant, bin.BuildID, row.Version, va)
			require.Equal(t, nativebin.FuncLibHelper, frames[len(frames)-1].Function)
			require.NotZero(t, frames[0].Line)
		})
	}

	t.Run("poorer-upload-changes-nothing", func(t *testing.T) {
		before, _ := readExecutable(t, conn, cfg, "t1", bin.BuildID)
		again, err := store.Put(t.Context(), "t1", symbols.SourceUpload, "libprog.so", stripped)
		require.NoError(t, err)
		require.Zero(t, again.Ranges)
		require.Contains(t, again.Merged, "nothing written")
		after, _ := readExecutable(t, conn, cfg, "t1", bin.BuildID)
		require.Equal(t, before, after)
	})
}
