package selector

import (
	"regexp/syntax"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// plain strips the compiled regexp so matchers compare by Name, Op and Value.
func plain(ms []Matcher) []Matcher {
	if ms == nil {
		return nil
	}
	out := make([]Matcher, len(ms))
	for i, m := range ms {
		out[i] = Matcher{Name: m.Name, Op: m.Op, Value: m.Value}
	}
	return out
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []Matcher
	}{
		{"empty", "", nil},
		{"only whitespace", " \t\r\n", nil},
		{"empty braces", "{}", nil},
		{"empty braces with whitespace", " { \n } ", nil},
		{"one matcher", `{a="b"}`, []Matcher{{Name: "a", Op: Equal, Value: "b"}}},
		{
			"pyroscope example",
			`{service_name="checkout", k8s_namespace_name=~"prod-.*", thread_name!=""}`,
			[]Matcher{
				{Name: "service_name", Op: Equal, Value: "checkout"},
				{Name: "k8s_namespace_name", Op: Regexp, Value: "prod-.*"},
				{Name: "thread_name", Op: NotEqual, Value: ""},
			},
		},
		{
			"all operators",
			`{a="1",b!="2",c=~"3",d!~"4"}`,
			[]Matcher{
				{Name: "a", Op: Equal, Value: "1"},
				{Name: "b", Op: NotEqual, Value: "2"},
				{Name: "c", Op: Regexp, Value: "3"},
				{Name: "d", Op: NotRegexp, Value: "4"},
			},
		},
		{
			"whitespace between every token",
			"\t{ a \n = \"b\" , c\r\n!~ 'd' }\n",
			[]Matcher{{Name: "a", Op: Equal, Value: "b"}, {Name: "c", Op: NotRegexp, Value: "d"}},
		},
		{"trailing comma", `{a="b",}`, []Matcher{{Name: "a", Op: Equal, Value: "b"}}},
		{"trailing comma and whitespace", `{ a="b" , }`, []Matcher{{Name: "a", Op: Equal, Value: "b"}}},
		{"underscore and digits in name", `{_a1_B2="x"}`, []Matcher{{Name: "_a1_B2", Op: Equal, Value: "x"}}},
		{"duplicate names", `{a!="",a=~".+"}`, []Matcher{{Name: "a", Op: NotEqual}, {Name: "a", Op: Regexp, Value: ".+"}}},
		{
			"quoted name with dots",
			`{"service.name"="checkout", "k8s.pod.name"=~"api-.*"}`,
			[]Matcher{
				{Name: "service.name", Op: Equal, Value: "checkout"},
				{Name: "k8s.pod.name", Op: Regexp, Value: "api-.*"},
			},
		},
		{"quoted plain name", `{"a"="b"}`, []Matcher{{Name: "a", Op: Equal, Value: "b"}}},
		{"quoted name with escapes", `{"a\"b\u00e9"="c"}`, []Matcher{{Name: `a"bé`, Op: Equal, Value: "c"}}},
		{"single-quoted value", `{a='b"c'}`, []Matcher{{Name: "a", Op: Equal, Value: `b"c`}}},
		{"single-quoted escaped quote", `{a='it\'s'}`, []Matcher{{Name: "a", Op: Equal, Value: "it's"}}},
		{"double-quoted single quote", `{a="it's"}`, []Matcher{{Name: "a", Op: Equal, Value: "it's"}}},
		{"backtick value is raw", "{a=`C:\\dir\\n\"'`}", []Matcher{{Name: "a", Op: Equal, Value: `C:\dir\n"'`}}},
		{"backtick value spans lines", "{a=`x\ny`}", []Matcher{{Name: "a", Op: Equal, Value: "x\ny"}}},
		{"backtick regexp", "{a=~`\\d+\\.\\d+`}", []Matcher{{Name: "a", Op: Regexp, Value: `\d+\.\d+`}}},
		{
			"escapes",
			`{a="\a\b\f\n\r\t\v\\\"", b='\x41\101\u00e9\U0001F600'}`,
			[]Matcher{
				{Name: "a", Op: Equal, Value: "\a\b\f\n\r\t\v\\\""},
				{Name: "b", Op: Equal, Value: "AAé😀"},
			},
		},
		{"escaped regexp metacharacter", `{a=~"a\\.b"}`, []Matcher{{Name: "a", Op: Regexp, Value: `a\.b`}}},
		{"unicode value", `{city="Zürich 東京 😀"}`, []Matcher{{Name: "city", Op: Equal, Value: "Zürich 東京 😀"}}},
		{"unicode quoted name", `{"名前"="値"}`, []Matcher{{Name: "名前", Op: Equal, Value: "値"}}},
		{"braces and commas inside values", `{a="}", b=",{"}`, []Matcher{{Name: "a", Op: Equal, Value: "}"}, {Name: "b", Op: Equal, Value: ",{"}}},
		{"operator characters inside value", `{a="=~!"}`, []Matcher{{Name: "a", Op: Equal, Value: "=~!"}}},
		{"regexp at the length limit", `{a=~"` + strings.Repeat("a", MaxRegexpLength) + `"}`, []Matcher{{Name: "a", Op: Regexp, Value: strings.Repeat("a", MaxRegexpLength)}}},
		{"equal value longer than the regexp limit", `{a="` + strings.Repeat("a", MaxRegexpLength+1) + `"}`, []Matcher{{Name: "a", Op: Equal, Value: strings.Repeat("a", MaxRegexpLength+1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.input)
			require.NoError(t, err)
			require.Equal(t, tt.want, plain(got))
		})
	}
}

func TestParseMaxMatchers(t *testing.T) {
	got, err := Parse(selectorWithMatchers(MaxMatchers))
	require.NoError(t, err)
	require.Len(t, got, MaxMatchers)
}

func TestParseMaxLength(t *testing.T) {
	input := `{a="` + strings.Repeat("x", MaxSelectorLength-6) + `"}`
	require.Len(t, input, MaxSelectorLength)
	_, err := Parse(input)
	require.NoError(t, err)
}

func selectorWithMatchers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "l" + strconv.Itoa(i) + `="v"`
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr string
	}{
		{"missing opening brace", `a="b"}`, `label selector: position 1: must start with "{"`},
		{"whitespace then no brace", `  a="b"`, `label selector: position 3: must start with "{"`},
		{"missing closing brace", `{a="b"`, `label selector: position 7: expected "," or "}" after matcher a="b", found end of input`},
		{"missing closing brace after comma", `{a="b",`, `label selector: position 8: expected label name or "}", found end of input`},
		{"only an opening brace", `{`, `label selector: position 2: expected label name or "}", found end of input`},
		{"garbage after closing brace", `{a="b"} x`, `label selector: position 9: unexpected 'x' after the closing "}"`},
		{"second selector", `{}{}`, `label selector: position 3: unexpected '{' after the closing "}"`},
		{"missing comma", `{a="b" c="d"}`, `label selector: position 8: expected "," or "}" after matcher a="b", found 'c'`},
		{"double comma", `{a="b",,}`, `label selector: position 8: expected label name or "}", found ','`},
		{"leading comma", `{,a="b"}`, `label selector: position 2: expected label name or "}", found ','`},
		{
			"bad operator",
			`{service_name="checkout", service_name=="x"}`,
			`label selector: position 40: expected quoted value for label "service_name", found '='`,
		},
		{
			"missing operator",
			`{service_name "checkout"}`,
			`label selector: position 15: expected "=", "!=", "=~" or "!~" after label name "service_name"`,
		},
		{"unknown operator", `{a~="b"}`, `label selector: position 3: expected "=", "!=", "=~" or "!~" after label name "a"`},
		{"operator split by space", `{a! ="b"}`, `label selector: position 3: expected "=", "!=", "=~" or "!~" after label name "a"`},
		{"name starting with a digit", `{1a="b"}`, `label selector: position 2: expected label name or "}", found '1'`},
		{"name with a dot unquoted", `{service.name="x"}`, `label selector: position 9: expected "=", "!=", "=~" or "!~" after label name "service"`},
		{"single-quoted name", `{'a'="b"}`, `label selector: position 2: expected label name or "}", found '\''`},
		{"empty quoted name", `{""="b"}`, `label selector: position 2: quoted label name must not be empty`},
		{"name only", `{"service.name"}`, `label selector: position 16: expected "=", "!=", "=~" or "!~" after label name "service.name"`},
		{"unquoted value", `{a=b}`, `label selector: position 4: expected quoted value for label "a", found 'b'`},
		{"missing value", `{a=}`, `label selector: position 4: expected quoted value for label "a", found '}'`},
		{"unterminated double-quoted value", `{a = "abc`, `label selector: unterminated string starting at position 6`},
		{"unterminated single-quoted value", `{a='abc}`, `label selector: unterminated string starting at position 4`},
		{"unterminated backtick value", "{a=`abc}", `label selector: unterminated string starting at position 4`},
		{"unterminated quoted name", `{"abc`, `label selector: unterminated string starting at position 2`},
		{"backslash escapes the closing quote", `{a="b\"}`, `label selector: unterminated string starting at position 4`},
		{"newline in double-quoted value", "{a=\"b\nc\"}", `label selector: position 6: newline in string starting at position 4`},
		{"bad escape", `{a="b\qc"}`, `label selector: position 6: invalid escape sequence "\\q"`},
		{"escaped single quote in double quotes", `{a="\'"}`, `label selector: position 5: invalid escape sequence "\\'"`},
		{"escaped double quote in single quotes", `{a='\"'}`, `label selector: position 5: invalid escape sequence "\\\""`},
		{"short hex escape", `{a="\x4"}`, `label selector: position 5: invalid escape sequence "\\x"`},
		{"octal escape out of range", `{a="\400"}`, `label selector: position 5: invalid escape sequence "\\4"`},
		{"surrogate escape", `{a="\ud800"}`, `label selector: position 5: invalid escape sequence "\\u"`},
		{"invalid UTF-8 from an escape", `{a="\xff"}`, `label selector: position 4: value "\xff" of label "a" is not valid UTF-8`},
		{"invalid UTF-8 in a value", "{a=\"x\xffy\"}", `label selector: position 6: string is not valid UTF-8`},
		{"invalid UTF-8 in a backtick value", "{a=`\xff`}", `label selector: position 4: value "\xff" of label "a" is not valid UTF-8`},
		{"invalid UTF-8 in a quoted name", `{"\xc3"="b"}`, `label selector: position 2: label name "\xc3" is not valid UTF-8`},
		{"invalid UTF-8 outside strings", "{\xff}", `label selector: position 2: expected label name or "}", found byte 0xff`},
		{"invalid regexp", `{a=~"("}`, "label selector: position 5: invalid regexp for label \"a\": error parsing regexp: missing closing ): `(`"},
		{"invalid negated regexp", `{a!~"*"}`, "label selector: position 5: invalid regexp for label \"a\": error parsing regexp: missing argument to repetition operator: `*`"},
		{"regexp escaping its anchor", `{a=~"a)|(b"}`, "label selector: position 5: invalid regexp for label \"a\": error parsing regexp: unexpected ): `a)|(b`"},
		{"regexp not RE2", `{a=~"(?=x)"}`, "label selector: position 5: invalid regexp for label \"a\": error parsing regexp: invalid or unsupported Perl syntax: `(?=`"},
		{"regexp too long", `{a=~"` + strings.Repeat("a", MaxRegexpLength+1) + `"}`, `label selector: position 5: regexp for label "a" is 4097 bytes, longer than the limit of 4096 bytes`},
		{"too many matchers", selectorWithMatchers(MaxMatchers + 1), "label selector: position 504: more than the limit of 64 matchers"},
		{"too long", `{a="` + strings.Repeat("x", MaxSelectorLength) + `"}`, "label selector: selector is 16390 bytes, longer than the limit of 16384 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.input)
			require.EqualError(t, err, tt.wantErr)
			require.Nil(t, got)
		})
	}
}

