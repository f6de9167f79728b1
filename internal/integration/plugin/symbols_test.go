package plugin

import (
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// Query-time symbolization, end to end: programs built with gcc and g++,
// frames sent through the real ingest carrying only a mapping (placed the
// way a process maps the file), a build id and an address, symbols stored
// with symbols.Extract and symbols.Store, and every label of the flame
// graph checked against llvm-symbolizer on the same file and address.

const (
	// pieBase and libBase are the load bases of PIE executables and
	// shared libraries, as the kernel and ld.so would pick them.
	pieBase = 0x7f0000000000
	libBase = 0x7f1000000000
	// probePeriod is the profiles' sampling period (20 Hz).
	probePeriod = 50_000_000
)

// placed is a built file as a process maps it.
type placed struct {
	bin nativebin.Binary
	// base is the load base (0 for a non-PIE executable).
	base uint64
	// name is the mapping's file name.
	name string
}

// mapping returns the process mapping that holds the file's virtual
// address va: its PT_LOAD segment, mapped page-aligned at the load base,
// as /proc/<pid>/maps and the OTLP mapping show it.
func (p placed) mapping(t testing.TB, va uint64) (start, limit, offset uint64) {
	t.Helper()
	f, err := elf.Open(p.bin.Path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	const page = 0xfff
	for _, ph := range f.Progs {
		if ph.Type == elf.PT_LOAD && va >= ph.Vaddr && va < ph.Vaddr+ph.Memsz {
			return p.base + ph.Vaddr&^page, p.base + (ph.Vaddr+ph.Memsz+page)&^page, ph.Off &^ page
		}
	}
	t.Fatalf("%s: no PT_LOAD segment holds 0x%x", p.bin.Path, va)
	return 0, 0, 0
}

// probe is one sampled address: a stack of a named root frame (marker),
// which tells the probes apart in the flame graph, and the unsymbolized
// native frame under it.
type probe struct {
	marker  string
	file    placed
	va      uint64 // the file's virtual address
	samples int
}

// probeRequest is an OTLP request shaped like the eBPF profiler's: a CPU
// profile whose native frames carry only their mapping (start, limit,
// file offset, file name, GNU build id) and an address.
func probeRequest(t testing.TB, at time.Time, service string, probes []probe) *collectorpb.ExportProfilesServiceRequest {
	t.Helper()
	b := otlpbuild.New()
	rp := b.Resource("service.name", service, "process.executable.name", service)
	sp := otlpbuild.Scope(rp, "go.opentelemetry.io/ebpf-profiler", "v0.0.202633")
	p := &pb.Profile{
		SampleType: b.ValueType("samples", "count"), PeriodType: b.ValueType("cpu", "nanoseconds"),
		Period: probePeriod, TimeUnixNano: uint64(at.UnixNano()), DurationNano: uint64(5 * time.Second),
	}
	sp.Profiles = append(sp.Profiles, p)
	for _, pr := range probes {
		start, limit, offset := pr.file.mapping(t, pr.va)
		m := b.Mapping(start, limit, offset, "/opt/app/"+pr.file.name, pr.file.bin.BuildID)
		leaf := b.Location(m, pr.file.base+pr.va, "native")
		root := b.Location(0, 0, "go", otlpbuild.Line{Function: b.Function(pr.marker, "", "", 0)})
		stamps := make([]uint64, pr.samples)
		for i := range stamps {
			stamps[i] = uint64(at.UnixNano()) + uint64(i)*1e6
		}
		p.Samples = append(p.Samples, &pb.Sample{StackIndex: b.Stack(leaf, root), TimestampsUnixNano: stamps})
	}
	return b.Request()
}

// storeSymbols extracts a file's symbols and stores them for the default
// tenant, as an upload does.
func storeSymbols(t testing.TB, tables schema.Config, file string) {
	t.Helper()
	storeSymbolsFrom(t, tables, symbols.SourceUpload, file)
}

// storeSymbolsFrom stores files of one build id one after the other, as
// uploads (or fetches) from source do: a stripped executable (stored for
// its segments) and its separate debug file, in either order, combine
// (symbols.Store.Put).
func storeSymbolsFrom(t testing.TB, tables schema.Config, source string, files ...string) {
	t.Helper()
	srv := chtest.Get(t)
	store := symbols.NewStore(tables, srv.Open(t), srv.NativeInserter(t))
	for _, file := range files {
		fh, err := os.Open(file)
		require.NoError(t, err)
		st, err := fh.Stat()
		require.NoError(t, err)
		exe, err := symbols.ExtractWith(fh, st.Size(), symbols.Options{AllowNoSymbols: true})
		require.NoError(t, err, "extract %s", file)
		require.NoError(t, fh.Close())
		stored, err := store.Put(context.Background(), "", source, path.Base(file), exe)
		require.NoError(t, err)
		require.True(t, stored.Ranges > 0 || stored.Merged != "", "%s: stored %+v", file, stored)
	}
}

// chains reads a flame graph's nodes under each root child (a probe's
// marker): the labels below it, root side first, and the marker's value.
// Every probe is one stack, so what hangs under a marker is one chain.
func chains(t testing.TB, rows []querytest.FlameRow) (paths map[string][]string, values map[string]int64) {
	t.Helper()
	paths, values = map[string][]string{}, map[string]int64{}
	var marker string
	for _, r := range rows {
		switch r.Level {
		case 0:
		case 1:
			marker = r.Label
			values[marker] = r.Value
			paths[marker] = []string{}
		default:
			require.Len(t, paths[marker], int(r.Level)-2, "marker %s: one chain", marker)
			paths[marker] = append(paths[marker], r.Label)
		}
	}
	return paths, values
}

// oracleLabels is what the flame graph must show for an address from
// llvm-symbolizer's answer: its inline levels, outermost first, each
// "function file:line" at line granularity; the stored label
// ("[file]") when llvm-symbolizer does not know the address.
func oracleLabels(frames []nativebin.Frame, file string, lines bool) []string {
	if len(frames) == 0 || frames[0].Function == "" {
		return []string{"[" + file + "]"}
	}
	out := make([]string, 0, len(frames))
	for i := len(frames) - 1; i >= 0; i-- {
		fr := frames[i]
		l := fr.Function
		if lines && fr.File != "" && fr.Line > 0 {
			l += " " + fr.File + ":" + strconv.FormatUint(uint64(fr.Line), 10)
		}
		out = append(out, l)
	}
	return out
}

// demangleRest demangles with c++filt the names llvm-symbolizer 14 leaves
// mangled (it gives up on some template arguments).
func demangleRest(t testing.TB, stacks [][]nativebin.Frame) [][]nativebin.Frame {
	t.Helper()
	var names []string
	for _, st := range stacks {
		for _, fr := range st {
			if strings.HasPrefix(fr.Function, "_Z") {
				names = append(names, fr.Function)
			}
		}
	}
	if len(names) == 0 {
		return stacks
	}
	slices.Sort(names)
	names = slices.Compact(names)
	demangled := nativebin.Cxxfilt(t, names)
	for _, st := range stacks {
		for i, fr := range st {
			if k, ok := slices.BinarySearch(names, fr.Function); ok && strings.HasPrefix(fr.Function, "_Z") {
				st[i].Function = demangled[k]
			}
		}
	}
	return stacks
}

// sampleAddrs picks at most n addresses, spread over addrs.
func sampleAddrs(addrs []uint64, n int) []uint64 {
	if len(addrs) <= n {
		return addrs
	}
	out := make([]uint64, 0, n)
	for i := range n {
		out = append(out, addrs[i*len(addrs)/n])
	}
	return out
}

// probeAddrs are the addresses a file is checked at: inside every
// function (first byte, middle, last byte), inside inlined call sites, and
// some line-table rows.
func probeAddrs(t testing.TB, b nativebin.Binary) []uint64 {
	t.Helper()
	addrs := slices.Concat(b.FuncAddrs(), sampleAddrs(b.InlinedAddrs(t), 30), sampleAddrs(b.LineAddrs(t), 30))
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

func TestNativeFramesAreNamedLikeLLVMSymbolizer(t *testing.T) {
	nativebin.Require(t, "gcc", "g++", "objcopy", "llvm-symbolizer")
	progC := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	noPIE := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.NoPIE, Name: "prog-nopie"})
	progCXX := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramCXX, Kind: nativebin.PIE, Name: "prog-cxx"})
	lib := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared, Name: "libprobe.so"})
	// A stripped executable whose symbols come from its separate debug
	// file (same build id), and one with a symbol table only.
	split := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE, Name: "prog-split", Flags: []string{"-g", "-O2", "-DSPLIT=1"}})
	stripped, debug := nativebin.Stripped(t, split), nativebin.DebugOnly(t, split)
	symtabOnly := nativebin.NoDebug(t, nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE, Name: "prog-symtab", Flags: []string{"-g", "-O2", "-DSYMTAB=1"}}))

	f := newFixture(t, nil)
	tables := f.tables
	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	from, to := at.Add(-time.Minute), at.Add(time.Hour)

	cases := []struct {
		name string
		file placed
		// upload are the files stored, in order
		upload []string
		// oracle is the file llvm-symbolizer reads.
		oracle string
	}{
		{"c-pie", placed{progC, pieBase, "prog"}, []string{progC.Path}, progC.Path},
		// the eBPF profiler's placement: the mapping's start is already a
		// virtual address of the file (load base 0); the same build id
		{"c-pie-ebpf", placed{progC, 0, "prog"}, nil, progC.Path},
		{"c-nopie", placed{noPIE, 0, "prog-nopie"}, []string{noPIE.Path}, noPIE.Path},
		{"cxx-pie", placed{progCXX, pieBase, "prog-cxx"}, []string{progCXX.Path}, progCXX.Path},
		{"shared-lib", placed{lib, libBase, "libprobe.so"}, []string{lib.Path}, lib.Path},
		// The debug file (DWARF, but its segments without file offsets and
		// sizes), then the stripped executable (segments, no symbols): the
		// store combines them. (llvm-symbolizer reads the stripped file's
		// symbol table, which is empty, and the debug file's DWARF only, so
		// it cannot name _start: the unstripped file, the same build id, is
		// the oracle.)
		{"stripped-with-debug-file", placed{stripped, pieBase, "prog-split"}, []string{debug.Path, stripped.Path}, split.Path},
		{"symtab-only", placed{symtabOnly, pieBase, "prog-symtab"}, []string{symtabOnly.Path}, symtabOnly.Path},
	}
	type check struct {
		marker  string
		want    []nativebin.Frame
		file    string
		samples int
	}
	var probes []probe
	var checks []check
	for _, c := range cases {
		// the addresses of the unstripped file (the stripped one has no symbols to pick from)
		src := c.file.bin
		if c.name == "stripped-with-debug-file" {
			src = split
		}
		addrs := probeAddrs(t, src)
		require.NotEmpty(t, addrs, c.name)
		want := demangleRest(t, nativebin.Symbolize(t, c.oracle, addrs))
		for i, a := range addrs {
			m := fmt.Sprintf("%s@0x%x", c.name, a)
			probes = append(probes, probe{marker: m, file: c.file, va: a, samples: 1 + i%3})
			checks = append(checks, check{marker: m, want: want[i], file: c.file.name, samples: 1 + i%3})
		}
		storeSymbolsFrom(t, tables, symbols.SourceUpload, c.upload...)
	}
	f.send(t, probeRequest(t, at, "native-probe", probes))

	for _, lines := range []bool{false, true} {
		q := map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="native-probe"}`, "maxNodes": 100000}
		if lines {
			q["granularity"] = "line"
		}
		paths, values := chains(t, querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0], "ns"))
		require.Len(t, paths, len(checks))
		mismatches := 0
		for _, c := range checks {
			want := oracleLabels(c.want, c.file, lines)
			if !slices.Equal(want, paths[c.marker]) {
				mismatches++
				t.Errorf("lines=%v %s: got %q, llvm-symbolizer says %q", lines, c.marker, paths[c.marker], want)
			}
			require.Equal(t, int64(c.samples)*probePeriod, values[c.marker], c.marker)
		}
		t.Logf("lines=%v: %d addresses checked against llvm-symbolizer, %d mismatches", lines, len(checks), mismatches)
	}

	// The top table names the innermost level (self) and every level (total).
	q := map[string]any{"queryType": "table", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="native-probe"}`, "limit": 10000}
	self, total := tableValues(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0])
	wantSelf, wantTotal := map[string]int64{}, map[string]int64{}
	for _, c := range checks {
		levels := oracleLabels(c.want, c.file, false)
		v := int64(c.samples) * probePeriod
		wantSelf[levels[len(levels)-1]] += v
		seen := map[string]bool{c.marker: true}
		wantTotal[c.marker] += v
		for _, l := range levels {
			if !seen[l] {
				seen[l] = true
				wantTotal[l] += v
			}
		}
	}
	require.Equal(t, wantSelf, nonZero(self))
	require.Equal(t, wantTotal, total)
}

