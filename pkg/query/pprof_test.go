package query

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
)

// pprofPaths reads a profile's samples back as label paths, root first
// (locations are leaf first, a location's lines innermost first).
func pprofPaths(p *profile.Profile) []string {
	out := make([]string, len(p.Sample))
	for i, s := range p.Sample {
		var labels []string
		for j := len(s.Location) - 1; j >= 0; j-- {
			lines := s.Location[j].Line
			for k := len(lines) - 1; k >= 0; k-- {
				labels = append(labels, lines[k].Function.Name)
			}
		}
		out[i] = strings.Join(labels, ";")
	}
	return out
}

// pprofTop is what `pprof -top` computes from a profile: flat (the leaf
// line's function) and cum (every function of a sample, once) per name.
func pprofTop(p *profile.Profile) (flat, cum map[string]int64) {
	flat, cum = map[string]int64{}, map[string]int64{}
	for _, s := range p.Sample {
		seen := map[string]bool{}
		for j, l := range s.Location {
			for k, line := range l.Line {
				name := line.Function.Name
				if j == 0 && k == 0 {
					flat[name] += s.Value[0]
				}
				if !seen[name] {
					seen[name] = true
					cum[name] += s.Value[0]
				}
			}
		}
	}
	return flat, cum
}

func TestPprofShapesLikeTheFlameGraph(t *testing.T) {
	all := [][]uint64{
		{1, 2, 3, 4, 5, 6, 14, 11, 12}, // Python over the interpreter, into the kernel
		{3, 16, 5},                     // a native frame of two inline levels
		{7, 8, 14, 11},                 // a C program
		{9, 10, 11, 12, 13},            // a Go program
		{11, 12},                       // a kernel thread
		{15},
		{9, 10, 10, 10}, // recursion counts once in cum
	}
	stacks := make([]stackValue, len(all))
	for i, frames := range all {
		stacks[i] = stackValue{id: uint64(i + 1), value: int64(10 * (i + 1)), frames: frames}
	}
	tests := []struct {
		name           string
		hide, collapse []string
		function       string
	}{
		{name: "marks"},
		{name: "kernel hidden", hide: []string{"kernel"}},
		{name: "kernel collapsed, native hidden", hide: []string{"native"}, collapse: []string{"kernel"}},
		{name: "both collapsed", collapse: []string{"native", "kernel"}},
		{name: "self filter on the shaped leaf", hide: []string{"kernel"}, function: "runtime.mallocgc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Request{Type: TypeProfile, ProfileType: cpuType(t)}
			var err error
			r.HideFrames, err = parseFrameKinds("hideFrames", tt.hide)
			require.NoError(t, err)
			r.CollapseFrames, err = parseFrameKinds("collapseFrames", tt.collapse)
			require.NoError(t, err)
			r.Function, r.FunctionSelf = tt.function, tt.function != ""

			names := flame.NewNames(0)
			var want []string
			fns := flame.NewFunctions(names)
			var wantValues []int64
			eachPath(stacks, kindNamesOf(), names, shapeOf(r), func(path []int32, value int64) {
				want = append(want, joinLabels(names, path))
				wantValues = append(wantValues, value)
				fns.Add(path, value)
			})
			p := buildPprof(r, stacks, kindNamesOf(), 0)
			require.NoError(t, p.CheckValid())
			require.Equal(t, want, pprofPaths(p), "the samples' paths are the flame graph's")
			var values []int64
			for _, s := range p.Sample {
				values = append(values, s.Value[0])
			}
			require.Equal(t, wantValues, values)

			flat, cum := pprofTop(p)
			wantFlat, wantCum := map[string]int64{}, map[string]int64{}
			for _, f := range fns.Top(0) {
				if f.Self != 0 {
					wantFlat[f.Label] = f.Self
				}
				wantCum[f.Label] = f.Total
			}
			require.Equal(t, wantFlat, flat, "flat per function is the table's self")
			require.Equal(t, wantCum, cum, "cum per function is the table's total")
		})
	}
}

