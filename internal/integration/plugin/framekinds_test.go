package plugin

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/querytest"
)

// A host as the eBPF profiler reports it: one resource per process with
// process.pid and process.executable.name (none for kernel threads), no
// service.name; frames typed by profile.frame.type; thread.name on every
// sample. A Python program's stacks run through the interpreter's native
// frames (one unnamed: a mapping and an address), a C program's are
// native, both call into the kernel, and a kernel thread has kernel
// frames only.

// ebpfFrame is a frame of the host: a function name ("" for an unnamed
// native frame of mapping), a profile.frame.type and a mapped file.
type ebpfFrame struct{ name, typ, mapping string }

var (
	fStart   = ebpfFrame{"_start", "native", "/usr/bin/python3.11"}
	fRunMain = ebpfFrame{"Py_RunMain", "native", "/usr/lib/libpython3.11.so.1.0"}
	fModule  = ebpfFrame{"<module>", "cpython", ""}
	fPyEval  = ebpfFrame{"", "native", "/usr/lib/libpython3.11.so.1.0"}
	fAlpha   = ebpfFrame{"py_alpha", "cpython", ""}
	fBeta    = ebpfFrame{"py_beta", "cpython", ""}
	fEval    = ebpfFrame{"_PyEval_EvalFrameDefault", "native", "/usr/lib/libpython3.11.so.1.0"}
	fSyscall = ebpfFrame{"do_syscall_64", "kernel", "vmlinux"}
	fRead    = ebpfFrame{"ksys_read", "kernel", "vmlinux"}
	fMain    = ebpfFrame{"main", "native", "/opt/worker"}
	fWork    = ebpfFrame{"c_work", "native", "/opt/worker"}
	fMemcpy  = ebpfFrame{"memcpy", "native", "/usr/lib/libc.so.6"}
	fKWorker = ebpfFrame{"worker_thread", "kernel", "vmlinux"}
	fKWork   = ebpfFrame{"process_one_work", "kernel", "vmlinux"}
)

// ebpfStack is a stack of a process (root first) and its CPU time.
type ebpfStack struct {
	process, thread string
	frames          []ebpfFrame
	value           int64
}

var ebpfStacks = []ebpfStack{
	{"python3.11", "MainThread", []ebpfFrame{fStart, fRunMain, fModule, fPyEval, fAlpha, fEval, fSyscall, fRead}, 700},
	{"python3.11", "MainThread", []ebpfFrame{fStart, fRunMain, fModule, fPyEval, fBeta}, 300},
	{"worker", "worker-1", []ebpfFrame{fMain, fWork, fMemcpy}, 400},
	{"worker", "worker-2", []ebpfFrame{fMain, fWork, fSyscall}, 200},
	{"", "kworker/0:1", []ebpfFrame{fKWorker, fKWork}, 100},
}

// ebpfHostRequest is the host's stacks as one report at a time.
func ebpfHostRequest(at time.Time) *collectorpb.ExportProfilesServiceRequest {
	b := otlpbuild.New()
	mappings := map[string]int32{}
	location := func(f ebpfFrame) int32 {
		m, ok := mappings[f.mapping]
		if !ok && f.mapping != "" {
			m = b.Mapping(0x400000+uint64(len(mappings))<<24, 0x400000+uint64(len(mappings)+1)<<24, 0, f.mapping, "")
			mappings[f.mapping] = m
		}
		if f.name == "" {
			return b.Location(m, 0x401234, f.typ)
		}
		return b.Location(m, 0, f.typ, otlpbuild.Line{Function: b.Function(f.name, "", "", 0)})
	}
	profiles := map[string]*pb.Profile{}
	pids := map[string]string{"python3.11": "100", "worker": "200", "": "15"}
	for _, s := range ebpfStacks {
		p := profiles[s.process]
		if p == nil {
			attrs := []string{"process.pid", pids[s.process]}
			if s.process != "" {
				attrs = append(attrs, "process.executable.name", s.process, "process.executable.path", "/usr/bin/"+s.process)
			}
			p = &pb.Profile{
				SampleType: b.ValueType("cpu", "nanoseconds"), PeriodType: b.ValueType("cpu", "nanoseconds"), Period: 50_000_000,
				TimeUnixNano: nanos(at),
			}
			otlpbuild.Scope(b.Resource(attrs...), "ebpf-profiler", "1").Profiles = []*pb.Profile{p}
			profiles[s.process] = p
		}
		locs := make([]int32, len(s.frames))
		for i, f := range s.frames {
			locs[len(s.frames)-1-i] = location(f) // leaf first
		}
		p.Samples = append(p.Samples, &pb.Sample{
			StackIndex: b.Stack(locs...), Values: []int64{s.value}, AttributeIndices: []int32{b.Attr("thread.name", s.thread)},
		})
	}
	return b.Request()
}