func TestParseRegexpErrorIsWrapped(t *testing.T) {
	_, err := Parse(`{a=~"["}`)
	var syntaxErr *syntax.Error
	require.ErrorAs(t, err, &syntaxErr)
	require.Equal(t, syntax.ErrMissingBracket, syntaxErr.Code)
}

func TestOpString(t *testing.T) {
	require.Equal(t, "=", Equal.String())
	require.Equal(t, "!=", NotEqual.String())
	require.Equal(t, "=~", Regexp.String())
	require.Equal(t, "!~", NotRegexp.String())
	require.Equal(t, "Op(9)", Op(9).String())
}

func TestMatches(t *testing.T) {
	tests := []struct {
		selector string
		value    string
		want     bool
	}{
		{`{a="b"}`, "b", true},
		{`{a="b"}`, "B", false},
		{`{a="b"}`, "", false},
		{`{a=""}`, "", true},
		{`{a!="b"}`, "c", true},
		{`{a!="b"}`, "b", false},
		{`{a!=""}`, "", false},
		{`{a!=""}`, "x", true},
		{`{a=~"a"}`, "a", true},
		{`{a=~"a"}`, "ab", false},
		{`{a=~"a"}`, "ba", false},
		{`{a=~"a|b"}`, "b", true},
		{`{a=~"a|b"}`, "ab", false},
		{`{a=~"prod-.*"}`, "prod-eu", true},
		{`{a=~"prod-.*"}`, "preprod-eu", false},
		{`{a=~".*"}`, "", true},
		{`{a=~".+"}`, "", false},
		{`{a=~"a.b"}`, "a\nb", true},
		{`{a=~"(?i)CHECKOUT"}`, "checkout", true},
		{`{a!~"a"}`, "a", false},
		{`{a!~"a"}`, "ab", true},
		{`{a!~"a"}`, "", true},
		{`{a!~".+"}`, "", true},
		{`{a!~".*"}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.selector+" "+strconv.Quote(tt.value), func(t *testing.T) {
			ms, err := Parse(tt.selector)
			require.NoError(t, err)
			require.Len(t, ms, 1)
			require.Equal(t, tt.want, ms[0].Matches(tt.value))
		})
	}
}

func TestMatchesHandBuilt(t *testing.T) {
	re := Matcher{Name: "a", Op: Regexp, Value: "x+"}
	require.True(t, re.Matches("xx"))
	require.False(t, re.Matches("xy"))

	notRe := Matcher{Name: "a", Op: NotRegexp, Value: "x+"}
	require.True(t, notRe.Matches(""))
	require.False(t, notRe.Matches("x"))

	invalid := Matcher{Name: "a", Op: NotRegexp, Value: "("}
	require.False(t, invalid.Matches(""), "an invalid regexp matches nothing")

	unknownOp := Matcher{Name: "a", Op: Op(9)}
	require.False(t, unknownOp.Matches(""), "an unknown operator matches nothing")
}

func TestMatchesAfterValueChange(t *testing.T) {
	ms, err := Parse(`{a=~"x"}`)
	require.NoError(t, err)
	ms[0].Value = "y"
	require.True(t, ms[0].Matches("y"), "the regexp compiled by Parse must not outlive its value")
	require.False(t, ms[0].Matches("x"))
}

func TestString(t *testing.T) {
	tests := []struct {
		matcher Matcher
		want    string
	}{
		{Matcher{Name: "a", Op: Equal, Value: "b"}, `a="b"`},
		{Matcher{Name: "a", Op: NotEqual, Value: ""}, `a!=""`},
		{Matcher{Name: "a", Op: Regexp, Value: `\d+`}, `a=~"\\d+"`},
		{Matcher{Name: "a", Op: NotRegexp, Value: "x"}, `a!~"x"`},
		{Matcher{Name: "service.name", Op: Equal, Value: "x"}, `"service.name"="x"`},
		{Matcher{Name: "1a", Op: Equal, Value: "x"}, `"1a"="x"`},
		{Matcher{Name: "a", Op: Equal, Value: "it's \"q\"\n\t😀\x00"}, `a="it's \"q\"\n\t😀\x00"`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, tt.matcher.String())
			got, err := Parse("{" + tt.matcher.String() + "}")
			require.NoError(t, err)
			require.Equal(t, []Matcher{tt.matcher}, plain(got))
		})
	}
}

func TestFormat(t *testing.T) {
	require.Equal(t, "{}", Format(nil))
	require.Equal(t, `{a="b", c=~"d"}`, Format([]Matcher{
		{Name: "a", Op: Equal, Value: "b"},
		{Name: "c", Op: Regexp, Value: "d"},
	}))
}

func TestFormatForTemplateEscapesGrafanaVariables(t *testing.T) {
	tests := []struct {
		matchers []Matcher
		want     string
	}{
		{nil, "{}"},
		{[]Matcher{{Name: "a", Op: Equal, Value: "b"}}, `{a="b"}`},
		{[]Matcher{{Name: "pod", Op: Equal, Value: "${__value.raw}"}}, `{pod="\x24{__value.raw}"}`},
		{[]Matcher{{Name: "x.$y", Op: Regexp, Value: "[[v]]|[a-z]$"}}, `{"x.\x24y"=~"\x5b[v]]|[a-z]\x24"}`},
		{[]Matcher{{Name: "a", Op: NotEqual, Value: `\[[`}}, `{a!="\\\x5b["}`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := FormatForTemplate(tt.matchers)
			require.Equal(t, tt.want, got)
			back, err := Parse(got)
			require.NoError(t, err)
			require.Equal(t, tt.matchers, plain(back))
		})
	}
}

func TestFormatRoundTrip(t *testing.T) {
	inputs := []string{
		"",
		"{}",
		`{service_name="checkout", k8s_namespace_name=~"prod-.*", thread_name!=""}`,
		`{"service.name"!~'a|b', x=` + "`raw\\n\n`" + `,}`,
		`{a="\x41\u00e9\U0001F600\a\v\\\"", b='\'', c="\u2028\ufeff\x7f"}`,
		`{"with \"quotes\""="v", "é"=~"(?i)é+"}`,
		selectorWithMatchers(MaxMatchers),
	}
	for _, input := range inputs {
		t.Run(input, func(t *testing.T) {
			ms, err := Parse(input)
			require.NoError(t, err)
			formatted := Format(ms)
			again, err := Parse(formatted)
			require.NoError(t, err, formatted)
			require.Equal(t, plain(ms), plain(again))
			require.Equal(t, formatted, Format(again))
		})
	}
}
