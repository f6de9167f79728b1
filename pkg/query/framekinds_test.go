package query

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
)

// kindFrames are frames of every kind, as the eBPF profiler sends them: a
// Python program (cpython frames over the interpreter's native frames,
// one named and one not, with a function inlined into another), a C
// program (native frames only), a Go program, and the kernel below all.
var kindFrames = map[uint64]struct {
	label string
	typ   string
}{
	1: {"_start", "native"}, 2: {"Py_RunMain", "native"}, 3: {"<module>", "cpython"}, 4: {"[libpython3.11.so.1.0]", "native"},
	5: {"py_alpha", "cpython"}, 6: {"_PyEval_EvalFrameDefault", "native"}, 7: {"main", "native"}, 8: {"c_work", "native"},
	9: {"main.main", "go"}, 10: {"runtime.mallocgc", "go"}, 11: {"do_syscall_64", "kernel"}, 12: {"ksys_read", "kernel"},
	13: {"[vmlinux]", "kernel"}, 14: {"memcpy", "native"}, 15: {"plain", ""}, 16: {"outer", "native"},
}

// kindNames is the answer's names of kindFrames, frame 16 with two inline
// levels.
func kindNamesOf() *frameNames {
	fn := &frameNames{labels: map[uint64]string{}, levels: map[uint64][]string{16: {"outer", "inlined"}}}
	for id, f := range kindFrames {
		fn.labels[id] = f.label
		fn.setKind(id, kindOfType(f.typ))
	}
	return fn
}

func TestFrameKindsShapePaths(t *testing.T) {
	python := []uint64{1, 2, 3, 4, 5, 6, 14, 11, 12}
	pythonInline := []uint64{3, 16, 5}
	c := []uint64{7, 8, 14, 11}
	goStack := []uint64{9, 10, 11, 12, 13}
	kernelOnly := []uint64{11, 12}
	all := [][]uint64{python, pythonInline, c, goStack, kernelOnly, {15}}
	tests := []struct {
		name           string
		hide, collapse []string
		want           []string // one per stack of all, labels joined by ";"
	}{
		{
			name: "marks: kernel frames everywhere, native frames of stacks with interpreted frames; unnamed frames as they are",
			want: []string{
				"_start [native];Py_RunMain [native];<module>;[libpython3.11.so.1.0];py_alpha;_PyEval_EvalFrameDefault [native];memcpy [native];do_syscall_64 [kernel];ksys_read [kernel]",
				"<module>;outer [native];inlined [native];py_alpha",
				"main;c_work;memcpy;do_syscall_64 [kernel]",
				"main.main;runtime.mallocgc;do_syscall_64 [kernel];ksys_read [kernel];[vmlinux]",
				"do_syscall_64 [kernel];ksys_read [kernel]",
				"plain",
			},
		},
		{
			name: "hide kernel: the samples go to the caller, a kernel-only stack to the root",
			hide: []string{"kernel"},
			want: []string{
				"_start [native];Py_RunMain [native];<module>;[libpython3.11.so.1.0];py_alpha;_PyEval_EvalFrameDefault [native];memcpy [native]",
				"<module>;outer [native];inlined [native];py_alpha",
				"main;c_work;memcpy",
				"main.main;runtime.mallocgc",
				"",
				"plain",
			},
		},
		{
			name:     "collapse kernel, hide the interpreter's native frames: the Python program's own functions",
			hide:     []string{"native"},
			collapse: []string{"kernel"},
			want: []string{
				"<module>;py_alpha;[kernel]",
				"<module>;py_alpha",
				"main;c_work;memcpy;[kernel]",
				"main.main;runtime.mallocgc;[kernel]",
				"[kernel]",
				"plain",
			},
		},
		{
			name:     "collapse both: one node per run",
			collapse: []string{"native", "kernel"},
			want: []string{
				"[native];<module>;[native];py_alpha;[native];[kernel]",
				"<module>;[native];py_alpha",
				"main;c_work;memcpy;[kernel]",
				"main.main;runtime.mallocgc;[kernel]",
				"[kernel]",
				"plain",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hide, err := parseFrameKinds("hideFrames", tt.hide)
			require.NoError(t, err)
			collapse, err := parseFrameKinds("collapseFrames", tt.collapse)
			require.NoError(t, err)
			shape := pathShape{hide: hide, collapse: collapse}
			stacks := make([]stackValue, len(all))
			for i, frames := range all {
				stacks[i] = stackValue{id: uint64(i), value: int64(10 * (i + 1)), frames: frames}
			}
			// The flame graph's way (dense frame numbers) and the diff's (frame ids) agree.
			names := flame.NewNames(0)
			var got []string
			eachPath(stacks, kindNamesOf(), names, shape, func(path []int32, value int64) {
				got = append(got, joinLabels(names, path))
				require.Equal(t, stacks[len(got)-1].value, value)
			})
			require.Equal(t, tt.want, got)
			names = flame.NewNames(0)
			p := newPather(names, shape, kindNamesOf())
			for i, s := range stacks {
				path, keep := p.idPath(nil, s.frames)
				require.True(t, keep)
				require.Equal(t, tt.want[i], joinLabels(names, path), "stack %d by frame ids", i)
			}
		})
	}
}

