package plugin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/otlpbuild"
)

// labelledLeaf is a leaf frame under "main" that each naming rule labels
// differently, with its own CPU time, its label at function granularity
// and at line granularity.
type labelledLeaf struct {
	function, system, file string
	line                   int64
	mapping                string
	address                uint64
	value                  int64
	label, lineLabel       string
}

var labelledLeaves = []labelledLeaf{
	{function: "compute", file: "src/compute.go", line: 42, value: 11, label: "compute", lineLabel: "compute src/compute.go:42"},
	{system: "_ZN4core3fmt5write17h", file: "src/fmt.rs", line: 7, value: 13, label: "_ZN4core3fmt5write17h", lineLabel: "_ZN4core3fmt5write17h src/fmt.rs:7"},
	{function: "noline", file: "src/noline.go", value: 17, label: "noline", lineLabel: "noline"},
	{file: "lib/only_file.py", line: 3, value: 19, label: "lib/only_file.py", lineLabel: "lib/only_file.py:3"},
	{mapping: "/usr/lib/x86_64-linux-gnu/libc.so.6", address: 0x401234, value: 23, label: "[libc.so.6]", lineLabel: "[libc.so.6]"},
	{mapping: `C:\Windows\System32\ntdll.dll`, address: 0x401235, value: 29, label: "[ntdll.dll]", lineLabel: "[ntdll.dll]"},
	{mapping: "/odd/trailing/", address: 0x401236, value: 31, label: "[]", lineLabel: "[]"},
	{address: 0x0abc, value: 37, label: "0xabc", lineLabel: "0xabc"},
	{address: 0, value: 41, label: "0x0", lineLabel: "0x0"},
}

// labelledRequest is one report of a service whose stacks are main and one
// labelled leaf each.
func labelledRequest(at time.Time) *collectorpb.ExportProfilesServiceRequest {
	b := otlpbuild.New()
	p := &pb.Profile{
		SampleType: b.ValueType("cpu", "nanoseconds"), PeriodType: b.ValueType("cpu", "nanoseconds"), Period: 1,
		TimeUnixNano: nanos(at),
	}
	otlpbuild.Scope(b.Resource("service.name", "labels"), "test", "1").Profiles = []*pb.Profile{p}
	root := b.Location(0, 0, "", otlpbuild.Line{Function: b.Function("main", "", "", 0)})
	for i, l := range labelledLeaves {
		var mapping int32
		if l.mapping != "" {
			start := 0x400000 + uint64(i)<<24
			mapping = b.Mapping(start, start+1<<24, 0, l.mapping, "")
		}
		var lines []otlpbuild.Line
		if l.function != "" || l.system != "" || l.file != "" {
			lines = append(lines, otlpbuild.Line{Function: b.Function(l.function, l.system, l.file, 0), Line: l.line})
		}
		leaf := b.Location(mapping, l.address, "", lines...)
		p.Samples = append(p.Samples, &pb.Sample{StackIndex: b.Stack(leaf, root), Values: []int64{l.value}})
	}
	return b.Request()
}

// TestFrameLabelsMatchFunctionFilters checks the names the flame graph
// gives frames (computed in Go from the frames' columns) against each
// naming rule, and that a function filter, which ClickHouse evaluates with
// its own expression of the same rule, finds each leaf by the name the
// flame graph shows.
func TestFrameLabelsMatchFunctionFilters(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	f.send(t, labelledRequest(at))
	from, to := at.Add(-time.Minute), at.Add(5*time.Minute)
	service := map[string]any{"labelSelector": `{service_name="labels"}`}
	flame := func(extra map[string]any) (map[string]int64, int64) { return f.flamePaths(t, service, extra, from, to) }

	var total int64
	want, wantLines := map[string]int64{}, map[string]int64{}
	for _, l := range labelledLeaves {
		total += l.value
		want["main;"+l.label] += l.value
		wantLines["main;"+l.lineLabel] += l.value
	}
	want["main"], wantLines["main"] = total, total

	paths, root := flame(nil)
	require.Equal(t, total, root)
	require.Equal(t, want, paths, "function granularity")
	paths, root = flame(map[string]any{"granularity": "line"})
	require.Equal(t, total, root)
	require.Equal(t, wantLines, paths, "line granularity")

	for _, l := range labelledLeaves {
		_, root := flame(map[string]any{"function": l.label})
		require.Equal(t, l.value, root, "the function filter %q finds the leaf the flame graph names so", l.label)
	}
}
