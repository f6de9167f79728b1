package flame

import (
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
)

func TestTopFunctions(t *testing.T) {
	tests := []struct {
		name    string
		samples []sample
		limit   int
		want    []Function
	}{
		{name: "no stacks", want: nil},
		{
			name:    "recursion counts once per stack",
			samples: []sample{{"a;b;a;c", 5}},
			want:    []Function{{"c", 5, 5}, {"a", 0, 5}, {"b", 0, 5}},
		},
		{
			name:    "recursive leaf",
			samples: []sample{{"a;a", 2}, {"a", 3}, {"b;a", 1}},
			want:    []Function{{"a", 6, 6}, {"b", 0, 1}},
		},
		{
			name:    "self then total then label",
			samples: []sample{{"m;x", 4}, {"m;z", 4}, {"m;y", 4}, {"n;x", 1}, {"n", 1}, {"", 7}, {"k;m", 0}},
			want:    []Function{{"x", 5, 5}, {"y", 4, 4}, {"z", 4, 4}, {"n", 1, 2}, {"m", 0, 12}, {"k", 0, 0}},
		},
		{
			name:    "limit keeps the first rows",
			samples: []sample{{"a", 1}, {"b", 2}, {"c", 3}},
			limit:   2,
			want:    []Function{{"c", 3, 3}, {"b", 2, 2}},
		},
		{
			name:    "zero values still list the function",
			samples: []sample{{"a;b", 0}},
			want:    []Function{{"a", 0, 0}, {"b", 0, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			names := NewNames(0)
			fns := NewFunctions(names)
			for _, s := range tc.samples {
				fns.Add(ids(names, s.stack), s.value)
			}
			require.Equal(t, tc.want, fns.Top(tc.limit))
		})
	}
}

// TestFunctionsMatchTree checks functions against the tree of the same
// stacks: self values sum to the tree total, no total exceeds it, and the
// labels at the top of stacks have totals summing to it.
func TestFunctionsMatchTree(t *testing.T) {
	set := randomStacks(11, 2000, 200, 1, 15)
	tree := set.tree()
	fns := set.functions().Top(0)
	var selfSum int64
	for _, fn := range fns {
		selfSum += fn.Self
		require.LessOrEqual(t, fn.Total, tree.Total())
		require.GreaterOrEqual(t, fn.Total, fn.Self)
	}
	require.Equal(t, tree.Total(), selfSum)

	// The root's children are the stacks' first labels: a function's total
	// is at least the value of its node there.
	byLabel := map[string]Function{}
	for _, fn := range fns {
		byLabel[fn.Label] = fn
	}
	for _, r := range rows(t, tree.Frame(0, "")) {
		if r.Level == 1 {
			require.GreaterOrEqual(t, byLabel[r.Label].Total, r.Value)
		}
	}
	require.Len(t, set.functions().Top(10), 10)
}

func TestTableFrame(t *testing.T) {
	tests := []struct {
		name string
		fns  []Function
		unit string
	}{
		{name: "empty", unit: "ns"},
		{name: "rows", fns: []Function{{"a", 3, 5}, {"b", 1, 4}}, unit: "bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frame := TableFrame(tc.fns, tc.unit)
			require.Equal(t, "functions", frame.Name)
			require.Equal(t, data.VisTypeTable, string(frame.Meta.PreferredVisualization))
			require.Len(t, frame.Fields, 3)
			require.Equal(t, "label", frame.Fields[0].Name)
			require.Equal(t, data.FieldTypeString, frame.Fields[0].Type())
			for i, name := range []string{"self", "total"} {
				field := frame.Fields[i+1]
				require.Equal(t, name, field.Name)
				require.Equal(t, data.FieldTypeInt64, field.Type())
				require.Equal(t, tc.unit, field.Config.Unit)
			}
			// Every panel and Explore show the same column names; links and
			// specs use the field names.
			for i, want := range []string{"Function", "Self", "Total"} {
				require.NotNil(t, frame.Fields[i].Config, frame.Fields[i].Name)
				require.Equal(t, want, frame.Fields[i].Config.DisplayNameFromDS, frame.Fields[i].Name)
			}
			require.Equal(t, len(tc.fns), frame.Rows())
			for i, fn := range tc.fns {
				require.Equal(t, fn.Label, frame.Fields[0].At(i))
				require.Equal(t, fn.Self, frame.Fields[1].At(i))
				require.Equal(t, fn.Total, frame.Fields[2].At(i))
			}
		})
	}
}

func TestUnit(t *testing.T) {
	tests := []struct{ sample, want string }{
		{"nanoseconds", "ns"},
		{"count", "short"},
		{"bytes", "bytes"},
		{"", ""},
		{"seconds", "seconds"},
	}
	for _, tc := range tests {
		t.Run(tc.sample, func(t *testing.T) {
			require.Equal(t, tc.want, Unit(tc.sample))
		})
	}
}
