package flame

import (
	"cmp"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Function is one row of the top-functions table.
type Function struct {
	Label string
	Self  int64
	Total int64
}

// Functions accumulates per label the self value (of the stacks whose leaf
// is the label) and the total value (of the stacks that contain the label,
// counted once per stack even when the label recurs). Feed it the same
// stacks as the Tree, in the same pass.
type Functions struct {
	names  *Names
	labels []labelStats // by label id
	stacks uint64       // the stacks added, which numbers them from 1
}

type labelStats struct {
	self  int64
	total int64
	// lastStack is the number of the last stack that counted the label
	// in total; 0 when the label never appeared.
	lastStack uint64
}

// NewFunctions returns an empty accumulator for labels from names.
func NewFunctions(names *Names) *Functions {
	return &Functions{names: names}
}

// Add adds a stack (labels root first, ids from the names table, never
// negative) with its value. Empty stacks count for no function.
func (f *Functions) Add(stack []int32, value int64) {
	if len(stack) == 0 {
		return
	}
	f.stacks++
	for _, label := range stack {
		if int(label) >= len(f.labels) {
			f.grow(label)
		}
		stats := &f.labels[label]
		if stats.lastStack != f.stacks {
			stats.lastStack = f.stacks
			stats.total += value
		}
	}
	f.labels[stack[len(stack)-1]].self += value
}

// grow makes room for label and every label interned so far.
func (f *Functions) grow(label int32) {
	size := max(int(label)+1, f.names.count())
	f.labels = append(f.labels, make([]labelStats, size-len(f.labels))...)
}

// Top returns the functions sorted by self descending, then total
// descending, then label; limit > 0 keeps the first limit of them.
func (f *Functions) Top(limit int) []Function {
	var fns []Function
	for label, stats := range f.labels {
		if stats.lastStack != 0 {
			fns = append(fns, Function{Label: f.names.Label(index32(label)), Self: stats.self, Total: stats.total})
		}
	}
	slices.SortFunc(fns, topOrder)
	if limit > 0 && len(fns) > limit {
		fns = fns[:limit]
	}
	return fns
}

func topOrder(a, b Function) int {
	if c := cmp.Compare(b.Self, a.Self); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Total, a.Total); c != 0 {
		return c
	}
	return strings.Compare(a.Label, b.Label)
}

// TableFrame renders functions as a frame named "functions" with the fields
// "label", "self" and "total" (both in unit), shown as "Function", "Self"
// and "Total" wherever the frame is displayed (DisplayNameFromDS), and
// preferring the table visualisation.
func TableFrame(fns []Function, unit string) *data.Frame {
	labels := make([]string, len(fns))
	self := make([]int64, len(fns))
	total := make([]int64, len(fns))
	for i, fn := range fns {
		labels[i], self[i], total[i] = fn.Label, fn.Self, fn.Total
	}
	frame := data.NewFrame("functions",
		data.NewField("label", nil, labels).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Function"}),
		data.NewField("self", nil, self).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Self", Unit: unit}),
		data.NewField("total", nil, total).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Total", Unit: unit}),
	)
	return frame.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTable})
}
