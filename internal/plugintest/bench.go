package plugintest

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchEnv reads a positive integer knob of the query benchmarks.
func BenchEnv(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, name)
	require.Positive(b, n, name)
	return n
}
