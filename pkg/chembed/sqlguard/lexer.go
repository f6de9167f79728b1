package sqlguard

import (
	"fmt"
	"strconv"
	"strings"
)

// tokenKind classifies a significant SQL token. Whitespace and comments are
// not tokens.
type tokenKind uint8

const (
	tokWord        tokenKind = iota // bare word: keyword, identifier, function name
	tokQuotedIdent                  // "ident" or `ident`
	tokString                       // 'string', x'..', b'..', $tag$..$tag$
	tokNumber                       // 1, 1.5e3, 0xFF
	tokPunct                        // ( ) , ; . = and the rest
)

type token struct {
	kind tokenKind
	// text is the token as written; for quoted identifiers it is the name
	// without quotes and with escapes resolved.
	text string
	// start and end are byte offsets into the statement.
	start, end int
}

// is reports whether t is the bare word w (ASCII case-insensitive).
func (t token) is(w string) bool { return t.kind == tokWord && strings.EqualFold(t.text, w) }

// isPunct reports whether t is the punctuation p.
func (t token) isPunct(p string) bool { return t.kind == tokPunct && t.text == p }

// name returns the lower-cased name of a word or quoted identifier, "" otherwise.
func (t token) name() string {
	if t.kind == tokWord || t.kind == tokQuotedIdent {
		return strings.ToLower(t.text)
	}
	return ""
}

// lexer splits SQL into tokens the way ClickHouse's own lexer
// (src/Parsers/Lexer.cpp) does, so that what the guard sees as a string, a
// comment or a function call is what the engine sees. Where the engine would
// fail to tokenize (an unclosed quote or comment, a stray character), the
// lexer fails too, and the statement is refused before it reaches the engine.
type lexer struct {
	src string
	pos int
	// heredocScan counts bytes searched for heredoc terminators; a search
	// is linear, so the total is bounded to keep hostile input from making
	// lexing quadratic.
	heredocScan int
	// missingTags are heredoc tags known to have no terminator further on.
	missingTags map[string]bool
	prev        tokenKind
	// prevText is the text of the previous significant token.
	prevText string
	started  bool
}

