package symbols

import (
	"slices"
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
//
// The demangler's GNU style is the one llvm-symbolizer 14 (Debian 12, the
// oracle of the tests) matches: "> >" between closing template brackets,
// where the package's LLVM style follows later LLVM releases (">>"),
// which differs on about one name in five of libstdc++ and libLLVM; the
// GNU style differs on about one in a hundred (lambdas, decltype). Clone
// suffixes are written as LLVM writes them: "f(int) (.isra.0)", not
// "f(int) [clone .isra.0]".
func (n *names) function(raw string) string {
	if s, ok := n.interned[raw]; ok {
		return s
	}
	out := raw
	if strings.HasPrefix(raw, "_Z") || strings.HasPrefix(raw, "_R") || strings.HasPrefix(raw, "__Z") {
		if d, err := demangle.ToString(raw); err == nil {
			out = llvmClones(d)
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

// llvmClones rewrites the GNU demangler's trailing clone suffixes
// ("f() [clone .constprop.0] [clone .isra.0]") as LLVM's
// ("f() (.constprop.0.isra.0)").
func llvmClones(d string) string {
	const open = " [clone "
	var parts []string
	for strings.HasSuffix(d, "]") {
		i := strings.LastIndex(d, open)
		if i < 0 {
			break
		}
		parts = append(parts, d[i+len(open):len(d)-1])
		d = d[:i]
	}
	if len(parts) == 0 {
		return d
	}
	slices.Reverse(parts)
	return d + " (" + strings.Join(parts, "") + ")"
}
