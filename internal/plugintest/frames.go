package plugintest

import (
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/querytest"
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

// FlameRoot is a flame graph query's total (0 without data).
func FlameRoot(t *testing.T, ds *plugin.Datasource, q map[string]any, from, to time.Time) int64 {
	t.Helper()
	frames := RequireOK(t, Query(t, ds, q, from, to))
	if frames[0].Rows() == 0 {
		return 0
	}
	return querytest.FlameRows(t, frames[0], "ns")[0].Value
}

// RequireSameFrames compares two flame graph frames node by node.
func RequireSameFrames(t testing.TB, want, got *data.Frame) {
	t.Helper()
	require.Equal(t, querytest.FlameRows(t, want, "ns"), querytest.FlameRows(t, got, "ns"))
}

// FlameRootValue is a flame graph response's root value.
func FlameRootValue(r backend.DataResponse) int64 {
	v, _ := r.Frames[0].Fields[1].ConcreteAt(0)
	return v.(int64) // the value field is int64
}
