package pprofconv

import (
	"bytes"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

var sink [][]byte

func TestConvertHeapProfileKeepsEveryValue(t *testing.T) {
	var buf bytes.Buffer
	for range 1000 {
		sink = append(sink, make([]byte, 4096))
	}
	require.NoError(t, pprof.Lookup("heap").WriteTo(&buf, 0))
	p, err := profile.Parse(&buf)
	require.NoError(t, err)

	req, err := Convert(p, Options{ResourceAttributes: []string{"service.name", "demo"}})
	require.NoError(t, err)
	require.Len(t, req.ResourceProfiles[0].ScopeProfiles[0].Profiles, len(p.SampleType), "one OTLP profile per sample type")

	opts := convert.DefaultOptions("")
	opts.Now = func() time.Time { return time.Unix(0, p.TimeNanos).Add(time.Second) }
	res, err := convert.Convert(req, opts)
	require.NoError(t, err)
	require.Empty(t, res.Rejected, "converted pprof passes OTLP validation")

	want := map[string]int64{}
	for i, st := range p.SampleType {
		for _, s := range p.Sample {
			want["memory:"+st.Type+":"+st.Unit+":space:bytes"] += s.Value[i]
		}
	}
	got := map[string]int64{}
	for _, s := range res.Batch.Samples {
		got[s.Meta.ProfileType] += s.Value
		require.Equal(t, "demo", s.Meta.Series.Service)
	}
	require.Equal(t, want, got)
}

func TestConvertRejectsEmptyProfiles(t *testing.T) {
	_, err := Convert(&profile.Profile{}, Options{})
	require.ErrorIs(t, err, errNoSamples)
}

// TestConvertLinksSamplesToTheirSpan: pprof labels trace_id and span_id
// become the sample's link (stored as TraceId/SpanId) when both are valid,
// and stay attributes otherwise.
func TestConvertLinksSamplesToTheirSpan(t *testing.T) {
	const (
		traceID = "0af7651916cd43dd8448eb211c80319c"
		spanID  = "b7ad6b7169203331"
	)
	for _, tc := range []struct {
		name         string
		labels       map[string][]string
		trace, span  string
		wantAttrKeys []string
	}{
		{"valid ids link", map[string][]string{"trace_id": {traceID}, "span_id": {spanID}}, traceID, spanID, nil},
		{"other labels stay", map[string][]string{"trace_id": {traceID}, "span_id": {spanID}, "handler": {"ingest"}}, traceID, spanID, []string{"handler"}},
		{
			"upper-case hex links, stored lower-case",
			map[string][]string{"trace_id": {strings.ToUpper(traceID)}, "span_id": {strings.ToUpper(spanID)}},
			traceID, spanID, nil,
		},
		{"first value wins", map[string][]string{"trace_id": {traceID, "x"}, "span_id": {spanID}}, traceID, spanID, nil},
		{"no span id", map[string][]string{"trace_id": {traceID}}, "", "", []string{"trace_id"}},
		{"no trace id", map[string][]string{"span_id": {spanID}}, "", "", []string{"span_id"}},
		{"short trace id", map[string][]string{"trace_id": {traceID[:31]}, "span_id": {spanID}}, "", "", []string{"span_id", "trace_id"}},
		{"long span id", map[string][]string{"trace_id": {traceID}, "span_id": {spanID + "00"}}, "", "", []string{"span_id", "trace_id"}},
		{"not hex", map[string][]string{"trace_id": {"0af7651916cd43dd8448eb211c80319z"}, "span_id": {spanID}}, "", "", []string{"span_id", "trace_id"}},
		{"zero trace id", map[string][]string{"trace_id": {strings.Repeat("0", 32)}, "span_id": {spanID}}, "", "", []string{"span_id", "trace_id"}},
		{"zero span id", map[string][]string{"trace_id": {traceID}, "span_id": {strings.Repeat("0", 16)}}, "", "", []string{"span_id", "trace_id"}},
		{"no labels", nil, "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn := &profile.Function{ID: 1, Name: "main.work"}
			loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn, Line: 3}}}
			now := time.Now()
			p := &profile.Profile{
				SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
				PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
				TimeNanos: now.UnixNano(), DurationNanos: int64(time.Second),
				Sample:   []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{10_000_000}, Label: tc.labels}},
				Location: []*profile.Location{loc}, Function: []*profile.Function{fn},
			}
			req, err := Convert(p, Options{ResourceAttributes: []string{"service.name", "demo"}})
			require.NoError(t, err)
			opts := convert.DefaultOptions("")
			opts.Now = func() time.Time { return now.Add(time.Second) }
			res, err := convert.Convert(req, opts)
			require.NoError(t, err)
			require.Empty(t, res.Rejected)
			require.Len(t, res.Batch.Samples, 1)
			s := res.Batch.Samples[0]
			require.Equal(t, tc.trace, s.Meta.TraceID)
			require.Equal(t, tc.span, s.Meta.SpanID)
			var keys []string
			for _, kv := range s.Attributes {
				keys = append(keys, kv.Key)
				require.Equal(t, tc.labels[kv.Key][0], kv.Value, "attribute %s keeps its label's value", kv.Key)
			}
			require.Equal(t, tc.wantAttrKeys, keys)
		})
	}
}