// TestFrameKindsKeepTotals checks that hiding and collapsing move a
// frame's samples to its caller: the tree's total and every remaining
// node's total over the frames it stands for stay the same.
func TestFrameKindsKeepTotals(t *testing.T) {
	stacks := []stackValue{
		{id: 1, value: 7, frames: []uint64{1, 2, 3, 4, 5, 6, 14, 11, 12}},
		{id: 2, value: 5, frames: []uint64{9, 10, 11}},
		{id: 3, value: 3, frames: []uint64{11, 12}},
		{id: 4, value: 2, frames: []uint64{7, 8}},
	}
	total := func(shape pathShape) (int64, map[string]int64) {
		names := flame.NewNames(0)
		tree := flame.NewTree(names)
		fns := flame.NewFunctions(names)
		eachPath(stacks, kindNamesOf(), names, shape, func(path []int32, value int64) {
			tree.Add(path, value)
			fns.Add(path, value)
		})
		byLabel := map[string]int64{}
		for _, f := range fns.Top(0) {
			byLabel[f.Label] = f.Total
		}
		return tree.Total(), byLabel
	}
	plain, plainFns := total(pathShape{})
	require.Equal(t, int64(17), plain)
	hidden, hiddenFns := total(pathShape{hide: 1 << kindKernel})
	require.Equal(t, plain, hidden, "hidden frames' samples stay in the tree")
	require.Equal(t, plainFns["main.main"], hiddenFns["main.main"])
	require.Equal(t, plainFns["py_alpha"], hiddenFns["py_alpha"])
	require.NotContains(t, hiddenFns, "do_syscall_64 [kernel]")
	collapsed, collapsedFns := total(pathShape{collapse: 1 << kindKernel})
	require.Equal(t, plain, collapsed)
	require.Equal(t, plainFns["do_syscall_64 [kernel]"], collapsedFns["[kernel]"], "every kernel run starts with do_syscall_64")
}

func TestSelfFilterOnShapedLeaf(t *testing.T) {
	stacks := []stackValue{
		{id: 1, value: 7, frames: []uint64{9, 10, 11, 12}}, // runtime.mallocgc, then the kernel
		{id: 2, value: 5, frames: []uint64{9, 10}},         // runtime.mallocgc is the leaf
		{id: 3, value: 3, frames: []uint64{9}},
	}
	sum := func(shape pathShape) int64 {
		var total int64
		eachPath(stacks, kindNamesOf(), flame.NewNames(0), shape, func(_ []int32, v int64) { total += v })
		return total
	}
	require.Equal(t, int64(12), sum(pathShape{hide: 1 << kindKernel, leaf: "runtime.mallocgc"}), "the leaf shown once the kernel is hidden")
	require.Equal(t, int64(7), sum(pathShape{collapse: 1 << kindKernel, leaf: "[kernel]"}))
	require.Equal(t, int64(15), sum(pathShape{}), "without a leaf filter every stack")
}

func TestGroupedPathsStartWithTheirGroup(t *testing.T) {
	fn := kindNamesOf()
	fn.groups = []string{"python3.11", "(no process_executable_name)"}
	stacks := []stackValue{
		{id: 1, value: 7, frames: []uint64{3, 5}, group: 0},
		{id: 2, value: 5, frames: []uint64{11}, group: 1},
		{id: 3, value: 1, frames: []uint64{11}, group: 1},
	}
	names := flame.NewNames(0)
	var got []string
	eachPath(stacks, fn, names, pathShape{hide: 1 << kindKernel}, func(path []int32, _ int64) { got = append(got, joinLabels(names, path)) })
	require.Equal(t, []string{"python3.11;<module>;py_alpha", "(no process_executable_name)", "(no process_executable_name)"}, got)
}

func TestParseFrameKinds(t *testing.T) {
	tests := []struct {
		json, err string
		hide      []string
	}{
		{json: `{"hideFrames":["kernel"," native "]}`, hide: []string{"kernel", "native"}},
		{json: `{"hideFrames":["go"]}`, err: `hideFrames: "go" is not a frame kind (kernel or native)`},
		{json: `{"collapseFrames":[""]}`, err: `collapseFrames: "" is not a frame kind`},
		{json: `{"hideFrames":["kernel"],"collapseFrames":["kernel","native"]}`, err: "hidden or collapsed, not both: kernel"},
		{json: `{"queryType":"spans","hideFrames":["kernel"]}`, err: `not queryType "spans"`},
		{json: `{"queryType":"metrics","hideFrames":["kernel"]}`, hide: []string{"kernel"}},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			q := strings.Replace(tt.json, "{", `{"profileTypeId":"`+cpu+`",`, 1)
			from := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
			r, err := ParseRequest([]byte(q), from, from.Add(time.Hour), 0, Options{})
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.hide, r.HideFrames.Names())
		})
	}
}

func TestMarkedFunction(t *testing.T) {
	tests := []struct {
		fn, label string
		kind      frameKind
		whole, ok bool
	}{
		{fn: "do_syscall_64 [kernel]", label: "do_syscall_64", kind: kindKernel, ok: true},
		{fn: "memcpy [native]", label: "memcpy", kind: kindNative, ok: true},
		{fn: "[kernel]", kind: kindKernel, whole: true, ok: true},
		{fn: "[native]", kind: kindNative, whole: true, ok: true},
		{fn: "[libc.so.6] [native]"}, // a mapping's label is never marked
		{fn: " [kernel]"},
		{fn: "regexp.Compile"},
		{fn: "x [go]"},
	}
	for _, tt := range tests {
		label, kind, whole, ok := markedFunction(tt.fn)
		require.Equal(t, tt.ok, ok, tt.fn)
		if ok {
			require.Equal(t, []any{tt.label, tt.kind, tt.whole}, []any{label, kind, whole}, tt.fn)
			if !whole {
				require.Equal(t, tt.fn, markLabel(label, kind), "marking undoes it")
			}
		}
	}
}

func joinLabels(names *flame.Names, path []int32) string {
	labels := make([]string, len(path))
	for i, id := range path {
		labels[i] = names.Label(id)
	}
	return strings.Join(labels, ";")
}
