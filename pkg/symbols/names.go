package symbols

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// maxNameBytes bounds a function name as stored; longer demangled names
// (deeply nested templates) are cut.
const maxNameBytes = 4096

// names demangles and interns function names, so that the ranges of one
// function share one string.
type names struct {
	interned map[string]string
}

func newNames() *names { return &names{interned: map[string]string{}} }

// function returns the display name of a symbol or DWARF name: C++ and
// Rust mangled names demangled as llvm-symbolizer prints them (parameters
// included), anything else as it is.
func (n *names) function(raw string) string {
	if s, ok := n.interned[raw]; ok {
		return s
	}
	out := raw
	if strings.HasPrefix(raw, "_Z") || strings.HasPrefix(raw, "_R") || strings.HasPrefix(raw, "__Z") {
		if d, err := demangle.ToString(raw, demangle.LLVMStyle); err == nil {
			out = d
		}
	}
	if len(out) > maxNameBytes {
		out = out[:maxNameBytes]
	}
	n.interned[raw] = out
	return out
}

// intern returns one shared copy of s (file names).
func (n *names) intern(s string) string {
	if v, ok := n.interned["\x00"+s]; ok {
		return v
	}
	n.interned["\x00"+s] = s
	return s
}
