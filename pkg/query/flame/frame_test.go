package flame

import (
	"encoding/json"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
)

func TestFrameShape(t *testing.T) {
	tests := []struct {
		name    string
		samples []sample
		unit    string
		rows    int
		texts   []string
	}{
		{name: "empty tree", unit: "ns", texts: []string{}},
		{name: "zero values cancel out", samples: []sample{{"", 3}, {"", -3}}, unit: "ns", texts: []string{}},
		{
			name:    "labels in first-use order",
			samples: []sample{{"b;a", 1}, {"c", 5}, {"c;b", 1}},
			unit:    "bytes",
			rows:    5,
			texts:   []string{"total", "c", "b", "a"},
		},
		{
			name:    "pseudo labels share a function's text",
			samples: []sample{{"total;other", 2}},
			unit:    "short",
			rows:    3,
			texts:   []string{"total", "other"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frame := buildTree(tc.samples).Frame(0, tc.unit)
			require.Equal(t, "response", frame.Name)
			require.Equal(t, data.VisTypeFlameGraph, string(frame.Meta.PreferredVisualization))
			require.Equal(t, tc.rows, frame.Rows())
			wantFields := []struct {
				name string
				typ  data.FieldType
				unit string
			}{
				{"level", data.FieldTypeInt64, ""},
				{"value", data.FieldTypeInt64, tc.unit},
				{"self", data.FieldTypeInt64, tc.unit},
				{"label", data.FieldTypeEnum, ""},
			}
			require.Len(t, frame.Fields, len(wantFields))
			for i, want := range wantFields {
				field := frame.Fields[i]
				require.Equal(t, want.name, field.Name)
				require.Equal(t, want.typ, field.Type())
				if want.unit != "" {
					require.Equal(t, want.unit, field.Config.Unit)
				}
			}
			require.Equal(t, tc.texts, frame.Fields[3].Config.TypeConfig.Enum.Text)
			_, err := frame.MarshalJSON()
			require.NoError(t, err)
			_, err = frame.MarshalArrow()
			require.NoError(t, err)
		})
	}
}

func TestFrameJSON(t *testing.T) {
	frame := buildTree([]sample{{"a;b", 2}}).Frame(0, "ns")
	encoded, err := frame.MarshalJSON()
	require.NoError(t, err)
	var decoded struct {
		Schema struct {
			Meta   map[string]any `json:"meta"`
			Fields []struct {
				Name   string          `json:"name"`
				Config json.RawMessage `json:"config"`
			} `json:"fields"`
		} `json:"schema"`
	}
	require.NoError(t, json.Unmarshal(encoded, &decoded))
	require.Equal(t, "flamegraph", decoded.Schema.Meta["preferredVisualisationType"])
	require.JSONEq(t, `{"unit":"ns"}`, string(decoded.Schema.Fields[1].Config))
	require.JSONEq(t, `{"type":{"enum":{"text":["total","a","b"]}}}`, string(decoded.Schema.Fields[3].Config))
}

func TestTruncation(t *testing.T) {
	small := buildTree([]sample{
		{"a;b;c", 50}, {"a;b;d", 20}, {"a;e", 10}, {"f", 8}, {"g", 5}, {"h;i", 4}, {"", 3},
	})
	random := randomStacks(3, 4000, 500, 2, 20).tree()
	tests := []struct {
		name     string
		tree     *Tree
		maxNodes []int
	}{
		{name: "hand-made tree", tree: small, maxNodes: []int{1, 2, 3, 4, 5, 6, 8, 10, 11, 12, 100}},
		{name: "random tree", tree: random, maxNodes: []int{1, 2, 3, 10, 50, 100, 1000, 5000, random.Nodes()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, maxNodes := range tc.maxNodes {
				got := rows(t, tc.tree.Frame(maxNodes, "ns"))
				requireConsistent(t, got, tc.tree.Total())
				require.LessOrEqual(t, len(got), max(maxNodes, 2), "maxNodes %d", maxNodes)
				if maxNodes >= tc.tree.Nodes() {
					require.Len(t, got, tc.tree.Nodes())
					require.NotContains(t, labelsOf(got), "other")
				}
			}
		})
	}
}

func TestTruncationFoldsSmallChildren(t *testing.T) {
	tree := buildTree([]sample{{"a;b", 50}, {"a;c", 2}, {"a;d", 1}, {"e", 3}, {"f", 1}})
	require.Equal(t, 7, tree.Nodes())
	want := []row{
		{0, 57, 0, "total"},
		{1, 53, 0, "a"},
		{2, 50, 50, "b"},
		{2, 3, 3, "other"},
		{1, 4, 4, "other"},
	}
	require.Equal(t, want, rows(t, tree.Frame(5, "ns")))
}

func TestEnumLimit(t *testing.T) {
	names := NewNames(0)
	tree := NewTree(names)
	for i := range maxEnumTexts {
		tree.Add([]int32{names.ID(string(rune(0x10000 + i)))}, int64(i+1)) // distinct totals: no ties at the threshold
	}
	require.Equal(t, maxEnumTexts+1, tree.Nodes())
	for _, maxNodes := range []int{0, maxEnumTexts + 10} {
		got := rows(t, tree.Frame(maxNodes, "ns"))
		require.Len(t, got, maxEnumTexts)
		requireConsistent(t, got, tree.Total())
	}
}

// requireConsistent checks the nested-set invariants of rendered rows: one
// root "total" holding the tree total, levels that step down by one, each
// row's value equal to its self plus its children's values, siblings in
// display order and childless "other" rows last among their siblings.
// Plain comparisons keep it fast on frames of many rows.
func requireConsistent(t *testing.T, got []row, total int64) {
	t.Helper()
	require.NotEmpty(t, got)
	require.Equal(t, row{0, total, got[0].Self, "total"}, row{got[0].Level, got[0].Value, got[0].Self, got[0].Label})
	childSum := make([]int64, len(got))
	path := []int{0} // the row indexes of the current row's ancestors
	lastChild := map[int]int{}
	for i := 1; i < len(got); i++ {
		r := got[i]
		if r.Level < 1 || int(r.Level) > len(path) {
			t.Fatalf("row %d: level %d after level %d", i, r.Level, len(path)-1)
		}
		path = append(path[:r.Level], i)
		parent := path[r.Level-1]
		childSum[parent] += r.Value
		if prev, ok := lastChild[parent]; ok && !inSiblingOrder(got[prev], r) {
			t.Fatalf("row %d: %v after sibling %v", i, r, got[prev])
		}
		lastChild[parent] = i
		if r.Label == "other" && (r.Value != r.Self || i+1 < len(got) && got[i+1].Level > r.Level) {
			t.Fatalf("row %d: other row %v has children", i, r)
		}
	}
	for i, r := range got {
		if r.Value != r.Self+childSum[i] {
			t.Fatalf("row %d: %v has children summing to %d", i, r, childSum[i])
		}
	}
}

// inSiblingOrder tells whether next may follow its sibling prev: by value
// descending, then label, with "other" last.
func inSiblingOrder(prev, next row) bool {
	switch {
	case prev.Label == "other":
		return false
	case next.Label == "other":
		return true
	default:
		return prev.Value > next.Value || prev.Value == next.Value && prev.Label < next.Label
	}
}

func labelsOf(got []row) []string {
	labels := make([]string, len(got))
	for i, r := range got {
		labels[i] = r.Label
	}
	return labels
}
