package peer

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	googlev1 "github.com/grafana/pyroscope/api/gen/proto/go/google/v1"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/pkg/query/flame"
)

// peerAnswers is what the answers check compares between two systems over
// one range: the flame graph's root and the top functions by self.
type peerAnswers struct {
	root int64
	top  []flame.Function
}

// peerAnswersAgree says where two systems' answers differ: the roots, or
// any of the top functions' label, self or total, in order.
func peerAnswersAgree(ours, theirs peerAnswers) error {
	var errs []error
	if ours.root != theirs.root {
		errs = append(errs, fmt.Errorf("flame graph root %d, theirs %d", ours.root, theirs.root))
	}
	if len(ours.top) != len(theirs.top) {
		errs = append(errs, fmt.Errorf("%d top functions, theirs %d", len(ours.top), len(theirs.top)))
	}
	for i := range min(len(ours.top), len(theirs.top)) {
		if a, b := ours.top[i], theirs.top[i]; a != b {
			errs = append(errs, fmt.Errorf("top function %d: %q self %d total %d, theirs %q self %d total %d", i+1, a.Label, a.Self, a.Total, b.Label, b.Self, b.Total))
		}
	}
	return errors.Join(errs...)
}

// withoutMarks is the functions with their labels' frame kind marks
// dropped (withoutMark).
func withoutMarks(fns []flame.Function) []flame.Function {
	out := make([]flame.Function, len(fns))
	for i, f := range fns {
		f.Label = plugintest.WithoutMark(f.Label)
		out[i] = f
	}
	return out
}

// pprofTop is a pprof profile's top functions (by self, then total, then
// label; limit > 0 keeps that many) of its first sample type, with frames
// labelled as the datasource labels them (frameLabelSQL, and querytest.FunctionLabel
// in its tests): a line by its function's name, else its system name; a
// location without lines (an unsymbolized frame) by its mapping's file,
// "[libc.so.6]", else its address. A location's lines are its frames,
// the innermost (the leaf's side) first.
func pprofTop(p *googlev1.Profile, limit int) ([]flame.Function, error) {
	str := func(i int64) string {
		if i >= 0 && int(i) < len(p.GetStringTable()) {
			return p.GetStringTable()[i]
		}
		return ""
	}
	labels, err := pprofLocationLabels(p, str)
	if err != nil {
		return nil, err
	}
	names := flame.NewNames(0)
	fns := flame.NewFunctions(names)
	var stack []int32
	for _, s := range p.GetSample() {
		if len(s.GetValue()) == 0 {
			return nil, errors.New("a sample without values")
		}
		stack = stack[:0]
		ids := s.GetLocationId()
		for i := len(ids) - 1; i >= 0; i-- { // root first
			ls, ok := labels[ids[i]]
			if !ok {
				return nil, fmt.Errorf("no location %d", ids[i])
			}
			for j := len(ls) - 1; j >= 0; j-- {
				stack = append(stack, names.ID(ls[j]))
			}
		}
		fns.Add(stack, s.GetValue()[0])
	}
	return fns.Top(limit), nil
}

// pprofLocationLabels are the labels of each location's frames (see
// pprofTop), innermost first, by location id.
func pprofLocationLabels(p *googlev1.Profile, str func(int64) string) (map[uint64][]string, error) {
	functions := map[uint64]*googlev1.Function{}
	for _, f := range p.GetFunction() {
		functions[f.GetId()] = f
	}
	mappings := map[uint64]*googlev1.Mapping{}
	for _, m := range p.GetMapping() {
		mappings[m.GetId()] = m
	}
	labels := map[uint64][]string{} // location id → its frames' labels, innermost first
	for _, loc := range p.GetLocation() {
		var ls []string
		for _, line := range loc.GetLine() {
			f, ok := functions[line.GetFunctionId()]
			if !ok {
				return nil, fmt.Errorf("location %d: no function %d", loc.GetId(), line.GetFunctionId())
			}
			name := str(f.GetName())
			if name == "" {
				name = str(f.GetSystemName())
			}
			ls = append(ls, name)
		}
		if len(ls) == 0 {
			if file := str(mappings[loc.GetMappingId()].GetFilename()); file != "" {
				ls = append(ls, "["+path.Base(file)+"]")
			} else {
				ls = append(ls, "0x"+strconv.FormatUint(loc.GetAddress(), 16))
			}
		}
		labels[loc.GetId()] = ls
	}
	return labels, nil
}

