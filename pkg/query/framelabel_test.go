package query

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFrameRowLabels names frames by each rule, at function and line
// granularity (internal/integration/plugin checks the same rules against
// ClickHouse's frameLabelSQL).
func TestFrameRowLabels(t *testing.T) {
	for _, tc := range []struct {
		name        string
		row         frameRow
		label, line string
	}{
		{"function", frameRow{function: "main", file: "main.go", line: 7}, "main", "main main.go:7"},
		{"system name", frameRow{system: "_ZN3foo", file: "foo.rs", line: 2}, "_ZN3foo", "_ZN3foo foo.rs:2"},
		{"function without a line", frameRow{function: "f", file: "f.go"}, "f", "f"},
		{"file only", frameRow{file: "lib/a.py", line: 3}, "lib/a.py", "lib/a.py:3"},
		{"mapped file", frameRow{mappingFile: "/usr/lib/libc.so.6", native: nativeFrame{address: 0x10}}, "[libc.so.6]", "[libc.so.6]"},
		{"backslashes", frameRow{mappingFile: `C:\w\ntdll.dll`}, "[ntdll.dll]", "[ntdll.dll]"},
		{"trailing slash", frameRow{mappingFile: "/odd/"}, "[]", "[]"},
		{"address", frameRow{native: nativeFrame{address: 0xabc}}, "0xabc", "0xabc"},
		{"zero address", frameRow{}, "0x0", "0x0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.label, tc.row.label(false))
			require.Equal(t, tc.line, tc.row.label(true))
		})
	}
}

// TestFrameRowResolvable: only an unsymbolized frame with a build id is
// resolved from the symbol store.
func TestFrameRowResolvable(t *testing.T) {
	n := nativeFrame{buildID: "ab12", address: 0x1234, mappingStart: 0x400000, mappingOffset: 0x1000}
	got, ok := (&frameRow{mappingFile: "/lib/x.so", native: n}).resolvable()
	require.True(t, ok)
	require.Equal(t, n, got)
	_, ok = (&frameRow{function: "named", native: n}).resolvable()
	require.False(t, ok, "symbolized")
	_, ok = (&frameRow{mappingFile: "/lib/x.so", native: nativeFrame{address: 1}}).resolvable()
	require.False(t, ok, "no build id")
}
