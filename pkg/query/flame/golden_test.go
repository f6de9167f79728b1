package flame

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenSamples is a small profile with recursion, an empty stack, ties
// and a long tail of small stacks.
var goldenSamples = []sample{
	{"main;server.Serve;handler.Query;db.Scan;decode", 40},
	{"main;server.Serve;handler.Query;db.Scan", 12},
	{"main;server.Serve;handler.Query;render;json.Marshal", 18},
	{"main;server.Serve;handler.Ingest;parse;parse;parse", 9},
	{"main;server.Serve;handler.Ingest;compress", 9},
	{"main;gc;mark", 6},
	{"main;gc;sweep", 2},
	{"runtime.mcall;schedule", 3},
	{"runtime.mcall;schedule;findRunnable", 1},
	{"", 1},
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name     string
		tree     *Tree
		maxNodes int
		unit     string
	}{
		{name: "full", tree: buildTree(goldenSamples), unit: "ns"},
		{name: "truncated", tree: buildTree(goldenSamples), maxNodes: 12, unit: "ns"},
		{name: "random_truncated", tree: randomStacks(5, 300, 40, 2, 6).tree(), maxNodes: 40, unit: "bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frame := tc.tree.Frame(tc.maxNodes, tc.unit)
			requireConsistent(t, rows(t, frame), tc.tree.Total())
			got := renderGolden(t, frame, tc.maxNodes)
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o600))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -update to create it")
			require.Equal(t, string(want), got)
		})
	}
}

// renderGolden writes a frame as text: a header with the frame's name,
// meta, units and enum texts, then one row per line (level, value, self,
// label indented by level).
func renderGolden(t *testing.T, frame *data.Frame, maxNodes int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# frame %q visualization %q maxNodes %d rows %d\n",
		frame.Name, frame.Meta.PreferredVisualization, maxNodes, frame.Rows())
	fmt.Fprintf(&b, "# units value %q self %q\n", frame.Fields[1].Config.Unit, frame.Fields[2].Config.Unit)
	fmt.Fprintf(&b, "# enum %q\n", frame.Fields[3].Config.TypeConfig.Enum.Text)
	b.WriteString("# level\tvalue\tself\tlabel\n")
	for _, r := range rows(t, frame) {
		fmt.Fprintf(&b, "%d\t%d\t%d\t%s%s\n", r.Level, r.Value, r.Self, strings.Repeat("  ", int(r.Level)), r.Label)
	}
	return b.String()
}