// tableValues reads a top table: self and total per label.
func tableValues(t testing.TB, f *data.Frame) (self, total map[string]int64) {
	t.Helper()
	require.Equal(t, "functions", f.Name)
	self, total = map[string]int64{}, map[string]int64{}
	for i := range f.Rows() {
		l, _ := f.Fields[0].ConcreteAt(i)
		s, _ := f.Fields[1].ConcreteAt(i)
		tot, _ := f.Fields[2].ConcreteAt(i)
		self[l.(string)], total[l.(string)] = s.(int64), tot.(int64) // TableFrame's types
	}
	return self, total
}

func TestSymbolsUploadedAfterIngestNameEarlierFrames(t *testing.T) {
	nativebin.Require(t, "gcc", "llvm-symbolizer")
	prog := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	lib := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared, Name: "libprobe.so"})
	f := newFixture(t, nil)
	tables := f.tables
	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	if at.Minute() < 2 {
		// Not an hour's first two minutes: the range would then hold a
		// whole hour, read from the hourly rollup, whose "last seen" is
		// the hour's start rather than the sample's minute.
		at = at.Add(-2 * time.Minute)
	}
	from, to := at.Add(-time.Minute), at.Add(time.Hour)

	exe, shared := placed{prog, pieBase, "prog"}, placed{lib, libBase, "libprobe.so"}
	outer, leaf, entry := prog.Func(t, nativebin.FuncWorkOuter), prog.Func(t, nativebin.FuncLeafMul), lib.Func(t, nativebin.FuncLibEntry)
	probes := []probe{
		{marker: "outer", file: exe, va: outer.Addr + outer.Size/2, samples: 3},
		{marker: "leaf", file: exe, va: leaf.Addr, samples: 2},
		{marker: "lib", file: shared, va: entry.Addr + 1, samples: 4},
	}
	f.send(t, probeRequest(t, at, "deferred", probes))
	q := map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="deferred"}`}

	before := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0], "ns")
	paths, values := chains(t, before)
	require.Equal(t, map[string][]string{"outer": {"[prog]"}, "leaf": {"[prog]"}, "lib": {"[libprobe.so]"}}, paths, "no symbols yet: today's labels")

	// The executable's symbols arrive; the library's never do.
	storeSymbols(t, tables, prog.Path)
	after := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0], "ns")
	require.Equal(t, before[0], after[0], "the same total")
	paths2, values2 := chains(t, after)
	require.Equal(t, values, values2, "the same value per stack")
	want := nativebin.Symbolize(t, prog.Path, []uint64{probes[0].va, probes[1].va})
	require.Equal(t, map[string][]string{
		"outer": oracleLabels(want[0], "prog", false),
		"leaf":  oracleLabels(want[1], "prog", false),
		"lib":   {"[libprobe.so]"},
	}, paths2, "the same datasource names the earlier frames now")
	require.Equal(t, []string{nativebin.FuncWorkOuter}, paths2["outer"][:1])
	require.Equal(t, []string{nativebin.FuncLeafMul}, paths2["leaf"])

	// The executables view says where names come from.
	exes := executablesRows(t, plugintest.RequireOK(t, queryAs(t, f.ds, map[string]any{
		"queryType": "executables", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="deferred"}`,
	}, from, to))[0], true)
	byName := map[string]executableRow{}
	for _, r := range exes {
		byName[r.executable] = r
	}
	require.Equal(t, executableRow{executable: "prog", buildID: prog.BuildID, samples: 5.0 / 9, symbolized: 1, frames: 2, source: "upload", mappingFile: "/opt/app/prog"},
		withoutTimes(byName["prog"]))
	require.Equal(t, executableRow{executable: "libprobe.so", buildID: lib.BuildID, samples: 4.0 / 9, symbolized: 0, frames: 1, source: "none", mappingFile: "/opt/app/libprobe.so"},
		withoutTimes(byName["libprobe.so"]))
	require.Equal(t, at, byName["prog"].lastSeen)

	// Its data link opens the flame graph of the stacks through one
	// executable: the library's stack alone.
	filtered := map[string]any{
		"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="deferred"}`,
		"buildId": lib.BuildID, "mappingFile": "/opt/app/libprobe.so",
	}
	paths3, _ := chains(t, querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, filtered, from, to))[0], "ns"))
	require.Equal(t, map[string][]string{"lib": {"[libprobe.so]"}}, paths3)

	// Once the library's symbols are fetched from debuginfod, its frames
	// are named too and the view says where from.
	storeSymbolsFrom(t, tables, symbols.SourceDebuginfod, lib.Path)
	paths4, _ := chains(t, querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, filtered, from, to))[0], "ns"))
	require.Equal(t, []string{nativebin.FuncLibEntry}, paths4["lib"])
	exes = executablesRows(t, plugintest.RequireOK(t, queryAs(t, f.ds, map[string]any{
		"queryType": "executables", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="deferred"}`,
	}, from, to))[0], true)
	sources := map[string]string{}
	for _, r := range exes {
		sources[r.executable] = r.source
		if r.executable == "libprobe.so" {
			require.InDelta(t, 1.0, r.symbolized, 0)
		}
	}
	require.Equal(t, map[string]string{"prog": "upload", "libprobe.so": "debuginfod"}, sources, "frames without a mapped file are no executable")
}

// executableRow is one row of the executables view.
type executableRow struct {
	executable, buildID string
	samples, symbolized float64
	frames              int64
	source, mappingFile string
	lastSeen            time.Time
}

func withoutTimes(r executableRow) executableRow {
	r.lastSeen = time.Time{}
	return r
}

// executablesRows reads the executables view, checking its columns and
// its link (on the exporter's table, which has no build ids, by mapping
// file only).
func executablesRows(t testing.TB, f *data.Frame, byBuildID bool) []executableRow {
	t.Helper()
	require.Equal(t, "executables", f.Name)
	names := make([]string, len(f.Fields))
	for i, fl := range f.Fields {
		names[i] = fl.Name
	}
	require.Equal(t, []string{"executable", "buildId", "samples", "value", "symbolized", "frames", "source", "lastSeen", "mappingFile", "mappingFileFilter"}, names)
	require.Equal(t, map[string]any{"hidden": true}, f.Fields[9].Config.Custom, "the link's file filter is not a column")
	links := f.Fields[0].Config.Links
	require.Len(t, links, 1, "each row links to its flame graph")
	require.Equal(t, navUID, links[0].Internal.DatasourceUID)
	link, ok := links[0].Internal.Query.(map[string]any)
	require.True(t, ok)
	require.Equal(t, "profile", link["queryType"])
	if byBuildID {
		require.Equal(t, "${__data.fields.buildId}", link["buildId"])
	} else {
		require.NotContains(t, link, "buildId")
	}
	require.Equal(t, "${__data.fields.mappingFileFilter}", link["mappingFile"])
	out := make([]executableRow, f.Rows())
	for i := range out {
		filter := f.Fields[9].At(i).(string) // the view's types
		if byBuildID && f.Fields[1].At(i).(string) != "" {
			require.Empty(t, filter, "row %d: a build id names the executable, whatever the names it was mapped under", i)
		} else {
			require.Equal(t, f.Fields[8].At(i), filter, "row %d: without a build id, its file", i)
		}
		out[i] = executableRow{
			executable: f.Fields[0].At(i).(string), buildID: f.Fields[1].At(i).(string), samples: f.Fields[2].At(i).(float64), // the view's types
			symbolized: f.Fields[4].At(i).(float64), frames: f.Fields[5].At(i).(int64), source: f.Fields[6].At(i).(string),
			lastSeen: f.Fields[7].At(i).(time.Time), mappingFile: f.Fields[8].At(i).(string),
		}
	}
	return out
}

// queryAs runs a query as Grafana sends it from a panel of the datasource
// with uid navUID (which its data links name).
func queryAs(t testing.TB, ds *plugin.Datasource, q map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: navUID, Name: "Flamehouse"}},
		Queries:       []backend.DataQuery{{RefID: "A", JSON: raw, TimeRange: backend.TimeRange{From: from, To: to}, Interval: time.Minute}},
	})
	require.NoError(t, err)
	return resp.Responses["A"]
}

func TestExporterSchemaFramesAreNamedFromTheSymbolStore(t *testing.T) {
	nativebin.Require(t, "gcc", "llvm-symbolizer")
	prog := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	_, tables := plugintest.Migrated(t)
	plugintest.CreateExporterTable(t, tables.Database, "profiles_x")
	storeSymbols(t, tables, prog.Path)
	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	from, to := at.Add(-time.Minute), at.Add(time.Hour)

	// The eBPF profiler's addresses are already virtual addresses of the
	// file; the exporter keeps the address and the mapping's file name.
	addrs := sampleAddrs(probeAddrs(t, prog), 40)
	want := demangleRest(t, nativebin.Symbolize(t, prog.Path, addrs))
	rows := make([]exporterRow, 0, len(addrs)+1)
	for i, a := range addrs {
		rows = append(rows, exporterRow{
			at: at, service: "checkout", sampleType: "samples", sampleUnit: "count", periodType: "cpu", periodUnit: "nanoseconds", period: cpuPeriod,
			hash: uint64(i + 1), functions: []string{"", fmt.Sprintf("probe@0x%x", a)}, mappings: []string{"/opt/app/prog", ""}, files: []string{"", ""},
			addresses: []uint64{a, 0}, stamps: 1,
		})
	}
	// a library without symbols keeps its label
	rows = append(rows, exporterRow{
		at: at, service: "checkout", sampleType: "samples", sampleUnit: "count", periodType: "cpu", periodUnit: "nanoseconds", period: cpuPeriod,
		hash: 99999, functions: []string{"", "probe-lib"}, mappings: []string{"/usr/lib/libnone.so", ""}, files: []string{"", ""},
		addresses: []uint64{0x1234, 0}, stamps: 2,
	})
	insertExporterRows(t, tables.Database, "profiles_x", rows)
	settings := plugintest.EmbeddedSettings(t, tables.Database)
	settings["profiles"] = map[string]any{"database": tables.Database, "schema": "otel", "otelTable": "profiles_x", "cache": "off"}
	ds := plugintest.Instance(t, settings, map[string]string{"password": chtest.Get(t).Options.Auth.Password})

	for _, lines := range []bool{false, true} {
		q := map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "maxNodes": 100000}
		if lines {
			q["granularity"] = "line"
		}
		paths, values := chains(t, querytest.FlameRows(t, plugintest.RequireOK(t, queryAs(t, ds, q, from, to))[0], "ns"))
		require.Len(t, paths, len(addrs)+1)
		for i, a := range addrs {
			m := fmt.Sprintf("probe@0x%x", a)
			require.Equal(t, oracleLabels(want[i], "prog", lines), paths[m], "lines=%v %s", lines, m)
			require.Equal(t, int64(cpuPeriod), values[m])
		}
		require.Equal(t, []string{"[libnone.so]"}, paths["probe-lib"])
		require.Equal(t, int64(2*cpuPeriod), values["probe-lib"])
	}

	exes := executablesRows(t, plugintest.RequireOK(t, queryAs(t, ds, map[string]any{"queryType": "executables", "profileTypeId": plugintest.CPUType}, from, to))[0], false)
	byFile := map[string]executableRow{}
	for _, r := range exes {
		byFile[r.mappingFile] = r
	}
	n := float64(len(addrs))
	require.Equal(t, executableRow{executable: "prog", buildID: prog.BuildID, samples: n / (n + 2), symbolized: 1, frames: int64(len(addrs)), source: "upload", mappingFile: "/opt/app/prog"},
		withoutTimes(byFile["/opt/app/prog"]))
	require.Equal(t, executableRow{executable: "libnone.so", samples: 2 / (n + 2), frames: 1, source: "none", mappingFile: "/usr/lib/libnone.so"},
		withoutTimes(byFile["/usr/lib/libnone.so"]))
}

func TestGoFramesAreNamedLikeGoToolAddr2line(t *testing.T) {
	prog := nativebin.BuildGo(t, nativebin.ProgramGo)
	require.NotEmpty(t, prog.BuildID)
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	exe := placed{prog, 0, "goprog"}
	var addrs []uint64
	for _, fn := range []string{nativebin.GoFuncSpin, nativebin.GoFuncMix, "main.main", "runtime.main", "fmt.Fprintln"} {
		addrs = append(addrs, prog.Inside(t, fn)...)
	}
	probes := make([]probe, len(addrs))
	for i, a := range addrs {
		probes[i] = probe{marker: fmt.Sprintf("go@0x%x", a), file: exe, va: a, samples: 1}
	}
	f.send(t, probeRequest(t, at, "go-probe", probes))
	storeSymbols(t, f.tables, prog.Path)

	want := nativebin.GoAddr2line(t, prog.Path, addrs)
	q := map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="go-probe"}`, "granularity": "line", "maxNodes": 100000}
	paths, _ := chains(t, querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, q, at.Add(-time.Minute), at.Add(time.Hour)))[0], "ns"))
	for i, a := range addrs {
		got := paths[fmt.Sprintf("go@0x%x", a)]
		require.NotEmpty(t, got)
		// go tool addr2line names the innermost function at the address (no
		// outer inline levels): the leaf of the resolved levels
		require.Equal(t, want[i].Function+" "+want[i].File+":"+strconv.FormatUint(uint64(want[i].Line), 10), got[len(got)-1], "0x%x", a)
	}
}
