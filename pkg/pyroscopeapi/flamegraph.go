package pyroscopeapi

import (
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	profilev1 "github.com/grafana/pyroscope/api/gen/proto/go/google/v1"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
)

// nestedSet is the engine's flame graph frame ("response", rows in
// depth-first pre-order from one root "total") read into slices: each
// row's level, total and self, and its label as an index into names (the
// label enum's texts). A diff frame also has the right side's totals and
// selfs; its value and self are the left side's.
type nestedSet struct {
	level, value, self    []int64
	valueRight, selfRight []int64
	label                 []int
	names                 []string
	diff                  bool
}

// readNestedSet reads a flame graph frame. It checks what the conversions
// rely on: the fields and their types, labels within the enum, levels
// that start at 0 and go down one at a time.
func readNestedSet(f *data.Frame) (*nestedSet, error) {
	ns := &nestedSet{}
	var err error
	if ns.level, err = int64Field(f, "level"); err != nil {
		return nil, err
	}
	if ns.value, err = int64Field(f, "value"); err != nil {
		return nil, err
	}
	if ns.self, err = int64Field(f, "self"); err != nil {
		return nil, err
	}
	if _, i := f.FieldByName("valueRight"); i >= 0 {
		ns.diff = true
		if ns.valueRight, err = int64Field(f, "valueRight"); err != nil {
			return nil, err
		}
		if ns.selfRight, err = int64Field(f, "selfRight"); err != nil {
			return nil, err
		}
	}
	label, _ := f.FieldByName("label")
	if label == nil || label.Type() != data.FieldTypeEnum {
		return nil, fmt.Errorf("flame graph frame: no enum field %q", "label")
	}
	if label.Config != nil && label.Config.TypeConfig != nil && label.Config.TypeConfig.Enum != nil {
		ns.names = label.Config.TypeConfig.Enum.Text
	}
	ns.label = make([]int, label.Len())
	for i := range ns.label {
		v, _ := label.At(i).(data.EnumItemIndex)
		if int(v) >= len(ns.names) {
			return nil, fmt.Errorf("flame graph frame: row %d names label %d of %d", i, v, len(ns.names))
		}
		ns.label[i] = int(v)
	}
	for i, l := range ns.level {
		switch {
		case i == 0 && l != 0, i > 0 && (l < 1 || l > ns.level[i-1]+1):
			return nil, fmt.Errorf("flame graph frame: row %d has level %d after %d", i, l, ns.level[max(i-1, 0)])
		}
	}
	return ns, nil
}

func int64Field(f *data.Frame, name string) ([]int64, error) {
	field, _ := f.FieldByName(name)
	if field == nil || field.Type() != data.FieldTypeInt64 {
		return nil, fmt.Errorf("flame graph frame: no int64 field %q", name)
	}
	out := make([]int64, field.Len())
	for i := range out {
		out[i], _ = field.At(i).(int64)
	}
	return out, nil
}

// positions places each row on the x axis of its side as Pyroscope does:
// a node's self first, then its children in the rows' order, each where
// its previous sibling ends.
func positions(level, value, self []int64) []int64 {
	x := make([]int64, len(level))
	var next []int64 // next[l]: where the next child of the open node of level l starts
	for i, l := range level {
		if l > 0 {
			x[i] = next[l-1]
			next[l-1] += value[i]
		}
		next = append(next[:l], x[i]+self[i])
	}
	return x
}

// flameGraph converts a flame graph frame to Pyroscope's flame graph: the
// names, and per level the nodes left to right as quadruples [x offset
// from the end of the level's previous node, total, self, name index]
// (the flamebearer layout Grafana's Pyroscope datasource reads back into a
// tree). A frame without rows is an empty flame graph.
func flameGraph(ns *nestedSet) *querierv1.FlameGraph {
	fg := &querierv1.FlameGraph{Names: ns.names}
	if len(ns.level) == 0 {
		fg.Names = []string{"total"}
		fg.Levels = []*querierv1.Level{{Values: []int64{0, 0, 0, 0}}}
		return fg
	}
	x := positions(ns.level, ns.value, ns.self)
	var end []int64
	for i, l := range ns.level {
		if int(l) == len(fg.Levels) {
			fg.Levels = append(fg.Levels, &querierv1.Level{})
			end = append(end, 0)
		}
		lv := fg.Levels[l]
		lv.Values = append(lv.Values, x[i]-end[l], ns.value[i], ns.self[i], int64(ns.label[i]))
		end[l] = x[i] + ns.value[i]
		fg.MaxSelf = max(fg.MaxSelf, ns.self[i])
	}
	fg.Total = ns.value[0]
	return fg
}

