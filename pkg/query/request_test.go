package query

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/query/selector"
)

func mustParse(t *testing.T, sel string) []selector.Matcher {
	t.Helper()
	ms, err := selector.Parse(sel)
	require.NoError(t, err)
	return ms
}

func quote(s string) string { return strconv.Quote(s) }

func TestParseRequestDefaultsAndValidation(t *testing.T) {
	from := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	opts := Options{DefaultProfileType: cpu, SpanPadding: time.Minute, MinStep: 15 * time.Second}
	r, err := ParseRequest([]byte(`{}`), from, to, 0, opts)
	require.NoError(t, err)
	require.Equal(t, TypeProfile, r.Type)
	require.Equal(t, cpu, r.ProfileType.ID)
	require.Equal(t, "nanoseconds", r.ProfileType.SampleUnit)
	require.Equal(t, DefaultMaxNodes, r.MaxNodes)
	require.Equal(t, 15*time.Second, r.Step)
	require.Equal(t, from, r.From, "no padding without spans")

	r, err = ParseRequest([]byte(`{"spanSelector":["00F067AA0BA902B7",""],"maxNodes":100,"queryType":"table","limit":5}`), from, to, time.Second, opts)
	require.NoError(t, err)
	require.Equal(t, []string{"00f067aa0ba902b7"}, r.SpanIDs)
	require.Equal(t, from.Add(-time.Minute), r.From, "span queries are widened by the padding")
	require.Equal(t, to.Add(time.Minute), r.To)
	require.Equal(t, 100, r.MaxNodes)
	require.Equal(t, 5, r.Limit)

	r, err = ParseRequest([]byte(`{}`), from, from.Add(30*24*time.Hour), time.Second, opts)
	require.NoError(t, err)
	require.GreaterOrEqual(t, r.Step, 30*24*time.Hour/11000, "at most 11,000 points")

	_, err = ParseRequest([]byte(`{"queryType":"flame","profileTypeId":"cpu","labelSelector":"{a=}","spanSelector":["zz"],"traceId":"12","maxNodes":-3,"limit":99999}`),
		to, from, 0, Options{})
	require.Error(t, err)
	for _, part := range []string{"queryType", "profile type", "label selector", "span id", "trace id", "maxNodes", "limit", "time range"} {
		require.ErrorContains(t, err, part, "every problem is reported at once")
	}
	_, err = ParseRequest([]byte(`{"queryType":`), from, to, 0, opts)
	require.ErrorContains(t, err, "not valid JSON")
}

func TestParseTracesAndSpansRequests(t *testing.T) {
	from := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	const trace = "4BF92F3577B34DA6A3CE929D0E0E4736"
	tests := []struct {
		name  string
		query string
		opts  Options
		check func(t *testing.T, r *Request)
		errs  []string
	}{
		{
			name: "traces with the default profile type", query: `{"queryType":"traces","traceId":"` + trace + `"}`,
			opts: Options{DefaultProfileType: cpu, SpanPadding: time.Minute},
			check: func(t *testing.T, r *Request) {
				require.Equal(t, TypeTraces, r.Type)
				require.Equal(t, strings.ToLower(trace), r.TraceID)
				require.Equal(t, cpu, r.ProfileType.ID)
				require.Equal(t, from.Add(-time.Minute), r.From, "widened like any trace read")
				require.Equal(t, time.Minute, r.Padding)
			},
		},
		{
			name: "traces without any profile type", query: `{"queryType":"traces","traceId":"` + trace + `"}`,
			check: func(t *testing.T, r *Request) {
				require.Empty(t, r.ProfileType.ID, "no profile marks, no error")
			},
		},
		{
			name: "traces without a trace id", query: `{"queryType":"traces","profileTypeId":"` + cpu + `"}`,
			errs: []string{"traceId is missing"},
		},
		{
			name: "traces with a blank trace id", query: `{"queryType":"traces","traceId":"  "}`,
			errs: []string{"traceId is missing"},
		},
		{
			name: "traces with a bad trace id", query: `{"queryType":"traces","traceId":"xyz"}`,
			errs: []string{"trace id \"xyz\" is not 32 hex digits"},
		},
		{
			name: "spans with the default limit", query: `{"queryType":"spans","profileTypeId":"` + cpu + `","labelSelector":"{service_name=\"a\"}"}`,
			check: func(t *testing.T, r *Request) {
				require.Equal(t, TypeSpans, r.Type)
				require.Equal(t, 100, r.Limit)
				require.Len(t, r.Matchers, 1)
				require.Equal(t, from, r.From, "no padding without spans or a trace")
			},
		},
		{
			name: "spans with a limit", query: `{"queryType":"spans","profileTypeId":"` + cpu + `","limit":7}`,
			check: func(t *testing.T, r *Request) { require.Equal(t, 7, r.Limit) },
		},
		{name: "spans need a profile type", query: `{"queryType":"spans"}`, errs: []string{"profileTypeId is missing"}},
		{
			name: "spans with a bad limit and selector", query: `{"queryType":"spans","profileTypeId":"` + cpu + `","limit":-2,"labelSelector":"{a"}`,
			errs: []string{"limit -2", "label selector"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest([]byte(tt.query), from, to, time.Minute, tt.opts)
			if len(tt.errs) > 0 {
				for _, e := range tt.errs {
					require.ErrorContains(t, err, e)
				}
				return
			}
			require.NoError(t, err)
			tt.check(t, r)
		})
	}
}

