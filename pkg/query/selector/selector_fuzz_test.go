package selector

import (
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// survives a round trip through Format.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"{}",
		" { } ",
		`{a="b"}`,
		`{a="b",}`,
		`{service_name="checkout", k8s_namespace_name=~"prod-.*", thread_name!=""}`,
		`{"service.name"="x", "k8s.pod.name"!~'a|b'}`,
		"{a=`raw\\n`, b='it\\'s'}",
		`{a="\x41\101\u00e9\U0001F600\a\b\f\n\r\t\v\\\""}`,
		`{a=~"a)|(b"}`,
		`{a=~"("}`,
		`{a="\xff"}`,
		`{""="b"}`,
		`{a="b"} x`,
		`{a="b`,
		"{a=\"b\nc\"}",
		`{"名前"=~"値.*"}`,
		`{a="${__value.raw}", "$b"=~"[[x]]"}`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		ms, err := Parse(input)
		if err != nil {
			return
		}
		for i := range ms {
			ms[i].Matches("")
		}
		requireRoundTrip(t, input, ms, Format(ms))
		safe := FormatForTemplate(ms)
		if strings.Contains(safe, "$") || strings.Contains(safe, "[[") {
			t.Fatalf("FormatForTemplate(%q) = %q leaves text Grafana would interpolate", input, safe)
		}
		requireRoundTrip(t, input, ms, safe)
	})
}

// requireRoundTrip fails unless formatted parses back into ms.
func requireRoundTrip(t *testing.T, input string, ms []Matcher, formatted string) {
	t.Helper()
	again, err := Parse(formatted)
	if err != nil {
		t.Fatalf("Parse(%q) = %v; formatted from %q", formatted, err, input)
	}
	if len(again) != len(ms) {
		t.Fatalf("Parse(%q) gave %d matchers, want %d", formatted, len(again), len(ms))
	}
	for i := range ms {
		got, want := again[i], ms[i]
		if got.Name != want.Name || got.Op != want.Op || got.Value != want.Value {
			t.Fatalf("matcher %d: Parse(%q) gave %s, want %s", i, formatted, got.String(), want.String())
		}
	}
}
