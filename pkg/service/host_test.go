package service

import (
	"context"
	"debug/elf"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/symbols"
	"github.com/flamehouse/flamehouse/pkg/symbols/debuginfod"
)

// hostFrame is one native frame of hostProfile: a mapping (file, build
// id, placement) and an address, nothing else.
type hostFrame struct {
	file, buildID              string
	start, limit, offset, addr uint64
}

// hostProfile is an OTLP request of service native-app with one stack
// through the given frames, leaf first.
func hostProfile(t *testing.T, frames ...hostFrame) []byte {
	t.Helper()
	b := otlpbuild.New()
	locs := make([]int32, 0, len(frames))
	for _, f := range frames {
		locs = append(locs, b.Location(b.Mapping(f.start, f.limit, f.offset, f.file, f.buildID), f.addr, "native"))
	}
	rp := b.Resource("service.name", "native-app")
	sp := otlpbuild.Scope(rp, "test", "1")
	now := uint64(time.Now().UnixNano())
	sp.Profiles = append(sp.Profiles, &pb.Profile{
		SampleType: b.ValueType("samples", "count"), PeriodType: b.ValueType("cpu", "nanoseconds"), Period: 10_000_000,
		TimeUnixNano: now - uint64(time.Second), DurationNano: uint64(time.Second),
		Samples: []*pb.Sample{{StackIndex: b.Stack(locs...), TimestampsUnixNano: []uint64{now - uint64(time.Second/2)}}},
	})
	payload, err := proto.Marshal(b.Request())
	require.NoError(t, err)
	return payload
}

// placed is a frame in fn of the file at path (built bin), its code
// segment mapped at base.
func placed(t *testing.T, path string, bin nativebin.Binary, fn string, base uint64) (hostFrame, uint64) {
	t.Helper()
	text := codeSegment(t, path)
	sym := bin.Func(t, fn)
	vaddr := sym.Addr + sym.Size/2
	return hostFrame{
		file: path, buildID: bin.BuildID, start: base + text.Vaddr, limit: base + text.Vaddr + text.Memsz, offset: text.Offset, addr: base + vaddr,
	}, vaddr
}