func TestParseRequestNarrowsToAPointsInterval(t *testing.T) {
	from := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	opts := Options{DefaultProfileType: cpu, MinStep: 15 * time.Second}
	at := from.Add(30 * time.Minute)
	r, err := ParseRequest([]byte(`{"intervalStart":"`+strconv.FormatInt(at.UnixMilli(), 10)+`","intervalSeconds":60}`), from, to, 0, opts)
	require.NoError(t, err)
	require.Equal(t, at, r.From.UTC())
	require.Equal(t, at.Add(time.Minute), r.To.UTC())

	// A point at the range's end keeps the part inside the range.
	last := to.Add(-30 * time.Second)
	r, err = ParseRequest([]byte(`{"intervalStart":"`+strconv.FormatInt(last.UnixMilli(), 10)+`","intervalSeconds":60}`), from, to, 0, opts)
	require.NoError(t, err)
	require.Equal(t, last, r.From.UTC())
	require.Equal(t, to, r.To.UTC())

	for q, msg := range map[string]string{
		`{"intervalStart":"${__value.time}","intervalSeconds":60}`: "is not a time in Unix milliseconds",
		`{"intervalStart":"1795000000000","intervalSeconds":0}`:    "intervalSeconds 0 must be between 1",
		`{"intervalStart":"1000","intervalSeconds":60}`:            "is outside the time range",
	} {
		_, err := ParseRequest([]byte(q), from, to, 0, opts)
		require.ErrorContains(t, err, msg, q)
	}
}

