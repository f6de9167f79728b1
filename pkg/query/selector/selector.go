// Package selector parses Prometheus/Pyroscope-style label selectors such as
// the labelSelector of Grafana's Pyroscope query model:
//
//	{service_name="checkout", k8s_namespace_name=~"prod-.*", thread_name!=""}
//
// The grammar is PromQL's, without a metric name: "{", zero or more matchers
// separated by commas (a trailing comma is allowed), and "}". Whitespace may
// appear between any two tokens, and an empty or blank selector means no
// matchers. A label name is either a Prometheus identifier or, as in
// Prometheus 3, a double-quoted string, which admits OpenTelemetry keys such
// as "service.name". A value is a double-quoted or single-quoted string with
// Go/PromQL escapes, or a raw backtick string. Names and values must be valid
// UTF-8. Regular expressions use RE2 syntax and are fully anchored, like
// Prometheus: =~"a" matches "a" but not "ab", and . matches newlines.
//
// Positions in error messages are 1-based byte offsets into the selector.
package selector

import (
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
)

// Limits on the input that Parse accepts. They bound the time and memory a
// single selector can cost.
const (
	// MaxSelectorLength is the largest selector, in bytes, that Parse accepts.
	MaxSelectorLength = 16 << 10
	// MaxMatchers is the largest number of matchers in one selector.
	MaxMatchers = 64
	// MaxRegexpLength is the largest regexp value, in bytes, after unescaping.
	MaxRegexpLength = 4 << 10
)

// Op is a matcher's operator.
type Op uint8

// The matcher operators.
const (
	Equal     Op = iota // =
	NotEqual            // !=
	Regexp              // =~ (RE2, fully anchored like Prometheus)
	NotRegexp           // !~
)

// String returns the operator as written in a selector.
func (o Op) String() string {
	switch o {
	case Equal:
		return "="
	case NotEqual:
		return "!="
	case Regexp:
		return "=~"
	case NotRegexp:
		return "!~"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Matcher is one label matcher.
//
// Matchers returned by Parse carry their compiled regexp. A Matcher built by
// hand, or whose Value was changed after parsing, compiles its regexp on each
// call to Matches instead, so a Matcher is safe for concurrent reads.
type Matcher struct {
	Name  string
	Op    Op
	Value string

	re       *regexp.Regexp // Value compiled by compileAnchored, set by Parse
	reSource string         // the Value re was compiled from
}

// Matches reports whether a label value satisfies the matcher. An absent
// label has the value "", as in Prometheus. A regexp matcher whose Value does
// not compile matches nothing, whichever its operator.
func (m *Matcher) Matches(v string) bool {
	switch m.Op {
	case Equal:
		return v == m.Value
	case NotEqual:
		return v != m.Value
	case Regexp:
		re := m.compiled()
		return re != nil && re.MatchString(v)
	case NotRegexp:
		re := m.compiled()
		return re != nil && !re.MatchString(v)
	}
	return false
}

// compiled returns the anchored regexp for m.Value, or nil if it does not
// compile. It never modifies m.
func (m *Matcher) compiled() *regexp.Regexp {
	if m.re != nil && m.reSource == m.Value {
		return m.re
	}
	re, err := compileAnchored(m.Value)
	if err != nil {
		return nil
	}
	return re
}

// String renders the matcher in selector syntax. The name is quoted when it
// is not a plain identifier and the value is always double-quoted, so that
// Parse reads back the same matcher.
func (m *Matcher) String() string {
	var b strings.Builder
	m.writeTo(&b, strconv.Quote)
	return b.String()
}

func (m *Matcher) writeTo(b *strings.Builder, quote func(string) string) {
	if isIdentifier(m.Name) {
		b.WriteString(m.Name)
	} else {
		b.WriteString(quote(m.Name))
	}
	b.WriteString(m.Op.String())
	b.WriteString(quote(m.Value))
}

// Format renders matchers as a selector: {a="b", c=~"d"}. No matchers give
// "{}".
func Format(ms []Matcher) string { return format(ms, strconv.Quote) }

// FormatForTemplate renders matchers as Format does, but escapes what
// Grafana's template interpolation would replace: every "$" becomes \x24
// and the first "[" of "[[" becomes \x5b. Parse reads back the same
// matchers, while Grafana leaves the text of a link's query as it is (only
// its own variables, outside the selector, are replaced).
func FormatForTemplate(ms []Matcher) string { return format(ms, quoteForTemplate) }

func format(ms []Matcher, quote func(string) string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range ms {
		if i > 0 {
			b.WriteString(", ")
		}
		ms[i].writeTo(&b, quote)
	}
	b.WriteByte('}')
	return b.String()
}

// quoteForTemplate double-quotes s with Go escapes, and "$" and "[[" as
// hex escapes.
func quoteForTemplate(s string) string {
	q := strconv.Quote(s)
	if !strings.ContainsAny(q, "$[") {
		return q
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		switch {
		case q[i] == '$':
			b.WriteString(`\x24`)
		case q[i] == '[' && i+1 < len(q) && q[i+1] == '[':
			b.WriteString(`\x5b`)
		default:
			b.WriteByte(q[i])
		}
	}
	return b.String()
}

// compileAnchored compiles a regexp value the way Prometheus does: fully
// anchored, with . matching newlines. The value must be a valid regexp on
// its own first, so that "a)|(b" cannot escape the anchoring group.
func compileAnchored(v string) (*regexp.Regexp, error) {
	if _, err := syntax.Parse(v, syntax.Perl); err != nil {
		return nil, err
	}
	return regexp.Compile("^(?s:" + v + ")$")
}

// isIdentifier reports whether s is a Prometheus label name,
// [a-zA-Z_][a-zA-Z0-9_]*.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentifierByte(s[i], i == 0) {
			return false
		}
	}
	return true
}

func isIdentifierByte(c byte, first bool) bool {
	switch {
	case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		return true
	case '0' <= c && c <= '9':
		return !first
	}
	return false
}
