// Package benchenv reads the knobs of the benchmarks from the environment:
// sizes and counts a rerun may change (docs/performance.md lists them).
package benchenv

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// Int reads a positive integer knob: def when name is unset, a failure
// when it is set to anything but a positive integer.
func Int(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(tb, err, name)
	require.Positive(tb, n, name)
	return n
}
