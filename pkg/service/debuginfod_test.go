package service

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/symbols"
	"github.com/flamehouse/flamehouse/pkg/symbols/debuginfod"
)

// TestDebuginfodFillsTheSymbolStore runs Debian's real debuginfod server
// over a distribution's layout of a PIE executable built here: the
// stripped executable and its separate debug file (objcopy
// --only-keep-debug), in two directories. It starts Flamehouse with
// symbols.debuginfod.urls pointing at the server and sends frames that
// carry only a mapping (with the build id) and an address. Both files must
// be fetched and combined: profile_executables (source debuginfod) with
// DWARF and the executable's segments (usable for the address rule),
// profile_symbols with work_outer's range where the file's own symbol
// table puts it. A build id the server does not have must end in the
// negative cache (a 404 counted once, then cache hits) with no row.
func TestDebuginfodFillsTheSymbolStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine and debuginfod; skipped under -short")
	}
	if _, err := exec.LookPath("debuginfod"); err != nil {
		t.Skipf("debuginfod is not installed (%v); CI installs it with scripts/setup.sh (Debian package debuginfod)", err)
	}
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	work := bin.Func(t, nativebin.FuncWorkOuter)
	stripped, dbg := nativebin.Stripped(t, bin), nativebin.DebugOnly(t, bin)
	serverURL := startDebuginfod(t, bin.BuildID, filepath.Dir(stripped.Path), filepath.Dir(dbg.Path))

	cfg := localConfig(t)
	cfg.SelfProfile.Enabled = false
	cfg.Schema.Retention = schema.Retention{}
	cfg.Symbols.Debuginfod.URLs = []string{serverURL}
	cfg.Symbols.Debuginfod.Backoff = 10 * time.Millisecond
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

	// The process maps the executable's code segment at base+Vaddr from
	// file offset Off; the frame's address is inside work_outer.
	const (
		missing = "00112233445566778899aabbccddeeff00112233" // no server has it
		base    = 0x55d0c0a00000
	)
	text := codeSegment(t, bin.Path)
	start := base + text.Vaddr
	payload := unsymbolizedProfile(t, bin.BuildID, missing, start, start+text.Memsz, text.Offset, base+work.Addr+work.Size/2)
	from := time.Now().Add(-time.Minute)
	sent := time.Now()
	postProfile(t, httpAddr, payload)

	tenant := cfg.Ingest.Receiver.DefaultTenant
	var (
		source, fileName string
		ranges, version  uint64
		dwarf            bool
		segSizes         []uint64
	)
	waitFor(t, "profile_executables has the build id with the executable's segments", func() bool {
		err := svc.Conn().QueryRow(ctx, "SELECT Source, FileName, Ranges, HasDwarf, SegmentSizes, toUInt64(toUnixTimestamp64Milli(UpdatedAt)) FROM "+
			cfg.Schema.Qualified(schema.Executables)+" WHERE TenantId = ? AND BuildId = ? ORDER BY UpdatedAt DESC LIMIT 1", tenant, bin.BuildID).
			Scan(&source, &fileName, &ranges, &dwarf, &segSizes, &version)
		return err == nil && !slices.Contains(segSizes, 0)
	})
	t.Logf("debug file and executable fetched, combined and stored %.2f s after the export (%d ranges)", time.Since(sent).Seconds(), ranges)
	require.Equal(t, symbols.SourceDebuginfod, source)
	require.Equal(t, "/usr/bin/prog", fileName, "named after the mapping its frames came from")
	require.True(t, dwarf, "the debug file's DWARF")
	var rows uint64
	require.NoError(t, svc.Conn().QueryRow(ctx, "SELECT count() FROM "+cfg.Schema.Qualified(schema.Symbols)+
		" WHERE TenantId = ? AND BuildId = ? AND Version = ?", tenant, bin.BuildID, version).Scan(&rows))
	require.Positive(t, rows)
	require.Equal(t, ranges, rows, "profile_executables.Ranges counts the ranges of its version")
	var outermost string
	require.NoError(t, svc.Conn().QueryRow(ctx, "SELECT Functions[length(Functions)] FROM "+cfg.Schema.Qualified(schema.Symbols)+
		" WHERE TenantId = ? AND BuildId = ? AND Version = ? AND Start <= ? AND ? < End", tenant, bin.BuildID, version, work.Addr, work.Addr).
		Scan(&outermost))
	require.Equal(t, nativebin.FuncWorkOuter, outermost, "the range at work_outer's first byte (the file's own symbol table) is work_outer")

	// What the dispatcher asks before fetching: one query for a batch.
	known, err := debuginfod.NewTableKnown(svc.Conn(), cfg.Schema).Known(ctx, tenant, []string{bin.BuildID, missing})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{bin.BuildID: true}, known)

	// The frame keeps its placement for the query's address rule.
	var mapStart, mapOffset uint64
	require.NoError(t, svc.Conn().QueryRow(ctx, "SELECT MappingStart, MappingOffset FROM "+cfg.Schema.Qualified(schema.Frames)+
		" WHERE BuildId = ? LIMIT 1", bin.BuildID).Scan(&mapStart, &mapOffset))
	require.Equal(t, [2]uint64{start, text.Offset}, [2]uint64{mapStart, mapOffset})

	// The flame graph names the frame (query-time resolution through the
	// address rule); the library nobody has keeps today's label.
	frames, err := run(ctx, &query.Engine{Conn: svc.Conn(), Tables: cfg.Schema}, from, time.Now().Add(time.Minute),
		map[string]any{"queryType": "profile", "profileTypeId": cpuType, "labelSelector": `{service_name="native-app"}`})
	require.NoError(t, err)
	labels := frames[0].Fields[3].Config.TypeConfig.Enum.Text
	require.Contains(t, labels, nativebin.FuncWorkOuter, "labels %v", labels)
	require.Contains(t, labels, "[libmissing.so]", "labels %v", labels)
	require.NotContains(t, labels, "[prog]", "labels %v", labels)

	metrics := func() string {
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}
	waitFor(t, "the missing build id is counted not found", func() bool {
		return metricValue(metrics(), `flamehouse_symbols_debuginfod_failed_total{reason="not_found"}`) == 1
	})
	require.InDelta(t, 1, metricValue(metrics(), `flamehouse_symbols_debuginfod_fetched_total{artifact="debuginfo"}`), 0)
	require.InDelta(t, 1, metricValue(metrics(), `flamehouse_symbols_debuginfod_fetched_total{artifact="executable"}`), 0)

	postProfile(t, httpAddr, payload) // again: the stored one is known, the missing one is in the negative cache
	waitFor(t, "a negative cache hit", func() bool {
		return metricValue(metrics(), "flamehouse_symbols_debuginfod_negative_cache_hits_total") >= 1
	})
	m := metrics()
	require.InDelta(t, 1, metricValue(m, `flamehouse_symbols_debuginfod_failed_total{reason="not_found"}`), 0, "not asked again")
	require.InDelta(t, 1, metricValue(m, `flamehouse_symbols_debuginfod_fetched_total{artifact="debuginfo"}`), 0, "not fetched again")
	var missingRows uint64
	require.NoError(t, svc.Conn().QueryRow(ctx, "SELECT count() FROM "+cfg.Schema.Qualified(schema.Executables)+" WHERE BuildId = ?", missing).
		Scan(&missingRows))
	require.Zero(t, missingRows, "nothing about a failed fetch is stored")

	stopped = true
	require.NoError(t, svc.Stop(ctx), "clean stop: receivers, pipeline, then the fetcher")
}

