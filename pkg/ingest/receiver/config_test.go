package receiver

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConcurrentConversionsDefaultToOnePerCPU(t *testing.T) {
	tests := []struct {
		set, want int
		valid     bool
	}{
		{set: 0, want: runtime.GOMAXPROCS(0), valid: true},
		{set: -1, want: 0, valid: true}, // pipeline.Options: not bounded
		{set: 3, want: 3, valid: true},
		{set: -2, valid: false},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		cfg.MaxConcurrentConversions = tt.set
		err := cfg.Validate()
		if !tt.valid {
			require.ErrorContains(t, err, "max_concurrent_conversions", tt.set)
			continue
		}
		require.NoError(t, err, tt.set)
		require.Equal(t, tt.want, cfg.conversions(), tt.set)
	}
	require.Zero(t, DefaultConfig().MaxConcurrentConversions, "the default is one per CPU")
}