// TestHostFillsTheSymbolStore starts Flamehouse with no debuginfod server
// and the host source on (the default), with a debug dir laid out by build
// id. Frames carry only a mapping and an address:
//
//   - a gcc-built shared library lies at the mapping's path with the
//     frame's build id: stored with source host, the executables view
//     says host, and the flame graph names the frame as llvm-symbolizer
//     names the same file and address;
//   - a stripped PIE executable at the mapping's path, its debug file
//     (objcopy --only-keep-debug) under <debug dir>/.build-id/xx/rest.debug:
//     both found and combined (DWARF, the executable's segments), named
//     as llvm-symbolizer names them with the debug dir;
//   - the mapping's path holds a file with another build id: refused,
//     counted build_id_mismatch, no row.
func TestHostFillsTheSymbolStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	nativebin.Require(t, "gcc", "objcopy", "llvm-symbolizer")
	lib := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	prog := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	stripped, dbg := nativebin.Stripped(t, prog), nativebin.DebugOnly(t, prog)
	debugDir := nativebin.DebugDir(t, dbg)
	const claimed = "00112233445566778899aabbccddeeff00112233" // the frame's build id; the file at its path has another

	cfg := localConfig(t)
	cfg.SelfProfile.Enabled = false
	cfg.Schema.Retention = schema.Retention{}
	require.True(t, cfg.Symbols.Host.Enabled, "on by default")
	require.Empty(t, cfg.Symbols.Debuginfod.URLs)
	cfg.Symbols.Host.DebugDirs = []string{debugDir}
	ctx := context.Background()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			_ = svc.Stop(ctx)
		}
	}()
	_, httpAddr := svc.IngestAddresses()

	libFrame, libAddr := placed(t, lib.Path, lib, nativebin.FuncLibHelper, 0x7f1200000000)
	progFrame, progAddr := placed(t, stripped.Path, prog, nativebin.FuncWorkOuter, 0x55d0c0a00000)
	progFrame.buildID = prog.BuildID // the stripped file keeps the build id
	impostor := hostFrame{file: lib.Path, buildID: claimed, start: 0x7f3400000000, limit: 0x7f3400200000, addr: 0x7f3400001234}
	from := time.Now().Add(-time.Minute)
	postProfile(t, httpAddr, hostProfile(t, libFrame, progFrame, impostor))

	tenant := cfg.Ingest.Receiver.DefaultTenant
	type row struct {
		source, file string
		dwarf        bool
		segSizes     []uint64
	}
	stored := func(buildID string) (row, bool) {
		var r row
		err := svc.Conn().QueryRow(ctx, "SELECT Source, FileName, HasDwarf, SegmentSizes FROM "+cfg.Schema.Qualified(schema.Executables)+
			" WHERE TenantId = ? AND BuildId = ? ORDER BY UpdatedAt DESC LIMIT 1", tenant, buildID).Scan(&r.source, &r.file, &r.dwarf, &r.segSizes)
		return r, err == nil
	}
	metrics := func() string {
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}
	waitFor(t, "both build ids stored, the impostor refused", func() bool {
		_, libOK := stored(lib.BuildID)
		p, progOK := stored(prog.BuildID)
		return libOK && progOK && p.dwarf && !slices.Contains(p.segSizes, 0) &&
			metricValue(metrics(), `flamehouse_symbols_debuginfod_failed_total{reason="build_id_mismatch"}`) == 1
	})
	l, _ := stored(lib.BuildID)
	require.Equal(t, row{source: symbols.SourceHost, file: lib.Path, dwarf: true, segSizes: l.segSizes}, l)
	p, _ := stored(prog.BuildID)
	require.Equal(t, symbols.SourceHost, p.source)
	require.Equal(t, stripped.Path, p.file)
	_, ok := stored(claimed)
	require.False(t, ok, "a file whose build id is not the frame's is never stored")
	m := metrics()
	require.InDelta(t, 2, metricValue(m, `flamehouse_symbols_host_found_total{artifact="executable"}`), 0, "the library and the stripped executable")
	require.InDelta(t, 1, metricValue(m, `flamehouse_symbols_host_found_total{artifact="debuginfo"}`), 0, "the debug dir's file")
	require.InDelta(t, 0, metricValue(m, `flamehouse_symbols_debuginfod_fetched_total{artifact="debuginfo"}`), 0, "no server")

	// The flame graph names the frames as llvm-symbolizer names the same
	// files and addresses (the stripped one through the debug dir).
	engine := &query.Engine{Conn: svc.Conn(), Tables: cfg.Schema}
	to := time.Now().Add(time.Minute)
	frames, err := run(ctx, engine, from, to, map[string]any{"queryType": "profile", "profileTypeId": cpuType, "labelSelector": `{service_name="native-app"}`})
	require.NoError(t, err)
	labels := frames[0].Fields[3].Config.TypeConfig.Enum.Text
	want := nativebin.Symbolize(t, lib.Path, []uint64{libAddr})[0]
	want = append(want, nativebin.SymbolizeWith(t, stripped.Path, []uint64{progAddr}, "--debug-file-directory="+debugDir)[0]...)
	require.NotEmpty(t, want)
	for _, f := range want {
		require.NotEmpty(t, f.Function)
		require.Contains(t, labels, f.Function, "llvm-symbolizer's %+v; labels %v", f, labels)
	}
	require.Contains(t, labels, nativebin.FuncLibHelper)
	require.Contains(t, labels, nativebin.FuncWorkOuter)
	require.Contains(t, labels, "["+filepath.Base(lib.Path)+"]", "the impostor's frame keeps its label: %v", labels)

	// The executables view says where the names came from.
	frames, err = run(ctx, engine, from, to, map[string]any{"queryType": "executables", "profileTypeId": cpuType, "labelSelector": `{service_name="native-app"}`})
	require.NoError(t, err)
	sources := map[string]string{}
	for i := range frames[0].Rows() {
		sources[cell[string](frames[0], "buildId", i)] = cell[string](frames[0], "source", i)
	}
	require.Equal(t, map[string]string{lib.BuildID: query.SourceHost, prog.BuildID: query.SourceHost, claimed: query.SourceNone}, sources)

	stopped = true
	require.NoError(t, svc.Stop(ctx), "clean stop")
}