// flamePaths queries a CPU flame graph over [from, to) with the query's
// fields (extra added to base) and reads it with flameByPath.
func (f *fixture) flamePaths(t *testing.T, base, extra map[string]any, from, to time.Time) (map[string]int64, int64) {
	t.Helper()
	q := map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType}
	maps.Copy(q, base)
	maps.Copy(q, extra)
	return flameByPath(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0])
}

// flameByPath reads a flame graph frame into its nodes' totals by path
// (labels joined by ";" below the root), and the root's total.
func flameByPath(t *testing.T, f *data.Frame) (map[string]int64, int64) {
	t.Helper()
	rows := querytest.FlameRows(t, f, "ns")
	out := map[string]int64{}
	if len(rows) == 0 {
		return out, 0 // no samples
	}
	var stack []string
	for _, r := range rows[1:] {
		stack = append(stack[:r.Level-1], r.Label)
		out[strings.Join(stack, ";")] = r.Value
	}
	return out, rows[0].Value
}

func TestEBPFHostFrameKindsAndProcesses(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	f.send(t, ebpfHostRequest(at))
	from, to := at.Add(-time.Minute), at.Add(5*time.Minute)
	flame := func(extra map[string]any) (map[string]int64, int64) { return f.flamePaths(t, nil, extra, from, to) }
	const total = 1700

	t.Run("kernel frames and the interpreter's native frames are marked", func(t *testing.T) {
		paths, root := flame(nil)
		require.Equal(t, int64(total), root)
		require.Equal(t, map[string]int64{
			"_start [native]": 1000, "_start [native];Py_RunMain [native]": 1000,
			"_start [native];Py_RunMain [native];<module>":                                                                                                             1000,
			"_start [native];Py_RunMain [native];<module>;[libpython3.11.so.1.0]":                                                                                      1000,
			"_start [native];Py_RunMain [native];<module>;[libpython3.11.so.1.0];py_alpha":                                                                             700,
			"_start [native];Py_RunMain [native];<module>;[libpython3.11.so.1.0];py_alpha;_PyEval_EvalFrameDefault [native]":                                           700,
			"_start [native];Py_RunMain [native];<module>;[libpython3.11.so.1.0];py_alpha;_PyEval_EvalFrameDefault [native];do_syscall_64 [kernel]":                    700,
			"_start [native];Py_RunMain [native];<module>;[libpython3.11.so.1.0];py_alpha;_PyEval_EvalFrameDefault [native];do_syscall_64 [kernel];ksys_read [kernel]": 700,
			"_start [native];Py_RunMain [native];<module>;[libpython3.11.so.1.0];py_beta":                                                                              300,
			"main": 600, "main;c_work": 600, "main;c_work;memcpy": 400, "main;c_work;do_syscall_64 [kernel]": 200,
			"worker_thread [kernel]": 100, "worker_thread [kernel];process_one_work [kernel]": 100,
		}, paths, "a C program's native frames are its own code: never marked")
	})

	t.Run("hidden kernel frames give their samples to the caller", func(t *testing.T) {
		rows := querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "hideFrames": []string{"kernel"}}, from, to))[0], "ns")
		require.Equal(t, int64(total), rows[0].Value)
		require.Equal(t, int64(100), rows[0].Self, "a kernel thread's samples go to the root")
		self := map[string]int64{}
		for _, r := range rows[1:] {
			require.NotContains(t, r.Label, "kernel")
			self[r.Label] += r.Self
		}
		require.Equal(t, int64(700), self["_PyEval_EvalFrameDefault [native]"])
		require.Equal(t, int64(200), self["c_work"])
	})

	t.Run("the Python program's own functions, the kernel in one node", func(t *testing.T) {
		paths, root := flame(map[string]any{"hideFrames": []string{"native"}, "collapseFrames": []string{"kernel"}})
		require.Equal(t, int64(total), root)
		require.Equal(t, map[string]int64{
			"<module>": 1000, "<module>;py_alpha": 700, "<module>;py_alpha;[kernel]": 700, "<module>;py_beta": 300,
			"main": 600, "main;c_work": 600, "main;c_work;memcpy": 400, "main;c_work;[kernel]": 200, "[kernel]": 100,
		}, paths)
	})

	t.Run("a flame graph by process, and by thread", func(t *testing.T) {
		paths, root := flame(map[string]any{"groupBy": []string{"process_executable_name"}, "collapseFrames": []string{"kernel"}})
		require.Equal(t, int64(total), root)
		top := map[string]int64{}
		for p, v := range paths {
			if !strings.Contains(p, ";") {
				top[p] = v
			}
		}
		require.Equal(t, map[string]int64{"python3.11": 1000, "worker": 600, "(no process_executable_name)": 100}, top)
		require.Equal(t, int64(200), paths["worker;main;c_work;[kernel]"])
		paths, _ = flame(map[string]any{"groupBy": []string{"process.executable.name", "thread_name"}, "labelSelector": `{process_pid="200"}`})
		require.Equal(t, int64(400), paths["worker, worker-1"])
		require.Equal(t, int64(200), paths["worker, worker-2;main;c_work;do_syscall_64 [kernel]"])
		require.Len(t, paths, 8, "the selector keeps the worker's stacks only")
	})

	t.Run("the table shows the marks and hides like the flame graph", func(t *testing.T) {
		table := plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "table", "profileTypeId": plugintest.CPUType, "hideFrames": []string{"kernel"}}, from, to))[0]
		selfs := map[string]int64{}
		for i := range table.Rows() {
			label, _ := table.Fields[0].ConcreteAt(i)
			s, _ := table.Fields[1].ConcreteAt(i)
			selfs[label.(string)] = s.(int64) // a string and an int64 field
		}
		require.Equal(t, map[string]int64{"_PyEval_EvalFrameDefault [native]": 700, "py_beta": 300, "memcpy": 400, "c_work": 200}, nonZero(selfs))
	})

	t.Run("function filters take the labels as shown", func(t *testing.T) {
		root := func(q map[string]any) int64 { _, r := flame(q); return r }
		require.Equal(t, int64(900), root(map[string]any{"function": "do_syscall_64 [kernel]"}))
		require.Equal(t, int64(1000), root(map[string]any{"function": "[kernel]", "collapseFrames": []string{"kernel"}}), "a collapsed run: any kernel frame")
		require.Equal(t, int64(700), root(map[string]any{"function": "ksys_read [kernel]", "functionValue": "self"}))
		require.Equal(t, int64(1000), root(map[string]any{"function": "_start [native]"}))
		// Self is the leaf the flame graph shows: with the kernel hidden, the frame that called it.
		require.Equal(t, int64(700), root(map[string]any{"function": "_PyEval_EvalFrameDefault [native]", "functionValue": "self", "hideFrames": []string{"kernel"}}))
		require.Equal(t, int64(0), root(map[string]any{"function": "_PyEval_EvalFrameDefault [native]", "functionValue": "self"}), "its stored leaf is the kernel's")
		require.Equal(t, int64(200), root(map[string]any{"function": "c_work", "functionValue": "self", "hideFrames": []string{"kernel"}}))
	})

	t.Run("a diff shapes both sides alike", func(t *testing.T) {
		frame := plugintest.RequireOK(t, f.query(t, map[string]any{
			"queryType": "diff", "profileTypeId": plugintest.CPUType, "collapseFrames": []string{"kernel"}, "left": map[string]any{"offset": "0"},
		}, from, to))[0]
		labels := frame.Fields[3].Config.TypeConfig.Enum.Text
		require.Contains(t, labels, "[kernel]")
		require.Contains(t, labels, "_start [native]")
		require.NotContains(t, labels, "do_syscall_64 [kernel]")
		for i := range frame.Rows() {
			v, _ := frame.Fields[1].ConcreteAt(i)
			vr, _ := frame.Fields[4].ConcreteAt(i)
			require.Equal(t, v, vr, "row %d: the same range on both sides", i)
		}
	})

	t.Run("time series by process", func(t *testing.T) {
		frames := plugintest.RequireOK(t, queryAs(t, f.ds, map[string]any{
			"queryType": "metrics", "profileTypeId": plugintest.CPUType, "groupBy": []string{"process_executable_name"}, "hideFrames": []string{"kernel"},
		}, from, to))
		var names []string
		for _, fr := range frames {
			names = append(names, fr.Fields[1].Config.DisplayNameFromDS)
			link := fr.Fields[1].Config.Links
			require.Len(t, link, 1)
			require.Equal(t, []string{"kernel"}, link[0].Internal.Query.(map[string]any)["hideFrames"], // a query object
				"the series' flame graph hides what the query hides")
		}
		slices.Sort(names)
		require.Equal(t, []string{"(no process_executable_name)", "python3.11", "worker"}, names, "named like the flame graph's groups")
	})

	t.Run("invalid kinds are refused with the reason", func(t *testing.T) {
		r := f.query(t, map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "hideFrames": []string{"kernel", "jvm"}, "collapseFrames": []string{"kernel"}}, from, to)
		require.ErrorContains(t, r.Error, `hideFrames: "jvm" is not a frame kind`)
		require.ErrorContains(t, r.Error, "hidden or collapsed, not both: kernel")
	})
}