// pyroscopeFlameRoot runs SelectMergeStacktraces over [q.from, to] and
// returns its flame graph's total.
func (s *peerSide) pyroscopeFlameRoot(b *testing.B, q peerQuery, to time.Time) int64 {
	b.Helper()
	maxNodes := int64(peerMaxNodes)
	resp, err := s.pyro.Querier(s.tenant).SelectMergeStacktraces(context.Background(), connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
		ProfileTypeID: plugintest.CPUType, LabelSelector: q.pyro, Start: q.from.UnixMilli(), End: to.UnixMilli(), MaxNodes: &maxNodes,
	}))
	require.NoError(b, err, "pyroscope %s", q.name)
	fg := resp.Msg.GetFlamegraph()
	require.NotEmpty(b, fg.GetLevels(), "pyroscope %s: a flame graph", q.name)
	return fg.GetTotal()
}

// pyroscopeTop is the top functions of Pyroscope's merged profile over
// [from, to]: SelectMergeProfile, which the server does not truncate by
// default (querier.max-flamegraph-nodes-on-select-merge-profile), where
// SelectMergeStacktraces in pprof format, its named successor, keeps
// max-nodes (8192 by default) of it.
func (s *peerSide) pyroscopeTop(b *testing.B, selector string, from, to time.Time) []flame.Function {
	b.Helper()
	req := connect.NewRequest(&querierv1.SelectMergeProfileRequest{
		ProfileTypeID: plugintest.CPUType, LabelSelector: selector, Start: from.UnixMilli(), End: to.UnixMilli(),
	})
	resp, err := s.pyro.Querier(s.tenant).SelectMergeProfile(context.Background(), req) //nolint:staticcheck // SA1019: the untruncated profile, see above
	require.NoError(b, err, "pyroscope merged profile")
	top, err := pprofTop(resp.Msg, peerTopFunctions)
	require.NoError(b, err, "pyroscope merged profile")
	return top
}