func TestSymbolsHostConfig(t *testing.T) {
	defaults := DefaultConfig()
	require.True(t, defaults.Symbols.Host.Enabled)
	require.Equal(t, []string{"/usr/lib/debug"}, []string(defaults.Symbols.Host.DebugDirs))

	path := writeFile(t, `
symbols:
  host:
    debug_dirs: [/usr/lib/debug, /opt/debug]
`)
	cfg, _, err := ParseConfig("run", []string{"-config.file", path})
	require.NoError(t, err)
	require.True(t, cfg.Symbols.Host.Enabled, "unset keys keep their defaults")
	require.Equal(t, []string{"/usr/lib/debug", "/opt/debug"}, []string(cfg.Symbols.Host.DebugDirs))
	require.NoError(t, cfg.Validate())

	cfg, _, err = ParseConfig("run", []string{"-symbols.host.enabled=false", "-symbols.host.debug-dirs", "/a, relative"})
	require.NoError(t, err)
	require.False(t, cfg.Symbols.Host.Enabled)
	require.ErrorContains(t, cfg.Validate(), `symbols: host: debug_dirs[1]: "relative" is not an absolute path`)
}

// TestHostNamesTheSelfProfile is the README demo's case: Flamehouse
// profiles itself, and the engine's threads run in libc.so.6 and
// libchdb.so, which the self-profile's frames name by mapping and build id
// only. With the host source on and no debuginfod, the files mapped into
// this very process are found by build id, stored with source host, and
// the self-profile's libc frames get names: at every sampled address the
// stored inline stack is llvm-symbolizer's on the mapped file (aliases of
// one function accepted), and the flame graph shows them. Twice: with the
// mapping path alone (libc's .dynsym: exported functions), and, when
// Debian's libc6-dbg is installed, with /usr/lib/debug (DWARF).
func TestHostNamesTheSelfProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	nativebin.Require(t, "llvm-symbolizer")
	t.Run("dynsym", func(t *testing.T) { selfProfileNamed(t, nil, false) })
	t.Run("libc6-dbg", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(debuginfod.DefaultDebugDir, ".build-id")); err != nil {
			t.Skipf("no debug files under %s (Debian: apt-get install libc6-dbg; scripts/setup.sh does): %v", debuginfod.DefaultDebugDir, err)
		}
		selfProfileNamed(t, []string{debuginfod.DefaultDebugDir}, true)
	})
}

// libcFrame is an unsymbolized self-profile frame in libc.so.6.
type libcFrame struct {
	file, buildID             string
	addr, mapStart, mapOffset uint64
}