// TestExporterTableFlameGraphByProcess: the exporter's table groups a
// flame graph by process as Flamehouse's tables do; it keeps no frame
// types, so hiding frames by kind is refused with the reason.
func TestExporterTableFlameGraphByProcess(t *testing.T) {
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	plugintest.CreateExporterTable(t, db, "profiles_ebpf")
	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	var rows []exporterRow
	for i, s := range ebpfStacks {
		r := exporterRow{
			at: at, service: "unknown_service:" + s.process, sampleType: "cpu", sampleUnit: "nanoseconds", periodType: "cpu", periodUnit: "nanoseconds",
			period: 50_000_000, resource: map[string]string{"process.pid": strconv.Itoa(i)}, sample: map[string]string{"thread.name": s.thread},
			hash: uint64(i + 1), values: []int64{s.value},
		}
		if s.process != "" {
			r.resource["process.executable.name"] = s.process
		}
		for j := len(s.frames) - 1; j >= 0; j-- {
			r.functions, r.mappings = append(r.functions, s.frames[j].name), append(r.mappings, s.frames[j].mapping)
			r.files, r.addresses = append(r.files, ""), append(r.addresses, 0x401234)
		}
		rows = append(rows, r)
	}
	insertExporterRows(t, db, "profiles_ebpf", rows)
	ds := plugintest.Instance(t, plugintest.OTelSettings(t, db, "profiles_ebpf"), map[string]string{"password": srv.Options.Auth.Password})
	q := map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "groupBy": []string{"process_executable_name"}}
	paths, root := flameByPath(t, plugintest.RequireOK(t, plugintest.Query(t, ds, q, at.Add(-time.Minute), at.Add(time.Minute)))[0])
	require.Equal(t, int64(1700), root)
	require.Equal(t, int64(1000), paths["python3.11"])
	require.Equal(t, int64(600), paths["worker"])
	require.Equal(t, int64(100), paths["(no process_executable_name)"])
	require.Equal(t, int64(200), paths["worker;main;c_work;do_syscall_64"], "no frame types: no marks")

	q["hideFrames"] = []string{"kernel"}
	r := plugintest.Query(t, ds, q, at.Add(-time.Minute), at.Add(time.Minute))
	require.ErrorContains(t, r.Error, "keeps no frame types")
}