func TestParseDiffRequests(t *testing.T) {
	from := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	opts := Options{DefaultProfileType: cpu, Now: func() time.Time { return now }}
	tests := []struct {
		name             string
		left             string
		leftFrom, leftTo time.Time
		selector         string
	}{
		{"no left: the previous period", ``, from.Add(-time.Hour), from, `{service_name="a"}`},
		{"an offset", `"left":{"offset":"1d"}`, from.Add(-24 * time.Hour), to.Add(-24 * time.Hour), `{service_name="a"}`},
		{"offset 0", `"left":{"offset":"0"}`, from, to, `{service_name="a"}`},
		{"a selector of its own: the same range", `"left":{"labelSelector":"{service_name=\"b\"}"}`, from, to, `{service_name="b"}`},
		{"a selector and an offset", `"left":{"labelSelector":"{service_name=\"b\"}","offset":"90m"}`, from.Add(-90 * time.Minute), to.Add(-90 * time.Minute), `{service_name="b"}`},
		{
			"milliseconds and RFC 3339", `"left":{"from":` + strconv.FormatInt(from.Add(-48*time.Hour).UnixMilli(), 10) + `,"to":"2026-11-19T10:00:00Z"}`,
			from.Add(-48 * time.Hour), from.Add(-24 * time.Hour), `{service_name="a"}`,
		},
		{"relative to now", `"left":{"from":"now-7d","to":"now-6d"}`, now.Add(-7 * 24 * time.Hour), now.Add(-6 * 24 * time.Hour), `{service_name="a"}`},
		{"milliseconds as a string (an interpolated $__from)", `"left":{"from":"` + strconv.FormatInt(from.UnixMilli(), 10) + `","to":"now"}`, from, now, `{service_name="a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := `{"queryType":"diff","labelSelector":"{service_name=\"a\"}","maxNodes":500`
			if tt.left != "" {
				q += "," + tt.left
			}
			r, err := ParseRequest([]byte(q+"}"), from, to, time.Minute, opts)
			require.NoError(t, err)
			require.Equal(t, TypeDiff, r.Type)
			require.Equal(t, mustParse(t, `{service_name="a"}`), r.Matchers, "the right side is the query")
			require.Equal(t, from, r.From)
			require.NotNil(t, r.Left)
			require.Equal(t, TypeProfile, r.Left.Type)
			require.Equal(t, cpu, r.Left.ProfileType.ID)
			require.Equal(t, 500, r.Left.MaxNodes)
			require.Equal(t, mustParse(t, tt.selector), r.Left.Matchers)
			require.True(t, tt.leftFrom.Equal(r.Left.From), "from %s, want %s", r.Left.From, tt.leftFrom)
			require.True(t, tt.leftTo.Equal(r.Left.To), "to %s, want %s", r.Left.To, tt.leftTo)
		})
	}
	for name, q := range map[string]string{
		"offset and range":    `{"queryType":"diff","left":{"offset":"1h","from":"now-2h","to":"now-1h"}}`,
		"from without to":     `{"queryType":"diff","left":{"from":"now-2h"}}`,
		"negative offset":     `{"queryType":"diff","left":{"offset":"-1h"}}`,
		"bad time":            `{"queryType":"diff","left":{"from":"yesterday","to":"now"}}`,
		"empty left range":    `{"queryType":"diff","left":{"from":"now-1h","to":"now-2h"}}`,
		"bad left selector":   `{"queryType":"diff","left":{"labelSelector":"{a=}"}}`,
		"spans in a diff":     `{"queryType":"diff","spanSelector":["00f067aa0ba902b7"]}`,
		"left without a diff": `{"queryType":"profile","left":{"offset":"1h"}}`,
		"a number of what":    `{"queryType":"diff","left":{"from":true,"to":"now"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseRequest([]byte(q), from, to, time.Minute, opts)
			require.Error(t, err)
		})
	}
}

func TestParseFunctionAndRatio(t *testing.T) {
	from := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	opts := Options{DefaultProfileType: cpu}
	r, err := ParseRequest([]byte(`{"queryType":"metrics","function":" regexp.Compile ","ratio":true}`), from, from.Add(time.Hour), time.Minute, opts)
	require.NoError(t, err)
	require.Equal(t, "regexp.Compile", r.Function)
	require.False(t, r.FunctionSelf)
	require.True(t, r.Ratio)
	r, err = ParseRequest([]byte(`{"queryType":"table","function":"f","functionValue":"self"}`), from, from.Add(time.Hour), time.Minute, opts)
	require.NoError(t, err)
	require.True(t, r.FunctionSelf)
	for name, q := range map[string]string{
		"bad value":         `{"function":"f","functionValue":"flat"}`,
		"ratio of a table":  `{"queryType":"table","ratio":true}`,
		"ratio of a flame":  `{"ratio":true}`,
		"function of spans": `{"queryType":"spans","function":"f"}`,
		"too long":          `{"function":"` + strings.Repeat("x", 5000) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseRequest([]byte(q), from, from.Add(time.Hour), time.Minute, opts)
			require.Error(t, err)
		})
	}
}

func TestParseFocusPath(t *testing.T) {
	from := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	long := `["` + strings.Repeat(`a","`, maxFocusLevels) + `a"]`
	big := `["` + strings.Repeat("x", maxFocusBytes+1) + `"]`
	tests := []struct {
		query string
		want  []string
		err   string
	}{
		{query: `{"focusPath":["main","handler"]}`, want: []string{"main", "handler"}},
		{query: `{"focusPath":["main","other"]}`, want: []string{"main"}},
		{query: `{"focusPath":["other"]}`, want: nil},
		{query: `{"queryType":"both","focusPath":["main"]}`, want: []string{"main"}},
		{query: `{"focusPath":[]}`, want: nil},
		{query: `{"queryType":"table","focusPath":["main"]}`, err: `queryType profile or both, not "table"`},
		{query: `{"queryType":"diff","focusPath":["main"]}`, err: `not "diff"`},
		{query: `{"focusPath":` + long + `}`, err: "at most 1024 are allowed"},
		{query: `{"focusPath":` + big + `}`, err: "bytes long"},
	}
	for _, tt := range tests {
		t.Run(tt.query[:min(len(tt.query), 60)], func(t *testing.T) {
			r, err := ParseRequest([]byte(tt.query), from, from.Add(time.Hour), 0, Options{DefaultProfileType: cpu})
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, r.FocusPath)
		})
	}
}
