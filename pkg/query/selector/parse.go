package selector

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parse parses a selector. "" and "{}", with any whitespace, mean no
// matchers and give a nil slice. Parse never panics; its errors start with
// "label selector:" and most give the position of the problem.
func Parse(s string) ([]Matcher, error) {
	if len(s) > MaxSelectorLength {
		return nil, fmt.Errorf("label selector: selector is %d bytes, longer than the limit of %d bytes",
			len(s), MaxSelectorLength)
	}
	p := parser{input: s}
	p.skipSpace()
	if p.atEnd() {
		return nil, nil
	}
	if !p.consume('{') {
		return nil, p.errorf(p.pos, `must start with "{"`)
	}
	ms, err := p.parseMatchers()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if !p.atEnd() {
		return nil, p.errorf(p.pos, `unexpected %s after the closing "}"`, p.describeNext())
	}
	return ms, nil
}

// parser reads a selector from left to right; pos is the byte offset of the
// next unread byte.
type parser struct {
	input string
	pos   int
}

// parseMatchers parses the matchers after "{" up to and including "}".
func (p *parser) parseMatchers() ([]Matcher, error) {
	var ms []Matcher
	for {
		p.skipSpace()
		if p.consume('}') {
			return ms, nil
		}
		if len(ms) == MaxMatchers {
			return nil, p.errorf(p.pos, "more than the limit of %d matchers", MaxMatchers)
		}
		m, err := p.parseMatcher()
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
		p.skipSpace()
		if p.consume('}') {
			return ms, nil
		}
		if !p.consume(',') {
			return nil, p.errorf(p.pos, `expected "," or "}" after matcher %s, found %s`, m.String(), p.describeNext())
		}
	}
}

// parseMatcher parses name, operator and value.
func (p *parser) parseMatcher() (Matcher, error) {
	name, err := p.parseLabelName()
	if err != nil {
		return Matcher{}, err
	}
	p.skipSpace()
	op, ok := p.parseOp()
	if !ok {
		return Matcher{}, p.errorf(p.pos, `expected "=", "!=", "=~" or "!~" after label name %q`, name)
	}
	p.skipSpace()
	valuePos := p.pos
	value, err := p.parseValue(name)
	if err != nil {
		return Matcher{}, err
	}
	m := Matcher{Name: name, Op: op, Value: value}
	if op == Regexp || op == NotRegexp {
		if err := p.compileRegexp(&m, valuePos); err != nil {
			return Matcher{}, err
		}
	}
	return m, nil
}

func (p *parser) parseLabelName() (string, error) {
	start := p.pos
	if p.peek() == '"' {
		return p.parseQuotedLabelName()
	}
	for !p.atEnd() && isIdentifierByte(p.input[p.pos], p.pos == start) {
		p.pos++
	}
	if p.pos == start {
		return "", p.errorf(start, `expected label name or "}", found %s`, p.describeNext())
	}
	return p.input[start:p.pos], nil
}

func (p *parser) parseQuotedLabelName() (string, error) {
	start := p.pos
	name, err := p.parseString()
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", p.errorf(start, "quoted label name must not be empty")
	}
	if !utf8.ValidString(name) {
		return "", p.errorf(start, "label name %q is not valid UTF-8", name)
	}
	return name, nil
}

// parseOp reads an operator; the two-byte ones are tried first so that "=~"
// is not read as "=".
func (p *parser) parseOp() (Op, bool) {
	for _, op := range [...]Op{Regexp, NotRegexp, NotEqual, Equal} {
		if strings.HasPrefix(p.input[p.pos:], op.String()) {
			p.pos += len(op.String())
			return op, true
		}
	}
	return 0, false
}

func (p *parser) parseValue(name string) (string, error) {
	start := p.pos
	if !isQuote(p.peek()) {
		return "", p.errorf(start, "expected quoted value for label %q, found %s", name, p.describeNext())
	}
	value, err := p.parseString()
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(value) {
		return "", p.errorf(start, "value %q of label %q is not valid UTF-8", value, name)
	}
	return value, nil
}

func (p *parser) compileRegexp(m *Matcher, valuePos int) error {
	if len(m.Value) > MaxRegexpLength {
		return p.errorf(valuePos, "regexp for label %q is %d bytes, longer than the limit of %d bytes",
			m.Name, len(m.Value), MaxRegexpLength)
	}
	re, err := compileAnchored(m.Value)
	if err != nil {
		return p.errorf(valuePos, "invalid regexp for label %q: %w", m.Name, err)
	}
	m.re, m.reSource = re, m.Value
	return nil
}

// parseString reads a string in any of the three quote styles, starting at
// its opening quote, and returns its unescaped contents.
func (p *parser) parseString() (string, error) {
	start := p.pos
	quote := p.input[start]
	end, err := p.findClosingQuote(start, quote)
	if err != nil {
		return "", err
	}
	p.pos = end + 1
	body := p.input[start+1 : end]
	if quote == '`' {
		return body, nil
	}
	value, badOffset, err := unescape(body, quote)
	if err != nil {
		return "", p.errorf(start+1+badOffset, "%v", err)
	}
	return value, nil
}

// findClosingQuote returns the offset of the quote that closes the string
// opened at start. Backtick strings are raw; the others skip escaped
// characters and may not contain a newline.
func (p *parser) findClosingQuote(start int, quote byte) (int, error) {
	for i := start + 1; i < len(p.input); i++ {
		switch c := p.input[i]; {
		case c == quote:
			return i, nil
		case quote == '`':
		case c == '\\':
			i++
		case c == '\n':
			return 0, p.errorf(i, "newline in string starting at position %d", start+1)
		}
	}
	return 0, fmt.Errorf("label selector: unterminated string starting at position %d", start+1)
}

func (p *parser) skipSpace() {
	for !p.atEnd() && isSpace(p.input[p.pos]) {
		p.pos++
	}
}

func (p *parser) consume(c byte) bool {
	if p.atEnd() || p.input[p.pos] != c {
		return false
	}
	p.pos++
	return true
}

// peek returns the next byte, or 0 at the end of the input.
func (p *parser) peek() byte {
	if p.atEnd() {
		return 0
	}
	return p.input[p.pos]
}

func (p *parser) atEnd() bool { return p.pos >= len(p.input) }

// describeNext names the next character for an error message.
func (p *parser) describeNext() string {
	if p.atEnd() {
		return "end of input"
	}
	r, size := utf8.DecodeRuneInString(p.input[p.pos:])
	if r == utf8.RuneError && size == 1 {
		return fmt.Sprintf("byte %#x", p.input[p.pos])
	}
	return strconv.QuoteRune(r)
}

// errorf returns an error for the byte at offset pos, reported 1-based.
func (*parser) errorf(pos int, format string, args ...any) error {
	return fmt.Errorf("label selector: position %d: "+format, append([]any{pos + 1}, args...)...)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isQuote(c byte) bool { return c == '"' || c == '\'' || c == '`' }