// TestExecutablesViewMergesTheNamesOfOneFile: a library mapped under its
// path by one sender and its base name by another (the eBPF profiler) is
// one row, shown by its path; two builds of a program are two rows, told
// apart by build id; a row's link opens the flame graph of every frame of
// its build id.
func TestExecutablesViewMergesTheNamesOfOneFile(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	const libc, build1, build2 = "93ac61ec5a8eb1396f9fbd350e3169a558528a40", "9632b11fc076f139ba4a59550529f34df710c9d8", "e104a41035d0c4cebb5b25cd84cc8d82bfe624a1"
	send := func(service, libcFile, progFile, progBuild string, value int64) {
		b := otlpbuild.New()
		lib := b.Mapping(0x7f0000000000, 0x7f0000200000, 0, libcFile, libc)
		prog := b.Mapping(0x400000, 0x1400000, 0, progFile, progBuild)
		main := b.Location(prog, 0x401000, "go", otlpbuild.Line{Function: b.Function("main.main", "", "main.go", 1)})
		memcpy := b.Location(lib, 0x7f0000001234, "native")
		p := &pb.Profile{SampleType: b.ValueType("cpu", "nanoseconds"), PeriodType: b.ValueType("cpu", "nanoseconds"), Period: 1, TimeUnixNano: nanos(at)}
		p.Samples = []*pb.Sample{{StackIndex: b.Stack(memcpy, main), Values: []int64{value}}, {StackIndex: b.Stack(main), Values: []int64{value}}}
		otlpbuild.Scope(b.Resource("service.name", service), "test", "1").Profiles = []*pb.Profile{p}
		f.send(t, b.Request())
	}
	send("flamehouse", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/tmp/a/flamehouse", build1, 3)
	send("unknown_service:flamehouse", "libc.so.6", "flamehouse", build1, 5)
	send("unknown_service:flamehouse", "libc.so.6", "flamehouse", build2, 7)
	from, to := at.Add(-time.Minute), at.Add(5*time.Minute)
	rows := executablesRows(t, plugintest.RequireOK(t, queryAs(t, f.ds, map[string]any{"queryType": "executables", "profileTypeId": plugintest.CPUType}, from, to))[0], true)
	byBuild := map[string]executableRow{}
	for _, r := range rows {
		require.NotContains(t, byBuild, r.buildID, "one row per build id")
		byBuild[r.buildID] = withoutTimes(r)
	}
	require.Equal(t, executableRow{executable: "libc.so.6", buildID: libc, samples: 15.0 / 30, frames: 2, source: "none", mappingFile: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		byBuild[libc], "one row for both names, shown by its path")
	require.Equal(t, executableRow{executable: "flamehouse", buildID: build1, samples: 16.0 / 30, symbolized: 1, frames: 2, source: "on host", mappingFile: "/tmp/a/flamehouse"},
		byBuild[build1])
	require.Equal(t, executableRow{executable: "flamehouse", buildID: build2, samples: 14.0 / 30, symbolized: 1, frames: 1, source: "on host", mappingFile: "flamehouse"},
		byBuild[build2])
	// The link of the library's row: its build id, no file.
	_, root := flameByPath(t, plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "buildId": libc, "mappingFile": ""}, from, to))[0])
	require.Equal(t, int64(15), root, "the stacks through either name")
}