func isWordChar(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// syntaxError is a lexing failure at a byte offset.
func syntaxError(pos int, what string) *Error {
	return newError(CodeSyntaxError, "Syntax error at position %d: %s", pos, what)
}

// next returns the next significant token, ok=false at the end of input.
func (l *lexer) next() (token, bool, error) {
	for l.pos < len(l.src) {
		start := l.pos
		skipped, err := l.skipInsignificant()
		if err != nil {
			return token{}, false, err
		}
		if skipped {
			continue
		}
		t, err := l.significant(start)
		if err != nil {
			return token{}, false, err
		}
		l.prev, l.prevText, l.started = t.kind, t.text, true
		return t, true, nil
	}
	return token{}, false, nil
}

// skipInsignificant skips one run of whitespace or one comment.
func (l *lexer) skipInsignificant() (bool, error) {
	s, p := l.src, l.pos
	c := s[p]
	switch {
	case isSpace(c):
		for l.pos < len(s) && isSpace(s[l.pos]) {
			l.pos++
		}
		return true, nil
	case c >= 0x80:
		// The engine accepts Unicode whitespace between tokens and rejects any
		// other non-ASCII byte outside strings and quoted names. Neither can
		// join two ASCII words into one, so skipping is safe here; the engine
		// reports the syntax error if there is one.
		l.pos++
		return true, nil
	case c == '-' && p+1 < len(s) && s[p+1] == '-', c == '/' && p+1 < len(s) && s[p+1] == '/':
		l.skipLine()
		return true, nil
	case c == '#':
		// A comment only when followed by a space or '!' (shebang).
		if p+1 < len(s) && (s[p+1] == ' ' || s[p+1] == '!') {
			l.skipLine()
			return true, nil
		}
		return false, syntaxError(p, "unrecognized token '#'")
	case c == '/' && p+1 < len(s) && s[p+1] == '*':
		return true, l.skipBlockComment()
	}
	return false, nil
}

func (l *lexer) skipLine() {
	if i := strings.IndexByte(l.src[l.pos:], '\n'); i >= 0 {
		l.pos += i
	} else {
		l.pos = len(l.src)
	}
}

// skipBlockComment skips a /* */ comment; they nest, as in the SQL standard.
func (l *lexer) skipBlockComment() error {
	start := l.pos
	l.pos += 2
	depth := 1
	for l.pos+2 <= len(l.src) {
		switch {
		case l.src[l.pos] == '/' && l.src[l.pos+1] == '*':
			depth++
			l.pos += 2
		case l.src[l.pos] == '*' && l.src[l.pos+1] == '/':
			depth--
			l.pos += 2
			if depth == 0 {
				return nil
			}
		default:
			l.pos++
		}
	}
	return syntaxError(start, "multiline comment is not closed")
}

func (l *lexer) significant(start int) (token, error) {
	s := l.src
	c := s[start]
	switch {
	case isDigit(c):
		return l.number(start)
	case c == '\'':
		return l.quoted(start, '\'', tokString)
	case c == '"' || c == '`':
		return l.quoted(start, c, tokQuotedIdent)
	case c == '.':
		return l.dot(start), nil
	case c == '$':
		if t, ok, err := l.heredoc(start); ok || err != nil {
			return t, err
		}
		if start+1 >= len(s) || !isWordChar(s[start+1]) {
			l.pos++
			return token{kind: tokPunct, text: "$", start: start, end: l.pos}, nil
		}
		return l.word(start), nil
	case (c == 'x' || c == 'X' || c == 'b' || c == 'B') && start+2 < len(s) && s[start+1] == '\'':
		return l.hexOrBinString(start)
	case isWordChar(c):
		return l.word(start), nil
	case c == '\\':
		if start+1 < len(s) && s[start+1] == 'G' {
			l.pos += 2
			return token{kind: tokPunct, text: `\G`, start: start, end: l.pos}, nil
		}
		return token{}, syntaxError(start, `unrecognized token '\'`)
	}
	return l.punct(start), nil
}

func (l *lexer) word(start int) token {
	l.pos = start + 1
	for l.pos < len(l.src) && (isWordChar(l.src[l.pos]) || l.src[l.pos] == '$') {
		l.pos++
	}
	return token{kind: tokWord, text: l.src[start:l.pos], start: start, end: l.pos}
}

// number skips a numeric literal; digits followed by word characters form
// an identifier such as 1st_column, exactly as the engine reads them.
func (l *lexer) number(start int) (token, error) {
	l.pos = start
	if l.started && l.prev == tokPunct && l.prevText == "." {
		// After a dot only a plain integer: x.1.1 is chained tuple access.
		l.digits(start, false)
	} else {
		l.numericLiteral(start)
	}
	if l.pos < len(l.src) && isWordChar(l.src[l.pos]) {
		return l.numberWord(start)
	}
	return token{kind: tokNumber, text: l.src[start:l.pos], start: start, end: l.pos}, nil
}

// digits skips decimal digits (hex digits too with hex) and the
// underscores between them after the literal's first character.
func (l *lexer) digits(start int, hex bool) {
	s := l.src
	for l.pos < len(s) && (isDigit(s[l.pos]) || (hex && isHexDigit(s[l.pos])) ||
		(s[l.pos] == '_' && l.pos+1 < len(s) && isHexDigit(s[l.pos+1]) && l.pos > start)) {
		l.pos++
	}
}

// numericLiteral skips a number from start: a 0x or 0b prefix, digits, a
// fraction and an exponent.
func (l *lexer) numericLiteral(start int) {
	s := l.src
	hex := false
	if start+2 < len(s) && s[start] == '0' && (s[start+1] == 'x' || s[start+1] == 'X') && isHexDigit(s[start+2]) {
		hex = true
		l.pos += 2
	} else if start+2 < len(s) && s[start] == '0' && (s[start+1] == 'b' || s[start+1] == 'B') && (s[start+2] == '0' || s[start+2] == '1') {
		l.pos += 2
	}
	l.digits(start, hex)
	if l.pos < len(s) && s[l.pos] == '.' {
		l.pos++
		l.digits(start, hex)
	}
	l.exponent(start, hex)
}

// exponent skips a number's exponent: e or E (p or P after hex digits), a
// sign and decimal digits.
func (l *lexer) exponent(start int, hex bool) {
	s := l.src
	marks := "eE"
	if hex {
		marks = "pP"
	}
	if l.pos+1 >= len(s) || strings.IndexByte(marks, s[l.pos]) < 0 {
		return
	}
	l.pos++
	if l.pos+1 < len(s) && (s[l.pos] == '-' || s[l.pos] == '+') {
		l.pos++
	}
	l.digits(start, false)
}

// numberWord reads a number followed by word characters as the engine
// does: an identifier when all of it is word characters (1st_column), else
// a syntax error (1.5e3abc).
func (l *lexer) numberWord(start int) (token, error) {
	s := l.src
	for l.pos < len(s) && isWordChar(s[l.pos]) {
		l.pos++
	}
	for i := start; i < l.pos; i++ {
		if !isWordChar(s[i]) && s[i] != '$' {
			return token{}, syntaxError(start, "wrong number "+strconv.Quote(s[start:l.pos]))
		}
	}
	return token{kind: tokWord, text: s[start:l.pos], start: start, end: l.pos}, nil
}

// quoted reads a quoted string or identifier: backslash escapes and a
// doubled quote both stand for the quote character.
func (l *lexer) quoted(start int, quote byte, kind tokenKind) (token, error) {
	s := l.src
	var b strings.Builder
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case quote:
			if i+1 < len(s) && s[i+1] == quote {
				b.WriteByte(quote)
				i++
				continue
			}
			l.pos = i + 1
			return token{kind: kind, text: b.String(), start: start, end: l.pos}, nil
		case '\\':
			if i+1 >= len(s) {
				return token{}, syntaxError(start, "quoted text is not closed")
			}
			i++
			// \xHH spells a byte in hex, as in the engine's own
			// parser: `\x73ystem` is system.
			if s[i] == 'x' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]) {
				b.WriteByte(hexValue(s[i+1])<<4 | hexValue(s[i+2]))
				i += 2
				continue
			}
			b.WriteByte(s[i])
		default:
			b.WriteByte(s[i])
		}
	}
	return token{}, syntaxError(start, "quoted text is not closed")
}

