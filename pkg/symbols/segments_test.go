package symbols

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUsableSegments(t *testing.T) {
	for _, tc := range []struct {
		name string
		segs []Segment
		want bool
	}{
		{"none", nil, false},
		{"an executable's", []Segment{{Offset: 0, Vaddr: 0, Filesz: 0x5e0}, {Offset: 0x1000, Vaddr: 0x1000, Filesz: 0x14d, Exec: true}}, true},
		{"a debug file's: code without file size", []Segment{{Offset: 0, Vaddr: 0, Filesz: 0x39c}, {Vaddr: 0x1000, Memsz: 0x14d, Exec: true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, UsableSegments(tc.segs))
		})
	}
}