// TestConvertKeepsMappingPlacement: a pprof location without lines keeps
// its runtime address and its mapping's start and file offset, which the
// query needs to find the address in the executable; a mapping with an
// empty range places nothing.
func TestConvertKeepsMappingPlacement(t *testing.T) {
	for _, tc := range []struct {
		name                            string
		start, limit, offset            uint64
		wantStart, wantOffset, wantAddr uint64
		// namelessLine: the location has a line whose function has no
		// name, as Go's runtime/pprof writes for C code (libc, cgo
		// libraries): still an address to resolve.
		namelessLine bool
	}{
		{"pie executable", 0x55d0c0a01000, 0x55d0c0a42000, 0x1000, 0x55d0c0a01000, 0x1000, 0x55d0c0a01234, false},
		{"empty range", 0x55d0c0a01000, 0x55d0c0a01000, 0x1000, 0, 0, 0x55d0c0a01234, false},
		{"C code in a Go profile: a nameless line", 0x55d0c0a01000, 0x55d0c0a42000, 0x1000, 0x55d0c0a01000, 0x1000, 0x55d0c0a01234, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &profile.Mapping{ID: 1, Start: tc.start, Limit: tc.limit, Offset: tc.offset, File: "/usr/bin/demo", BuildID: "b1d0"}
			loc := &profile.Location{ID: 1, Mapping: m, Address: 0x55d0c0a01234}
			var fns []*profile.Function
			if tc.namelessLine {
				fns = []*profile.Function{{ID: 1}}
				loc.Line = []profile.Line{{Function: fns[0]}}
			}
			now := time.Now()
			p := &profile.Profile{
				SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
				PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
				TimeNanos: now.UnixNano(), DurationNanos: int64(time.Second),
				Sample:   []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{10_000_000}}},
				Location: []*profile.Location{loc}, Mapping: []*profile.Mapping{m}, Function: fns,
			}
			req, err := Convert(p, Options{ResourceAttributes: []string{"service.name", "demo"}})
			require.NoError(t, err)
			opts := convert.DefaultOptions("")
			opts.Now = func() time.Time { return now.Add(time.Second) }
			res, err := convert.Convert(req, opts)
			require.NoError(t, err)
			require.Empty(t, res.Rejected)
			var frames []*model.Frame
			for _, sym := range res.Batch.Symbols {
				frames = append(frames, sym.Frames...)
			}
			require.Len(t, frames, 1)
			f := frames[0]
			require.Equal(t, "b1d0", f.BuildID)
			require.Equal(t, tc.wantAddr, f.Address)
			require.Equal(t, tc.wantStart, f.MappingStart)
			require.Equal(t, tc.wantOffset, f.MappingOffset)
			require.False(t, f.Symbolized())
		})
	}
}
