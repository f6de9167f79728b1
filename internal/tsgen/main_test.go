package main

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCommittedFileIsCurrent: the committed src/generated/backend.ts is what
// the generator writes from the Go declarations today; a Go value changed
// without go generate, or the file edited by hand, fails here.
func TestCommittedFileIsCurrent(t *testing.T) {
	want, err := render(declarations())
	require.NoError(t, err)
	got, err := os.ReadFile(committed)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got),
		"%s differs from what the Go backend declares: run go generate ./internal/tsgen and commit it", committed)
}

// TestLiterals: each kind of value as prettier writes it, and a value the
// generator has no literal for is an error naming where it is.
func TestLiterals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any
		want  string
	}{
		{"string", `it's a\b`, `'it\'s a\\b'`},
		{"control characters", " :\r\n\t\x01", `' :\r\n\t\u0001'`},
		{"int", 1 << 20, "1048576"},
		{"strings", []string{"a", "b"}, "['a', 'b']"},
		{"pattern", pattern(`^a/b$`), `/^a\/b$/`},
		{"object", object{{"a", 1}, {"b", object{{"c", "d"}}}}, "{\n  a: 1,\n  b: {\n    c: 'd',\n  },\n}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := literal(tc.value, "")
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := render([]declaration{{name: "X", value: object{{"f", 1.5}}}})
	require.EqualError(t, err, "X: f: no TypeScript literal for a float64")
}

// TestPatternsShareSyntax: the patterns use only what Go's regexp and
// JavaScript's RegExp read alike (anchors, character classes of plain
// characters, *, +, ?), so the frontend checks what the backend does.
func TestPatternsShareSyntax(t *testing.T) {
	shared := regexp.MustCompile(`^\^?(\[[A-Za-z0-9_.{}/-]+\][*+?]?|[A-Za-z0-9_])*\$?$`)
	for _, d := range declarations() {
		o, ok := d.value.(object)
		if !ok {
			continue
		}
		for _, f := range o {
			if p, ok := f.value.(pattern); ok {
				require.Regexp(t, shared, string(p), "%s.%s", d.name, f.key)
			}
		}
	}
}
