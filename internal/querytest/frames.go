package querytest

import (
	"slices"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
)

// FlameRow is a row of a flame graph frame: a node's level, value, self
// value and label.
type FlameRow struct {
	Level, Value, Self int64
	Label              string
}

// FlameRows reads a flame graph frame (the nested-set "response" frame)
// whose values are in unit.
func FlameRows(tb testing.TB, f *data.Frame, unit string) []FlameRow {
	tb.Helper()
	require.Equal(tb, "response", f.Name)
	require.Equal(tb, data.VisType(data.VisTypeFlameGraph), f.Meta.PreferredVisualization)
	level, value, self, label := f.Fields[0], f.Fields[1], f.Fields[2], f.Fields[3]
	require.Equal(tb, []string{"level", "value", "self", "label"}, []string{level.Name, value.Name, self.Name, label.Name})
	require.Equal(tb, unit, value.Config.Unit)
	names := label.Config.TypeConfig.Enum.Text
	rows := make([]FlameRow, f.Rows())
	for i := range rows {
		lv, _ := level.ConcreteAt(i)
		v, _ := value.ConcreteAt(i)
		s, _ := self.ConcreteAt(i)
		l, _ := label.ConcreteAt(i)
		rows[i] = FlameRow{Level: lv.(int64), Value: v.(int64), Self: s.(int64), Label: names[l.(data.EnumItemIndex)]} // the field types are checked by the SDK
	}
	return rows
}

// FlameTop is a flame graph's self and total per label, as Top computes
// them from the workload: a label's self is the sum of its nodes' self
// values, its total the sum of the values of its nodes that have no
// ancestor of the same label (recursion counted once). The root is left
// out.
func FlameTop(rows []FlameRow) (self, total map[string]int64) {
	self, total = map[string]int64{}, map[string]int64{}
	var path []string // the labels from the root's child down to the current node's parent
	for _, r := range rows {
		if r.Level == 0 {
			path = path[:0]
			continue
		}
		path = path[:min(len(path), int(r.Level)-1)]
		if r.Self != 0 {
			self[r.Label] += r.Self
		}
		if !slices.Contains(path, r.Label) {
			total[r.Label] += r.Value
		}
		path = append(path, r.Label)
	}
	return self, total
}

// TableTop is a table answer's self and total per function, as pprof -top
// lists flat and cum.
func TableTop(table *data.Frame) (self, total map[string]int64) {
	self, total = map[string]int64{}, map[string]int64{}
	for i := range table.Rows() {
		label, _ := table.Fields[0].ConcreteAt(i)
		s, _ := table.Fields[1].ConcreteAt(i)
		tot, _ := table.Fields[2].ConcreteAt(i)
		self[label.(string)] = s.(int64) // typed fields
		total[label.(string)] = tot.(int64)
	}
	return self, total
}
