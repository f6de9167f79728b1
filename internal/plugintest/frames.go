package plugintest

import (
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/plugin"
)

// CPUType is the profile type id of CPU time in nanoseconds.
const CPUType = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

// RequireOK is a response's frames; it fails on an error or no frame.
func RequireOK(t *testing.T, r backend.DataResponse) data.Frames {
	t.Helper()
	require.NoError(t, r.Error)
	require.NotEmpty(t, r.Frames)
	return r.Frames
}

// FlameRow is a row of a flame graph frame: its level, value, self and
// label.
type FlameRow struct {
	Level, Value, Self int64
	Label              string
}

// FlameRows reads a flame graph frame whose values are nanoseconds.
func FlameRows(t testing.TB, f *data.Frame) []FlameRow {
	t.Helper()
	return FlameRowsIn(t, f, "ns")
}

// FlameRowsIn reads a flame graph frame whose values are in unit.
func FlameRowsIn(t testing.TB, f *data.Frame, unit string) []FlameRow {
	t.Helper()
	require.Equal(t, "response", f.Name)
	require.Equal(t, data.VisType(data.VisTypeFlameGraph), f.Meta.PreferredVisualization)
	level, value, self, label := f.Fields[0], f.Fields[1], f.Fields[2], f.Fields[3]
	require.Equal(t, []string{"level", "value", "self", "label"}, []string{level.Name, value.Name, self.Name, label.Name})
	require.Equal(t, unit, value.Config.Unit)
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

// FlameRoot is a flame graph query's total (0 without data).
func FlameRoot(t *testing.T, ds *plugin.Datasource, q map[string]any, from, to time.Time) int64 {
	t.Helper()
	frames := RequireOK(t, Query(t, ds, q, from, to))
	if frames[0].Rows() == 0 {
		return 0
	}
	return FlameRows(t, frames[0])[0].Value
}

// RequireSameFrames compares two flame graph frames node by node.
func RequireSameFrames(t testing.TB, want, got *data.Frame) {
	t.Helper()
	require.Equal(t, FlameRows(t, want), FlameRows(t, got))
}

// FlameRootValue is a flame graph response's root value.
func FlameRootValue(r backend.DataResponse) int64 {
	v, _ := r.Frames[0].Fields[1].ConcreteAt(0)
	return v.(int64) // the value field is int64
}