// heredoc reads $tag$ ... $tag$ (the tag may be empty).
func (l *lexer) heredoc(start int) (token, bool, error) {
	rest := l.src[start:]
	tagEnd := strings.IndexByte(rest[1:], '$')
	if tagEnd < 0 {
		return token{}, false, nil
	}
	tag := rest[:tagEnd+2]
	if l.missingTags[tag] {
		return token{}, false, nil
	}
	l.heredocScan += len(rest)
	if l.heredocScan > maxHeredocScan+8*len(l.src) {
		return token{}, false, syntaxError(start, "too many unterminated $...$ sequences")
	}
	closeAt := strings.Index(rest[len(tag):], tag)
	if closeAt < 0 {
		// A later occurrence of the same tag cannot find a terminator either.
		if l.missingTags == nil {
			l.missingTags = map[string]bool{}
		}
		l.missingTags[tag] = true
		return token{}, false, nil
	}
	l.pos = start + len(tag) + closeAt + len(tag)
	return token{kind: tokString, text: l.src[start:l.pos], start: start, end: l.pos}, true, nil
}

// maxHeredocScan is the heredoc search budget on top of 8 passes over the text.
const maxHeredocScan = 1 << 20

func (l *lexer) hexOrBinString(start int) (token, error) {
	s := l.src
	hex := s[start] == 'x' || s[start] == 'X'
	i := start + 2
	for i < len(s) && ((hex && isHexDigit(s[i])) || (!hex && (s[i] == '0' || s[i] == '1'))) {
		i++
	}
	if i >= len(s) || s[i] != '\'' {
		return token{}, syntaxError(start, "quoted text is not closed")
	}
	l.pos = i + 1
	return token{kind: tokString, text: s[start:l.pos], start: start, end: l.pos}, nil
}

// dot is a qualifier or tuple-access dot, or the start of a number like .5.
func (l *lexer) dot(start int) token {
	s := l.src
	nextIsDigit := start+1 < len(s) && isDigit(s[start+1])
	if start > 0 && (!nextIsDigit || (l.started && (l.prev == tokWord || l.prev == tokQuotedIdent || l.prev == tokNumber ||
		(l.prev == tokPunct && (l.prevText == ")" || l.prevText == "]"))))) {
		l.pos = start + 1
		return token{kind: tokPunct, text: ".", start: start, end: l.pos}
	}
	l.pos = start + 1
	for l.pos < len(s) && isDigit(s[l.pos]) {
		l.pos++
	}
	if l.pos+1 < len(s) && (s[l.pos] == 'e' || s[l.pos] == 'E') {
		l.pos++
		if l.pos+1 < len(s) && (s[l.pos] == '-' || s[l.pos] == '+') {
			l.pos++
		}
		for l.pos < len(s) && isDigit(s[l.pos]) {
			l.pos++
		}
	}
	return token{kind: tokNumber, text: s[start:l.pos], start: start, end: l.pos}
}

// punct reads one operator; two-character operators stay together.
func (l *lexer) punct(start int) token {
	s := l.src
	l.pos = start + 1
	if start+1 < len(s) {
		switch s[start : start+2] {
		case "->", "==", "!=", "<=", "<>", ">=", "::", "||", "@@":
			l.pos++
		}
	}
	return token{kind: tokPunct, text: s[start:l.pos], start: start, end: l.pos}
}

// tokenize returns every significant token of sql, or a syntax error.
func tokenize(sql string) ([]token, error) {
	l := lexer{src: sql}
	var out []token
	for {
		t, ok, err := l.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, t)
	}
}

// describe renders a token for error messages.
func (t token) describe() string {
	return fmt.Sprintf("%q at position %d", t.text, t.start)
}

func hexValue(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