// TestPeerAnswersDisagreeOnAnyDifference plants each kind of mismatch the
// answers check must catch.
func TestPeerAnswersDisagreeOnAnyDifference(t *testing.T) {
	top := []flame.Function{{Label: "main.work", Self: 300, Total: 900}, {Label: "[libc.so.6]", Self: 200, Total: 200}, {Label: "main.idle", Self: 100, Total: 100}}
	ours := peerAnswers{root: 1000, top: top}
	changed := func(f func(a *peerAnswers)) peerAnswers {
		a := peerAnswers{root: ours.root, top: append([]flame.Function(nil), top...)}
		f(&a)
		return a
	}
	require.NoError(t, peerAnswersAgree(ours, changed(func(*peerAnswers) {})))
	// The datasource's frame kind marks are dropped before comparing;
	// Pyroscope names such frames bare. An unmarked "[libc.so.6]" stays.
	marked := changed(func(a *peerAnswers) { a.top[0].Label += " [kernel]"; a.top[2].Label += " [native]" })
	require.Error(t, peerAnswersAgree(marked, ours))
	require.NoError(t, peerAnswersAgree(peerAnswers{root: marked.root, top: withoutMarks(marked.top)}, ours))
	for _, tc := range []struct {
		name, want string
		theirs     peerAnswers
	}{
		{"root", "root 1000, theirs 999", changed(func(a *peerAnswers) { a.root-- })},
		{"a self value", `top function 2: "[libc.so.6]" self 200 total 200, theirs "[libc.so.6]" self 201`, changed(func(a *peerAnswers) { a.top[1].Self++ })},
		{"a total value", "theirs \"main.work\" self 300 total 901", changed(func(a *peerAnswers) { a.top[0].Total++ })},
		{"a label", `theirs "main.busy"`, changed(func(a *peerAnswers) { a.top[2].Label = "main.busy" })},
		{"the order", `top function 1: "main.work"`, changed(func(a *peerAnswers) { a.top[0], a.top[1] = a.top[1], a.top[0] })},
		{"a missing function", "3 top functions, theirs 2", changed(func(a *peerAnswers) { a.top = a.top[:2] })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := peerAnswersAgree(ours, tc.theirs)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestPprofTopLabelsFramesAsTheDatasource builds a merged profile by hand:
// an inlined call, an unsymbolized libc frame, a frame without a mapping
// file and a recursive stack.
func TestPprofTopLabelsFramesAsTheDatasource(t *testing.T) {
	strs := []string{"", "main.main", "main.work", "main.inlined", "/lib/x86_64-linux-gnu/libc.so.6", "runtime.sys"}
	p := &googlev1.Profile{
		StringTable: strs,
		SampleType:  []*googlev1.ValueType{{Type: 0, Unit: 0}},
		Mapping:     []*googlev1.Mapping{{Id: 1}, {Id: 2, Filename: 4}},
		Function:    []*googlev1.Function{{Id: 1, Name: 1}, {Id: 2, Name: 2}, {Id: 3, Name: 3}, {Id: 4, SystemName: 5}},
		Location: []*googlev1.Location{
			{Id: 1, MappingId: 1, Line: []*googlev1.Line{{FunctionId: 1}}},
			// main.inlined inlined into main.work: the innermost line first
			{Id: 2, MappingId: 1, Line: []*googlev1.Line{{FunctionId: 3}, {FunctionId: 2}}},
			{Id: 3, MappingId: 2, Address: 0x7f0000001234},
			{Id: 4, MappingId: 1, Address: 0xabc},
			{Id: 5, MappingId: 1, Line: []*googlev1.Line{{FunctionId: 4}}},
		},
		Sample: []*googlev1.Sample{
			{LocationId: []uint64{2, 1}, Value: []int64{50}},    // main → work → inlined
			{LocationId: []uint64{3, 2, 1}, Value: []int64{30}}, // ... → libc
			{LocationId: []uint64{4, 1}, Value: []int64{5}},     // main → 0xabc
			{LocationId: []uint64{1, 1}, Value: []int64{7}},     // main → main: recursion
			{LocationId: []uint64{5, 1}, Value: []int64{30}},    // main → runtime.sys (a system name only)
		},
	}
	top, err := pprofTop(p, 0)
	require.NoError(t, err)
	require.Equal(t, []flame.Function{
		{Label: "main.inlined", Self: 50, Total: 80},
		{Label: "[libc.so.6]", Self: 30, Total: 30},
		{Label: "runtime.sys", Self: 30, Total: 30},
		{Label: "main.main", Self: 7, Total: 122},
		{Label: "0xabc", Self: 5, Total: 5},
		{Label: "main.work", Self: 0, Total: 80},
	}, top)
	two, err := pprofTop(p, 2)
	require.NoError(t, err)
	require.Equal(t, top[:2], two)

	p.Sample = append(p.Sample, &googlev1.Sample{LocationId: []uint64{9}, Value: []int64{1}})
	_, err = pprofTop(p, 0)
	require.ErrorContains(t, err, "no location 9")
	require.True(t, strings.HasPrefix(top[1].Label, "["))
}

// TestLatencyMisses: a flame graph misses the target when it is
// slower than Pyroscope's, and the proposed one only when it is also
// slower than proposedLatencyFloorMS.
func TestLatencyMisses(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	ours := &peerSide{lat: map[string][]time.Duration{"fast": ms(9, 10, 11), "small": ms(30, 40, 45), "slow": ms(70, 80, 90), "tie": ms(20)}}
	theirs := &peerSide{lat: map[string][]time.Duration{"fast": ms(12), "small": ms(3), "slow": ms(60), "tie": ms(20)}}
	slower, slowerThanFloor := latencyMisses([]string{"fast", "small", "slow", "tie"}, ours, theirs)
	require.Equal(t, []string{"small 40.0 > 3.0 ms", "slow 80.0 > 60.0 ms"}, slower)
	require.Equal(t, []string{"slow 80.0 > 60.0 ms"}, slowerThanFloor)
}

// TestCoreBytes: the bound counts the raw samples, stacks and frames
// tables of a side and nothing else, and says the bytes target is out of
// reach only above it.
func TestCoreBytes(t *testing.T) {
	disk := []tableDisk{
		{table: "otel_profile_frames", bytes: 100},
		{table: "otel_profile_stacks", bytes: 20},
		{table: "otel_profile_samples", bytes: 7},
		{table: "otel_profile_samples_1m", bytes: 5},
		{table: "otel_profile_service_samples_1h", bytes: 4},
		{table: "otel_profile_series", bytes: 3},
		{table: "otel_profile_symbols", bytes: 1000},
	}
	require.Equal(t, int64(127), coreBytes(disk))
	require.Zero(t, coreBytes(nil))
	require.Contains(t, boundVerdict(0.51), "out of reach")
	require.Empty(t, boundVerdict(0.5))
}
