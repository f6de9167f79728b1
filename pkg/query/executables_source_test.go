package query

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExecutableSource: the view's symbol source is the store's row's
// source (upload, debuginfod, host), else on host when the sender named
// some frames, else none.
func TestExecutableSource(t *testing.T) {
	sums := &executableSums{stored: map[string]*executable{
		"b1": {buildID: "b1", source: SourceUpload},
		"b2": {buildID: "b2", source: SourceDebuginfod},
		"b3": {buildID: "b3", source: SourceHost},
		"b4": {buildID: "b4", source: "older-or-unknown"},
	}}
	for _, tc := range []struct {
		buildID string
		named   int64
		want    string
	}{
		{"b1", 0, SourceUpload},
		{"b2", 0, SourceDebuginfod},
		{"b3", 0, SourceHost},
		{"b3", 5, SourceHost},
		{"b4", 0, SourceUpload},
		{"", 3, SourceOnHost},
		{"b9", 3, SourceOnHost},
		{"b9", 0, SourceNone},
	} {
		t.Run(tc.buildID+"/"+tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, sums.source(&exeSum{key: exeKey{file: "/lib/x.so", buildID: tc.buildID}, named: tc.named}))
		})
	}
}