// startDebuginfod runs debuginfod -F over dirs on a free loopback port and
// waits until it serves buildID's executable and debug file. The server is
// killed when the test ends.
func startDebuginfod(t *testing.T, buildID string, dirs ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port // a TCP listener
	require.NoError(t, ln.Close())
	var log bytes.Buffer
	args := append([]string{"-F", "-p", strconv.Itoa(port), "-d", filepath.Join(t.TempDir(), "debuginfod.sqlite"), "-t", "0", "-g", "0", "-c", "1"}, dirs...)
	cmd := exec.Command("debuginfod", args...)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=") // no federation to upstream servers
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("debuginfod output:\n%s", log.String())
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	serves := func(artifact string) bool {
		resp, err := http.Get(url + "/buildid/" + buildID + "/" + artifact)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	waitFor(t, "debuginfod scanned "+strings.Join(dirs, " "), func() bool { return serves("executable") && serves("debuginfo") })
	return url
}

// unsymbolizedProfile is an OTLP request with one stack of two native
// frames that carry only a mapping (file, build id, placement) and an
// address: one in the built executable, one in a library nobody has.
func unsymbolizedProfile(t *testing.T, buildID, missing string, start, limit, offset, addr uint64) []byte {
	t.Helper()
	b := otlpbuild.New()
	exe := b.Mapping(start, limit, offset, "/usr/bin/prog", buildID)
	lib := b.Mapping(0x7f0000000000, 0x7f0000200000, 0, "/usr/lib/libmissing.so", missing)
	leaf := b.Location(exe, addr, "native")
	root := b.Location(lib, 0x7f0000001234, "native")
	rp := b.Resource("service.name", "native-app")
	sp := otlpbuild.Scope(rp, "test", "1")
	now := uint64(time.Now().UnixNano())
	sp.Profiles = append(sp.Profiles, &pb.Profile{
		SampleType: b.ValueType("samples", "count"), PeriodType: b.ValueType("cpu", "nanoseconds"), Period: 10_000_000,
		TimeUnixNano: now - uint64(time.Second), DurationNano: uint64(time.Second),
		Samples: []*pb.Sample{{StackIndex: b.Stack(leaf, root), TimestampsUnixNano: []uint64{now - uint64(time.Second/2)}}},
	})
	payload, err := proto.Marshal(b.Request())
	require.NoError(t, err)
	return payload
}

// codeSegment is a file's executable PT_LOAD segment.
func codeSegment(t *testing.T, path string) symbols.Segment {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			return symbols.Segment{Offset: p.Off, Vaddr: p.Vaddr, Filesz: p.Filesz, Memsz: p.Memsz, Exec: true}
		}
	}
	t.Fatalf("%s has no executable segment", path)
	return symbols.Segment{}
}

func postProfile(t *testing.T, httpAddr string, payload []byte) {
	t.Helper()
	resp, err := http.Post("http://"+httpAddr+receiver.ProfilesPath, "application/x-protobuf", bytes.NewReader(payload))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
}

// waitFor polls cond every 100 ms until it holds, for a minute at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricValue reads one sample from a Prometheus text exposition (-1 when
// it is absent).
func metricValue(exposition, series string) float64 {
	for _, line := range strings.Split(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return -1
}