// flameGraphDiff converts a diff frame to Pyroscope's diff flame graph:
// per node [left x offset, left total, left self, right x offset, right
// total, right self, name index], each side's offsets from the end of its
// previous node on the level; Total is both sides' totals together.
func flameGraphDiff(ns *nestedSet) *querierv1.FlameGraphDiff {
	fg := &querierv1.FlameGraphDiff{Names: ns.names}
	if len(ns.level) == 0 {
		fg.Names = []string{"total"}
		fg.Levels = []*querierv1.Level{{Values: []int64{0, 0, 0, 0, 0, 0, 0}}}
		return fg
	}
	xl, xr := positions(ns.level, ns.value, ns.self), positions(ns.level, ns.valueRight, ns.selfRight)
	var endL, endR []int64
	for i, l := range ns.level {
		if int(l) == len(fg.Levels) {
			fg.Levels = append(fg.Levels, &querierv1.Level{})
			endL, endR = append(endL, 0), append(endR, 0)
		}
		lv := fg.Levels[l]
		lv.Values = append(lv.Values, xl[i]-endL[l], ns.value[i], ns.self[i], xr[i]-endR[l], ns.valueRight[i], ns.selfRight[i], int64(ns.label[i]))
		endL[l], endR[l] = xl[i]+ns.value[i], xr[i]+ns.valueRight[i]
		fg.MaxSelf = max(fg.MaxSelf, ns.self[i], ns.selfRight[i])
	}
	fg.LeftTicks, fg.RightTicks = ns.value[0], ns.valueRight[0]
	fg.Total = fg.LeftTicks + fg.RightTicks
	return fg
}

// profileMeta is what a pprof profile says besides its samples.
type profileMeta struct {
	sampleType, sampleUnit, periodType, periodUnit string
	startNanos, durationNanos                      int64
}

// pprofProfile converts a flame graph frame to a pprof profile: a function
// and a location per distinct label (the flame graph's names: frames merged
// by function, "other" for folded nodes), and a sample per node with self
// value, its stack leaf first (the root "total" is no frame: its own self
// is a sample without locations). Summing the samples per stack gives the
// flame graph back.
func pprofProfile(ns *nestedSet, meta profileMeta) *profilev1.Profile {
	p := &profilev1.Profile{StringTable: []string{""}, TimeNanos: meta.startNanos, DurationNanos: meta.durationNanos}
	str := map[string]int64{"": 0}
	intern := func(s string) int64 {
		if i, ok := str[s]; ok {
			return i
		}
		str[s] = int64(len(p.StringTable))
		p.StringTable = append(p.StringTable, s)
		return str[s]
	}
	p.SampleType = []*profilev1.ValueType{{Type: intern(meta.sampleType), Unit: intern(meta.sampleUnit)}}
	p.PeriodType = &profilev1.ValueType{Type: intern(meta.periodType), Unit: intern(meta.periodUnit)}
	location := make([]uint64, len(ns.names)) // by label: its location id, 0 before first use
	var stack []uint64                        // the open path's locations, root first
	for i, l := range ns.level {
		if l == 0 {
			stack = stack[:0]
		} else {
			label := ns.label[i]
			if location[label] == 0 {
				id := uint64(len(p.Location) + 1)
				p.Function = append(p.Function, &profilev1.Function{Id: id, Name: intern(ns.names[label]), SystemName: intern(ns.names[label])})
				p.Location = append(p.Location, &profilev1.Location{Id: id, Line: []*profilev1.Line{{FunctionId: id}}})
				location[label] = id
			}
			stack = append(stack[:l-1], location[label])
		}
		if ns.self[i] == 0 {
			continue
		}
		ids := make([]uint64, len(stack))
		for j, id := range stack {
			ids[len(stack)-1-j] = id
		}
		p.Sample = append(p.Sample, &profilev1.Sample{LocationId: ids, Value: []int64{ns.self[i]}})
	}
	return p
}