func selfProfileNamed(t *testing.T, debugDirs []string, wantDwarf bool) {
	t.Helper()
	cfg := localConfig(t)
	cfg.SelfProfile.Interval = 2 * time.Second
	cfg.Schema.Retention = schema.Retention{}
	cfg.Symbols.Host.DebugDirs = debugDirs
	ctx := context.Background()
	start := time.Now()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			_ = svc.Stop(ctx)
		}
	}()
	busy, stopBusy := context.WithCancel(ctx)
	defer stopBusy()
	go func() { // keep the engine's threads (libchdb, libc) on the CPU
		for busy.Err() == nil {
			_ = svc.Conn().Exec(busy, "SELECT sum(cityHash64(number)) FROM numbers(20000000)")
		}
	}()
	tenant := cfg.Ingest.Receiver.DefaultTenant

	// Poll until libc's row is stored and some sampled address lies in a
	// stored range (with .dynsym alone, in an exported function).
	var (
		vas   []uint64
		file  string
		exe   *symbols.Executable
		dwarf bool
		found map[uint64][]string // stored inline stacks, innermost first
	)
	waitFor(t, "self-profile frames in libc.so.6 named from the stored symbols", func() bool {
		frames := libcFrames(t, svc, cfg)
		if len(frames) == 0 {
			return false
		}
		var source string
		if svc.Conn().QueryRow(ctx, "SELECT Source, HasDwarf FROM "+cfg.Schema.Qualified(schema.Executables)+
			" WHERE TenantId = ? AND BuildId = ? ORDER BY UpdatedAt DESC LIMIT 1", tenant, frames[0].buildID).Scan(&source, &dwarf) != nil {
			return false
		}
		require.Equal(t, symbols.SourceHost, source)
		if exe == nil {
			file = frames[0].file
			exe = extractFile(t, file, frames[0].buildID)
		}
		vas, found = vas[:0], map[uint64][]string{}
		for _, fr := range frames {
			va, ok := symbols.VA(fr.addr, fr.mapStart, fr.mapOffset, exe.Segments)
			if fr.buildID != exe.BuildID || !ok {
				continue
			}
			vas = append(vas, va)
			var fns []string
			if svc.Conn().QueryRow(ctx, "SELECT Functions FROM "+cfg.Schema.Qualified(schema.Symbols)+" WHERE TenantId = ? AND BuildId = ? "+
				"AND Version = (SELECT max(Version) FROM "+cfg.Schema.Qualified(schema.Symbols)+" WHERE TenantId = ? AND BuildId = ?) AND Start <= ? AND ? < End LIMIT 1",
				tenant, exe.BuildID, tenant, exe.BuildID, va, va).Scan(&fns) == nil && len(fns) > 0 {
				found[va] = fns
			}
		}
		return len(found) > 0
	})
	t.Logf("%s (%s): stored from the host, DWARF %v; %d of %d sampled addresses named, %.1f s after start",
		file, exe.BuildID, dwarf, len(found), len(vas), time.Since(start).Seconds())
	require.Equal(t, wantDwarf, dwarf, "DWARF exactly when the debug dir holds libc's debug file")

	// Every stored stack is llvm-symbolizer's, innermost first: the
	// inline stack with the debug file, else one exported function. A
	// function with several names (glibc's pread64, __pread64,
	// __libc_pread64) may be named by another alias: the store takes the
	// symbol table's (symtab.go), versions included
	// ("pthread_cond_signal@@GLIBC_2.3.2"), llvm-symbolizer DWARF's.
	// llvm-symbolizer looks where the host source looks: the debug dirs
	// given (an empty one for none: else it reads /usr/lib/debug).
	named := requireNamedLikeLLVMSymbolizer(t, file, exe, debugDirs, vas, found)
	require.NotEmpty(t, named)

	frames, err := run(ctx, &query.Engine{Conn: svc.Conn(), Tables: cfg.Schema}, start.Add(-time.Minute), time.Now().Add(time.Minute),
		map[string]any{"queryType": "profile", "profileTypeId": cpuType, "labelSelector": demoSel})
	require.NoError(t, err)
	labels := frames[0].Fields[3].Config.TypeConfig.Enum.Text
	for name := range named {
		require.Contains(t, labels, name, "the flame graph names the libc frame")
	}
	t.Logf("libc functions named in the self-profile: %v", slices.Sorted(maps.Keys(named)))
	var chdbRanges uint64
	var chdbSource string
	if svc.Conn().QueryRow(ctx, "SELECT Source, Ranges FROM "+cfg.Schema.Qualified(schema.Executables)+" WHERE endsWith(FileName, '/libchdb.so') LIMIT 1").
		Scan(&chdbSource, &chdbRanges) == nil {
		t.Logf("libchdb.so: source %s, %d ranges (its .dynsym: the chdb_* API only)", chdbSource, chdbRanges)
	}

	stopBusy()
	stopped = true
	require.NoError(t, svc.Stop(ctx), "clean stop")
}