func TestPprofLocations(t *testing.T) {
	fn := &frameNames{
		labels: map[uint64]string{1: "main", 2: "[libc.so.6]", 3: "memcpy", 4: "outer", 5: "parse"},
		levels: map[uint64][]string{4: {"outer", "inlined"}},
		details: map[uint64]*frameDetail{
			1: {file: "/src/main.c", line: 12, mappingFile: "/usr/bin/app", buildID: "aa11", systemName: "main"},
			2: {mappingFile: "/usr/lib/libc.so.6", buildID: "bb22", address: 0x7f0000012345, mappingStart: 0x7f0000000000, mappingOffset: 0x1000},
			3: {
				mappingFile: "/usr/lib/libc.so.6", buildID: "bb22", address: 0x7f0000020000, mappingStart: 0x7f0000000000, mappingOffset: 0x1000,
				levels: []lineDetail{{file: "string/memcpy.S", line: 40}},
			},
			4: {
				mappingFile: "/usr/bin/app", buildID: "aa11", address: 0x401000,
				levels: []lineDetail{{file: "inl.h", line: 7}, {file: "outer.c", line: 90}},
			},
			5: {file: "parse.go", line: 3, systemName: "pkg.(*T).parse"},
		},
	}
	stacks := []stackValue{
		{id: 1, value: 5, frames: []uint64{1, 2}},
		{id: 2, value: 3, frames: []uint64{1, 3}},
		{id: 3, value: 2, frames: []uint64{1, 4, 5}},
		{id: 4, value: 1, frames: []uint64{1, 99}}, // a frame that is not stored
	}
	from := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	r := &Request{
		Type: TypeProfile, ProfileType: cpuType(t), From: from, To: from.Add(time.Hour),
		Matchers: []selector.Matcher{{Name: "service_name", Op: selector.Equal, Value: "app"}},
	}
	p := buildPprof(r, stacks, fn, 10_000_000)
	require.NoError(t, p.CheckValid())

	var buf bytes.Buffer
	require.NoError(t, p.Write(&buf))
	p, err := profile.Parse(&buf)
	require.NoError(t, err, "the file reads back")

	require.Equal(t, []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}, p.SampleType)
	require.Equal(t, &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, p.PeriodType)
	require.Equal(t, int64(10_000_000), p.Period)
	require.Equal(t, from.UnixNano(), p.TimeNanos)
	require.Equal(t, time.Hour.Nanoseconds(), p.DurationNanos)
	require.Equal(t, []string{`flamehouse ` + cpu + ` {service_name="app"} 2026-11-20T09:00:00Z to 2026-11-20T10:00:00Z`}, p.Comments)
	require.Equal(t, []string{"main;[libc.so.6]", "main;memcpy", "main;outer;inlined;parse", "main;unknown"}, pprofPaths(p))

	require.Len(t, p.Mapping, 2, "one mapping per file, build id and placement")
	libc := p.Sample[0].Location[0]
	require.Equal(t, uint64(0x7f0000012345), libc.Address)
	require.Equal(t, "/usr/lib/libc.so.6", libc.Mapping.File)
	require.Equal(t, "bb22", libc.Mapping.BuildID)
	require.Equal(t, uint64(0x7f0000000000), libc.Mapping.Start)
	require.Equal(t, uint64(0x1000), libc.Mapping.Offset)
	require.Same(t, libc.Mapping, p.Sample[1].Location[0].Mapping)
	require.Equal(t, "string/memcpy.S", p.Sample[1].Location[0].Line[0].Function.Filename, "a resolved frame's line from the symbol store")
	require.Equal(t, int64(40), p.Sample[1].Location[0].Line[0].Line)

	main := p.Sample[0].Location[1]
	require.Same(t, main, p.Sample[1].Location[1], "a frame is one location")
	require.Equal(t, "/src/main.c", main.Line[0].Function.Filename)
	require.Equal(t, int64(12), main.Line[0].Line)
	require.Equal(t, "aa11", main.Mapping.BuildID)

	inline := p.Sample[2].Location[1]
	require.Len(t, inline.Line, 2, "inline levels are one location's lines")
	require.Equal(t, "inlined", inline.Line[0].Function.Name, "innermost first")
	require.Equal(t, []any{"inl.h", int64(7)}, []any{inline.Line[0].Function.Filename, inline.Line[0].Line})
	require.Equal(t, []any{"outer", "outer.c", int64(90)}, []any{inline.Line[1].Function.Name, inline.Line[1].Function.Filename, inline.Line[1].Line})
	require.Equal(t, uint64(0x401000), inline.Address)
	require.Equal(t, "pkg.(*T).parse", p.Sample[2].Location[0].Line[0].Function.SystemName)

	unknown := p.Sample[3].Location[0]
	require.Nil(t, unknown.Mapping)
	require.Equal(t, "unknown", unknown.Line[0].Function.Name)
}

func TestPprofGroupsAsLabels(t *testing.T) {
	fn := kindNamesOf()
	fn.groups = []string{"python3.11, 7", "(no process_executable_name), 9"}
	fn.groupValues = [][]string{{"python3.11", "7"}, {"", "9"}}
	stacks := []stackValue{
		{id: 1, value: 7, frames: []uint64{3, 5}, group: 0},
		{id: 2, value: 5, frames: []uint64{11}, group: 1},
	}
	r := &Request{Type: TypeProfile, ProfileType: cpuType(t), GroupBy: []string{"process_executable_name", "process_pid"}}
	p := buildPprof(r, stacks, fn, 0)
	require.NoError(t, p.CheckValid())
	require.Equal(t, []string{"<module>;py_alpha", "do_syscall_64 [kernel]"}, pprofPaths(p), "groups are labels, not frames")
	require.Equal(t, map[string][]string{"process_executable_name": {"python3.11"}, "process_pid": {"7"}}, p.Sample[0].Label)
	require.Equal(t, map[string][]string{"process_executable_name": {""}, "process_pid": {"9"}}, p.Sample[1].Label)

	r.Type = TypeTable // tables are not grouped: no labels
	p = buildPprof(r, stacks, fn, 0)
	require.Nil(t, p.Sample[0].Label)
}

func TestPprofFileName(t *testing.T) {
	from := time.Date(2026, 11, 20, 9, 0, 5, 0, time.UTC)
	tests := []struct {
		selector, want string
	}{
		{`{service_name="checkout"}`, "flamehouse-process_cpu-checkout-20261120T090005Z.pb.gz"},
		{`{}`, "flamehouse-process_cpu-all-20261120T090005Z.pb.gz"},
		{`{service_name=~"check.*"}`, "flamehouse-process_cpu-all-20261120T090005Z.pb.gz"},
		{`{service_name="a/b \"c\""}`, "flamehouse-process_cpu-a_b__c_-20261120T090005Z.pb.gz"},
	}
	for _, tt := range tests {
		ms, err := selector.Parse(tt.selector)
		require.NoError(t, err)
		require.Equal(t, tt.want, PprofFileName(&Request{ProfileType: cpuType(t), Matchers: ms, From: from}), tt.selector)
	}
}

func cpuType(t *testing.T) ProfileType {
	t.Helper()
	pt, err := ParseProfileType(cpu)
	require.NoError(t, err)
	return pt
}
