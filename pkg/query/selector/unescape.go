package selector

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// unescape decodes the body of a double- or single-quoted string with Go and
// PromQL escapes (\n, \\, \xNN, \uNNNN, octal, and the enclosing quote). On
// error it also returns the byte offset in body of the offending character.
func unescape(body string, quote byte) (string, int, error) {
	if !utf8.ValidString(body) {
		return "", invalidUTF8Offset(body), errors.New("string is not valid UTF-8")
	}
	if !strings.ContainsRune(body, '\\') {
		return body, 0, nil
	}
	var b strings.Builder
	b.Grow(len(body))
	for rest := body; rest != ""; {
		r, multibyte, tail, err := strconv.UnquoteChar(rest, quote)
		if err != nil {
			return "", len(body) - len(rest), fmt.Errorf("invalid escape sequence %s", escapeAt(rest))
		}
		writeUnquoted(&b, r, multibyte)
		rest = tail
	}
	return b.String(), 0, nil
}

// writeUnquoted writes a character decoded by strconv.UnquoteChar: a single
// byte for \xNN, octal and ASCII (never multibyte, so at most 0xff), UTF-8
// otherwise.
func writeUnquoted(b *strings.Builder, r rune, multibyte bool) {
	if multibyte || r < 0 || r > 0xff {
		b.WriteRune(r)
		return
	}
	b.WriteByte(byte(r))
}

// escapeAt quotes the escape sequence at the start of s for an error
// message: the backslash and the character after it.
func escapeAt(s string) string {
	if len(s) < 2 {
		return strconv.Quote(s)
	}
	_, size := utf8.DecodeRuneInString(s[1:])
	return strconv.Quote(s[:1+size])
}

func invalidUTF8Offset(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return 0
}