// requireNamedLikeLLVMSymbolizer: the stored inline stack of each sampled
// address (found) is llvm-symbolizer's, level by level, up to aliases of
// one function; it returns the functions named.
func requireNamedLikeLLVMSymbolizer(t *testing.T, file string, exe *symbols.Executable, debugDirs []string, vas []uint64, found map[uint64][]string) map[string]bool {
	t.Helper()
	oracleDir := t.TempDir()
	debugFiles := []string{file}
	if len(debugDirs) > 0 {
		oracleDir = debugDirs[0]
		debugFiles = append(debugFiles, filepath.Join(oracleDir, ".build-id", exe.BuildID[:2], exe.BuildID[2:]+".debug"))
	}
	oracle := nativebin.SymbolizeWith(t, file, vas, "--debug-file-directory="+oracleDir)
	at := functionAddrs(t, debugFiles...)
	named := map[string]bool{}
	for i, va := range vas {
		fns, ok := found[va]
		if !ok {
			continue // not in an exported function (.dynsym), or in code DWARF names no function in
		}
		want := make([]string, 0, len(oracle[i]))
		for _, fr := range oracle[i] {
			want = append(want, fr.Function)
		}
		require.Len(t, fns, len(want), "0x%x: stored %v, llvm-symbolizer %v", va, fns, want)
		for lvl := range want {
			if fns[lvl] != want[lvl] {
				got, wanted := unversioned(fns[lvl]), unversioned(want[lvl])
				require.True(t, got == wanted || slices.ContainsFunc(at[wanted], func(a uint64) bool { return slices.Contains(at[got], a) }),
					"0x%x level %d: stored %q, llvm-symbolizer %q, not aliases of one function", va, lvl, fns[lvl], want[lvl])
			}
		}
		for _, fn := range fns {
			named[fn] = true
		}
	}
	return named
}

// libcFrames reads the self-profile's distinct unsymbolized frames in
// libc.so.6 (with a build id).
func libcFrames(t *testing.T, svc *Service, cfg Config) []libcFrame {
	t.Helper()
	rows, err := svc.Conn().Query(context.Background(), "SELECT DISTINCT MappingFile, BuildId, Address, MappingStart, MappingOffset FROM "+
		cfg.Schema.Qualified(schema.Frames)+" WHERE ServiceName = 'flamehouse' AND endsWith(MappingFile, '/libc.so.6') AND BuildId != '' "+
		"AND FunctionName = '' AND Address != 0 LIMIT 100")
	require.NoError(t, err)
	defer func() { _ = rows.Close() }()
	var out []libcFrame
	for rows.Next() {
		var f libcFrame
		require.NoError(t, rows.Scan(&f.file, &f.buildID, &f.addr, &f.mapStart, &f.mapOffset))
		out = append(out, f)
	}
	require.NoError(t, rows.Err())
	return out
}

// extractFile reads a file's symbols, checking its build id.
func extractFile(t *testing.T, path, buildID string) *symbols.Executable {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	require.NoError(t, err)
	exe, err := symbols.ExtractWith(f, st.Size(), symbols.Options{ExpectBuildID: buildID})
	require.NoError(t, err, "the mapped file is the one the frames name")
	return exe
}

// functionAddrs maps the function symbols of the files that exist among
// paths (.dynsym and .symtab, versions dropped) to their addresses.
func functionAddrs(t *testing.T, paths ...string) map[string][]uint64 {
	t.Helper()
	out := map[string][]uint64{}
	for _, p := range paths {
		ef, err := elf.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		dyn, _ := ef.DynamicSymbols()
		syms, _ := ef.Symbols()
		for _, s := range append(dyn, syms...) {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC || elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC {
				out[unversioned(s.Name)] = append(out[unversioned(s.Name)], s.Value)
			}
		}
		require.NoError(t, ef.Close())
	}
	return out
}

// unversioned drops a symbol version: "memcpy@GLIBC_2.2.5" is memcpy.
//
// It also drops the suffix GCC gives a function's clones
// ("msort_with_tmp.part.0", ".isra.0", ".constprop.0", ".cold"): the
// symbol table names the clone, DWARF (and so llvm-symbolizer) the
// function it was cloned from.
func unversioned(name string) string {
	name, _, _ = strings.Cut(name, "@")
	for _, clone := range []string{".part.", ".isra.", ".constprop.", ".lto_priv.", ".cold"} {
		if i := strings.Index(name, clone); i > 0 {
			name = name[:i]
		}
	}
	return name
}
