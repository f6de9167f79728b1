package profiletype

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestID(t *testing.T) {
	tests := []struct {
		sampleType, sampleUnit, periodType, periodUnit string
		period                                         int64
		want                                           string
		factor                                         int64
	}{
		{"cpu", "nanoseconds", "cpu", "nanoseconds", 10_000_000, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", 1},
		{"samples", "count", "cpu", "nanoseconds", 10_000_000, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", 10_000_000},
		{"alloc_space", "bytes", "space", "bytes", 524288, "memory:alloc_space:bytes:space:bytes", 1},
		{"inuse_objects", "count", "", "", 0, "memory:inuse_objects:count:inuse_objects:count", 1},
		{"goroutine", "count", "goroutine", "count", 1, "goroutines:goroutine:count:goroutine:count", 1},
		{"off_cpu", "nanoseconds", "", "", 0, "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds", 1},
		{"contentions", "count", "contentions", "count", 1, "contentions:contentions:count:contentions:count", 1},
		{"weird:type", "count", "", "", 0, "weird_type:weird_type:count:weird_type:count", 1},
	}
	for _, tc := range tests {
		got, factor := ID(tc.sampleType, tc.sampleUnit, tc.periodType, tc.periodUnit, tc.period, true)
		require.Equal(t, tc.want, got)
		require.Equal(t, tc.factor, factor)
	}
}

func TestCPUCountsStayCountsUnlessAsked(t *testing.T) {
	id, factor := ID("samples", "count", "cpu", "nanoseconds", 50_000_000, false)
	require.Equal(t, "process_cpu:samples:count:cpu:nanoseconds", id)
	require.Equal(t, int64(1), factor)
	id, _ = ID("samples", "count", "cpu", "nanoseconds", 0, true)
	require.Equal(t, "process_cpu:samples:count:cpu:nanoseconds", id, "no period: nothing to multiply by")
}

func TestIsCPUTime(t *testing.T) {
	require.True(t, IsCPUTime("cpu", "nanoseconds", "cpu", "nanoseconds"))
	require.False(t, IsCPUTime("samples", "count", "cpu", "nanoseconds"))
	require.False(t, IsCPUTime("cpu", "nanoseconds", "", ""))
}

func TestIsGauge(t *testing.T) {
	for sampleType, want := range map[string]bool{
		"inuse_space": true, "inuse_objects": true, "goroutine": true, "goroutines": true,
		"alloc_space": false, "alloc_objects": false, "cpu": false, "samples": false, "contentions": false, "delay": false, "": false,
	} {
		require.Equal(t, want, IsGauge(sampleType), sampleType)
	}
}
