package convert

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// t0 is the fixtures' collection start: 2026-11-20 12:00:00 UTC.
var t0 = uint64(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC).UnixNano())

func testOptions() Options {
	o := DefaultOptions("acme")
	o.Now = func() time.Time { return time.Date(2026, 11, 20, 12, 1, 0, 0, time.UTC) }
	return o
}

// ebpfRequest is shaped like the OpenTelemetry eBPF profiler's output: a
// CPU profile of samples/count on a 50 ms cpu period, samples carrying
// timestamp lists, an inlined Go frame, an unsymbolized native frame, a
// kernel frame, thread attributes and one trace link.
func ebpfRequest() *otlpbuild.Builder {
	b := otlpbuild.New()
	exe := b.Mapping(0x400000, 0x800000, 0, "/usr/bin/checkout", "4fe8c1")
	libc := b.Mapping(0x7f0000000000, 0x7f0000200000, 0, "/lib/x86_64-linux-gnu/libc.so.6", "")
	mainFn := b.Function("main.main", "", "/src/main.go", 10)
	handle := b.Function("main.handle", "", "/src/handler.go", 20)
	encode := b.Function("json.encode", "", "/go/src/encoding/json/encode.go", 300)
	sysWrite := b.Function("sys_write", "", "", 0)

	root := b.Location(exe, 0x401000, "go", otlpbuild.Line{Function: mainFn, Line: 12})
	// handle.go:25 with json.encode inlined into it (innermost first).
	inlined := b.Location(exe, 0x402000, "go", otlpbuild.Line{Function: encode, Line: 310, Column: 4}, otlpbuild.Line{Function: handle, Line: 25})
	native := b.Location(libc, 0x7f0000012345, "native")
	kernel := b.Location(0, 0xffffffff81000000, "kernel", otlpbuild.Line{Function: sysWrite})

	deep := b.Stack(kernel, native, inlined, root) // leaf first
	shallow := b.Stack(inlined, root)

	var trace [16]byte
	var span [8]byte
	copy(trace[:], "0123456789abcdef")
	copy(span[:], "spanspan")
	link := b.Link(trace, span)

	rp := b.Resource("service.name", "checkout", "k8s.pod.name", "checkout-7d9", "k8s.namespace.name", "shop", "process.pid", "4242")
	sp := otlpbuild.Scope(rp, "go.opentelemetry.io/ebpf-profiler", "v0.0.202633")
	worker := b.Attr("thread.name", "worker")
	sp.Profiles = append(sp.Profiles, &pb.Profile{
		SampleType:   b.ValueType("samples", "count"),
		PeriodType:   b.ValueType("cpu", "nanoseconds"),
		Period:       50_000_000,
		TimeUnixNano: t0,
		DurationNano: 5e9,
		Samples: []*pb.Sample{
			// Three events in second 0 and one in second 1 on the deep stack.
			{StackIndex: deep, AttributeIndices: []int32{worker}, TimestampsUnixNano: []uint64{t0 + 1e8, t0 + 2e8, t0 + 9e8, t0 + 1e9 + 5}},
			// Same stack and attributes, with a trace link: a separate row.
			{StackIndex: deep, AttributeIndices: []int32{worker}, LinkIndex: link, TimestampsUnixNano: []uint64{t0 + 3e8}},
			{StackIndex: shallow, TimestampsUnixNano: []uint64{t0 + 4e9}},
		},
	})
	return b
}

// goldenRow is a sample row with its stack resolved to frame labels.
type goldenRow struct {
	Timestamp   int64             `json:"timestamp"`
	ProfileType string            `json:"profileType"`
	Service     string            `json:"service"`
	Value       int64             `json:"value"`
	TraceID     string            `json:"traceId,omitempty"`
	SpanID      string            `json:"spanId,omitempty"`
	Attributes  map[string]string `json:"attributes,omitempty"`
	Stack       []string          `json:"stack"`
}

type goldenFrame struct {
	Label, Function, File, Mapping, BuildID, FrameType string
	Line, Column                                       uint32
	Inlined                                            bool
	Address                                            string
	// MappingStart and MappingOffset are the placement of an unsymbolized frame.
	MappingStart  string `json:",omitempty"`
	MappingOffset string `json:",omitempty"`
}

// attributesOrNil renders attributes as the golden file holds them.
func attributesOrNil(kvs []model.KV) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	return model.KVMap(kvs)
}

// goldenProfile is a listed profile.
type goldenProfile struct {
	Service, ProfileType, ProfileID string
	Time, Duration                  uint64
	Period                          int64
	FirstSecond, LastSecond         int64
	Events, Total                   int64
}

type golden struct {
	Series   []map[string]string `json:"series"`
	Rows     []goldenRow         `json:"rows"`
	Frames   []goldenFrame       `json:"frames"`
	Events   int64               `json:"events"`
	Profiles []goldenProfile     `json:"profiles"`
}

func toGolden(t *testing.T, b *model.Batch) golden {
	t.Helper()
	var g golden
	for _, s := range b.Series {
		g.Series = append(g.Series, s.Attributes)
	}
	for _, s := range b.Samples {
		sym := b.Symbols[model.ServiceKey{Tenant: s.Meta.Series.Tenant, Service: s.Meta.Series.Service}]
		require.NotNil(t, sym, "every sample's service has symbols")
		stacks, frames := sym.ByID()
		stack := stacks[s.StackID]
		require.NotNil(t, stack, "every sample's stack is in the batch")
		var labels []string
		for _, id := range stack.FrameIDs {
			f := frames[id]
			require.NotNil(t, f, "every frame of a stack is in the batch")
			labels = append(labels, f.Label())
		}
		g.Rows = append(g.Rows, goldenRow{
			Timestamp: s.Timestamp, ProfileType: s.Meta.ProfileType, Service: s.Meta.Series.Service, Value: s.Value,
			TraceID: s.Meta.TraceID, SpanID: s.Meta.SpanID, Attributes: attributesOrNil(s.Attributes), Stack: labels,
		})
	}
	var frames []*model.Frame
	for _, sym := range b.Symbols {
		frames = append(frames, sym.Frames...)
	}
	for _, f := range frames {
		gf := goldenFrame{
			Label: f.Label(), Function: f.FunctionName, File: f.FileName, Mapping: f.MappingFile, BuildID: f.BuildID,
			FrameType: f.FrameType, Line: f.Line, Column: f.Column, Inlined: f.Inlined,
		}
		if f.Address != 0 {
			gf.Address = fmt.Sprintf("%#x", f.Address)
		}
		if f.MappingStart != 0 || f.MappingOffset != 0 {
			gf.MappingStart, gf.MappingOffset = fmt.Sprintf("%#x", f.MappingStart), fmt.Sprintf("%#x", f.MappingOffset)
		}
		g.Frames = append(g.Frames, gf)
	}
	slices.SortFunc(g.Frames, func(a, b goldenFrame) int {
		if a.Label < b.Label {
			return -1
		}
		if a.Label > b.Label {
			return 1
		}
		return 0
	})
	g.Events = b.Events
	for _, p := range b.Profiles {
		g.Profiles = append(g.Profiles, goldenProfile{
			Service: p.Series.Service, ProfileType: p.ProfileType, ProfileID: p.ProfileID, Time: p.TimeNanos, Duration: p.DurationNanos,
			Period: p.Period, FirstSecond: p.FirstSecond, LastSecond: p.LastSecond, Events: p.Events, Total: p.Total,
		})
	}
	return g
}

func checkGolden(t *testing.T, name string, got any) {
	t.Helper()
	raw, err := json.MarshalIndent(got, "", "  ")
	require.NoError(t, err)
	path := filepath.Join("testdata", name+".json")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o750))
		require.NoError(t, os.WriteFile(path, append(raw, '\n'), 0o600))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./pkg/ingest/convert -update to create %s", path)
	require.JSONEq(t, string(want), string(raw))
}

func TestConvertEBPFShapedProfile(t *testing.T) {
	res, err := Convert(ebpfRequest().Request(), testOptions())
	require.NoError(t, err)
	require.Equal(t, 1, res.Profiles)
	require.Empty(t, res.Rejected)
	g := toGolden(t, res.Batch)
	checkGolden(t, "ebpf_cpu", g)

	// The values behind the golden file, checked by hand: 3 events in
	// second 0 and 1 in second 1 on the deep stack, 1 linked event, 1 on
	// the shallow stack, each 50 ms of CPU.
	require.Equal(t, int64(6), res.Batch.Events)
	var total int64
	for _, s := range res.Batch.Samples {
		total += s.Value
		require.Equal(t, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", s.Meta.ProfileType)
		require.Equal(t, "checkout-7d9", s.Meta.Series.Attributes["k8s.pod.name"])
	}
	require.Equal(t, int64(6*50_000_000), total)
	require.Len(t, res.Batch.Samples, 4)
	require.Equal(t, []string{"main.main", "main.handle", "json.encode", "libc.so.6+0x7f0000012345", "sys_write"}, g.Rows[0].Stack)
	// The profile is listed with what its rows hold: events from second 0
	// to second 4 of its window.
	require.Equal(t, []goldenProfile{{
		Service: "checkout", ProfileType: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", Time: t0, Duration: 5e9, Period: 50_000_000,
		FirstSecond: int64(t0 / 1e9), LastSecond: int64(t0/1e9) + 4, Events: 6, Total: 6 * 50_000_000,
	}}, g.Profiles)
	require.Same(t, res.Batch.Samples[0].Meta.Series, res.Batch.Profiles[0].Series)
}

func TestConvertKeepsCountsWhenAsked(t *testing.T) {
	opts := testOptions()
	opts.CPUSamplesAsTime = false
	res, err := Convert(ebpfRequest().Request(), opts)
	require.NoError(t, err)
	require.Equal(t, "process_cpu:samples:count:cpu:nanoseconds", res.Batch.Samples[0].Meta.ProfileType)
	require.Equal(t, int64(3), res.Batch.Samples[0].Value)
}

func TestServiceNameDefaults(t *testing.T) {
	require.Equal(t, "checkout", ServiceName(map[string]string{"service.name": "checkout", "process.executable.name": "x"}))
	require.Equal(t, "unknown_service:java", ServiceName(map[string]string{"process.executable.name": "java"}))
	require.Equal(t, "unknown_service", ServiceName(nil))
}

func TestConvertResolvesStringReferences(t *testing.T) {
	// pdata-based senders (Collector >= v0.148) put resource attribute keys
	// and string values in the dictionary's string table.
	b := ebpfRequest()
	req := b.Request()
	key, val := b.Str("service.name"), b.Str("payments")
	nsKey := b.Str("k8s.namespace.name")
	req.ResourceProfiles[0].Resource.Attributes = []*commonpb.KeyValue{
		{KeyStrindex: key, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: val}}},
		{KeyStrindex: nsKey, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 7}}},
	}
	res, err := Convert(req, testOptions())
	require.NoError(t, err)
	require.Empty(t, res.Rejected)
	s := res.Batch.Samples[0].Meta.Series
	require.Equal(t, "payments", s.Service)
	require.Equal(t, "7", s.Attributes["k8s.namespace.name"])
	require.Equal(t, "go.opentelemetry.io/ebpf-profiler", s.Attributes["otel.scope.name"])
}

func TestConvertProfileAttributesAndValuesOnlySamples(t *testing.T) {
	b := otlpbuild.New()
	fn := b.Function("alloc", "", "a.go", 0)
	st := b.Stack(b.Location(0, 0, "", otlpbuild.Line{Function: fn, Line: 3}))
	rp := b.Resource("service.name", "api")
	sp := otlpbuild.Scope(rp, "", "")
	sp.Profiles = append(sp.Profiles, &pb.Profile{
		SampleType: b.ValueType("alloc_space", "bytes"), PeriodType: b.ValueType("space", "bytes"), Period: 524288,
		TimeUnixNano: t0 + 7e9, AttributeIndices: []int32{b.Attr("env", "prod"), b.Attr("thread.name", "profile-level")},
		Samples: []*pb.Sample{
			{StackIndex: st, Values: []int64{4096}},
			{StackIndex: st, Values: []int64{1024}, AttributeIndices: []int32{b.Attr("thread.name", "gc")}},
		},
	})
	res, err := Convert(b.Request(), testOptions())
	require.NoError(t, err)
	require.Len(t, res.Batch.Samples, 2)
	first, second := res.Batch.Samples[0], res.Batch.Samples[1]
	require.Equal(t, "memory:alloc_space:bytes:space:bytes", first.Meta.ProfileType)
	require.Equal(t, int64(t0/1e9+7), first.Timestamp, "values-only samples are placed at the profile's time")
	require.Equal(t, int64(4096), first.Value)
	require.Equal(t, map[string]string{"env": "prod", "thread.name": "profile-level"}, model.KVMap(first.Attributes))
	require.Equal(t, map[string]string{"env": "prod", "thread.name": "gc"}, model.KVMap(second.Attributes), "sample attributes win over profile attributes")
}

func TestConvertEmptyStackAndTruncation(t *testing.T) {
	b := otlpbuild.New()
	fn := b.Function("f", "", "", 0)
	loc := b.Location(0, 0, "", otlpbuild.Line{Function: fn})
	deep := make([]int32, 10)
	for i := range deep {
		deep[i] = loc
	}
	st := b.Stack(deep...)
	sp := otlpbuild.Scope(b.Resource("service.name", "s"), "", "")
	sp.Profiles = append(sp.Profiles, &pb.Profile{
		SampleType: b.ValueType("samples", "count"), TimeUnixNano: t0,
		Samples: []*pb.Sample{{StackIndex: 0, Values: []int64{1}}, {StackIndex: st, Values: []int64{2}}},
	})
	opts := testOptions()
	opts.MaxStackDepth = 4
	res, err := Convert(b.Request(), opts)
	require.NoError(t, err)
	require.Empty(t, res.Rejected)
	g := toGolden(t, res.Batch)
	require.Empty(t, g.Rows[0].Stack, "a sample on the empty stack is kept, on the root only")
	require.Equal(t, []string{"f", "f", "f", "[truncated]"}, g.Rows[1].Stack)
}

// reject builds a request with two profiles, breaks the first one and
// expects it alone to be rejected for the given reason.
func TestConvertRejectsOneProfileAndKeepsTheRest(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(b *otlpbuild.Builder, p *pb.Profile)
		reason  Reason
		text    string
	}{
		{
			"stack index out of range", func(_ *otlpbuild.Builder, p *pb.Profile) { p.Samples[0].StackIndex = 999 },
			ReasonIndexOutOfRange, "stack_index 999 is out of range",
		},
		{
			"attribute index out of range", func(_ *otlpbuild.Builder, p *pb.Profile) { p.Samples[0].AttributeIndices = []int32{42} },
			ReasonIndexOutOfRange, "attribute index 42 is out of range",
		},
		{"duplicate attribute key", func(b *otlpbuild.Builder, p *pb.Profile) {
			p.Samples[0].AttributeIndices = []int32{b.Attr("thread.name", "a"), b.Attr("thread.name", "b")}
		}, ReasonDuplicateAttribute, `attribute key "thread.name" appears twice`},
		{
			"link index out of range", func(_ *otlpbuild.Builder, p *pb.Profile) { p.Samples[0].LinkIndex = 77 },
			ReasonIndexOutOfRange, "link_index 77",
		},
		{"short trace id", func(b *otlpbuild.Builder, p *pb.Profile) {
			d := b.Dictionary()
			d.LinkTable = append(d.LinkTable, &pb.Link{TraceId: []byte{1, 2, 3}, SpanId: make([]byte, 8)})
			p.Samples[0].LinkIndex = int32(len(d.LinkTable) - 1)
		}, ReasonInvalidLink, "16-byte trace_id"},
		{
			"values and timestamps differ in length", func(_ *otlpbuild.Builder, p *pb.Profile) { p.Samples[0].Values = []int64{1, 2} },
			ReasonInvalidSampleShape, "same length",
		},
		{"two values without timestamps", func(_ *otlpbuild.Builder, p *pb.Profile) {
			p.Samples[0].TimestampsUnixNano, p.Samples[0].Values = nil, []int64{1, 2}
		}, ReasonInvalidSampleShape, "exactly one value"},
		{
			"empty sample", func(_ *otlpbuild.Builder, p *pb.Profile) { p.Samples[0].TimestampsUnixNano = nil },
			ReasonInvalidSampleShape, "needs values or timestamps",
		},
		{
			"timestamp outside the window", func(_ *otlpbuild.Builder, p *pb.Profile) { p.Samples[0].TimestampsUnixNano = []uint64{t0 + 6e9} },
			ReasonTimestampRange, "outside the profile's window",
		},
		{"profile in the future", func(_ *otlpbuild.Builder, p *pb.Profile) {
			p.TimeUnixNano = t0 + uint64(48*time.Hour)
			p.Samples[0].TimestampsUnixNano = []uint64{p.TimeUnixNano + 1}
		}, ReasonTimestampRange, "in the future"},
		{
			"profile id of the wrong length", func(_ *otlpbuild.Builder, p *pb.Profile) { p.ProfileId = []byte{1, 2} },
			ReasonInvalidProfileID, "profile_id",
		},
		{
			"no sample type", func(_ *otlpbuild.Builder, p *pb.Profile) { p.SampleType = nil },
			ReasonInvalidValueType, "sample_type has no type",
		},
		{
			"sample type string out of range", func(_ *otlpbuild.Builder, p *pb.Profile) { p.SampleType.TypeStrindex = 10_000 },
			ReasonIndexOutOfRange, "string_table",
		},
		{"negative line", func(b *otlpbuild.Builder, p *pb.Profile) {
			fn := b.Function("neg", "", "", 0)
			loc := b.Location(0, 0, "", otlpbuild.Line{Function: fn, Line: -3})
			p.Samples[0].StackIndex = b.Stack(loc)
		}, ReasonInvalidLine, "must not be negative"},
		{"mapping with start above limit", func(b *otlpbuild.Builder, p *pb.Profile) {
			m := b.Mapping(0x2000, 0x1000, 0, "bad.so", "")
			p.Samples[0].StackIndex = b.Stack(b.Location(m, 0x1800, ""))
		}, ReasonInvalidMapping, "memory_start"},
		{"location with a function out of range", func(b *otlpbuild.Builder, p *pb.Profile) {
			d := b.Dictionary()
			d.LocationTable = append(d.LocationTable, &pb.Location{Lines: []*pb.Line{{FunctionIndex: 5000}}})
			p.Samples[0].StackIndex = b.Stack(int32(len(d.LocationTable) - 1))
		}, ReasonIndexOutOfRange, "function_index 5000"},
		{"unknown field in a sample", func(_ *otlpbuild.Builder, p *pb.Profile) {
			p.Samples[0].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
		}, ReasonUnknownFields, "older, renumbered schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := ebpfRequest()
			req := b.Request()
			sp := req.ResourceProfiles[0].ScopeProfiles[0]
			good := proto.Clone(sp.Profiles[0]).(*pb.Profile)
			tc.corrupt(b, sp.Profiles[0])
			sp.Profiles = append(sp.Profiles, good)

			res, err := Convert(req, testOptions())
			require.NoError(t, err)
			require.Equal(t, 2, res.Profiles)
			require.Len(t, res.Rejected, 1)
			require.Equal(t, tc.reason, res.Rejected[0].Reason, res.Rejected[0].Message)
			require.Contains(t, res.Rejected[0].Message, tc.text)
			require.Equal(t, "resource_profiles[0].scope_profiles[0].profiles[0]", res.Rejected[0].Path)
			require.Equal(t, int64(6), res.Batch.Events, "the good profile is stored in full")
			require.Len(t, res.Batch.Profiles, 1, "and listed; the rejected one is not")
			require.Equal(t, int64(6), res.Batch.Profiles[0].Events)
			require.Contains(t, res.Summary(1000), "1 of 2 profiles rejected")
		})
	}
}

func TestConvertRejectsWholeRequests(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(b *otlpbuild.Builder, req *collectorpb.ExportProfilesServiceRequest)
		reason  Reason
	}{
		{"string sentinel", func(b *otlpbuild.Builder, _ *collectorpb.ExportProfilesServiceRequest) {
			b.Dictionary().StringTable[0] = "oops"
		}, ReasonInvalidSentinel},
		{"location sentinel", func(b *otlpbuild.Builder, _ *collectorpb.ExportProfilesServiceRequest) {
			b.Dictionary().LocationTable[0] = &pb.Location{Address: 1}
		}, ReasonInvalidSentinel},
		{"unknown field in the dictionary", func(b *otlpbuild.Builder, _ *collectorpb.ExportProfilesServiceRequest) {
			b.Dictionary().FunctionTable[1].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 12, protowire.VarintType), 1))
		}, ReasonUnknownFields},
		{"unknown field in the request", func(_ *otlpbuild.Builder, req *collectorpb.ExportProfilesServiceRequest) {
			req.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 8, protowire.BytesType), nil))
		}, ReasonUnknownFields},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := ebpfRequest()
			req := b.Request()
			tc.corrupt(b, req)
			_, err := Convert(req, testOptions())
			var re *RequestError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.reason, re.Reason)
		})
	}
}

// TestConvertRejectsAnOlderSchemaVersion encodes a sample the way OTLP
// profiles v1.9 did (values=2, attribute_indices=3, link_index=4), which
// the current schema decodes without error into the wrong fields.
func TestConvertRejectsAnOlderSchemaVersion(t *testing.T) {
	var old []byte
	old = protowire.AppendTag(old, 1, protowire.VarintType) // stack_index
	old = protowire.AppendVarint(old, 1)
	old = protowire.AppendTag(old, 2, protowire.BytesType) // v1.9 values (packed)
	old = protowire.AppendBytes(old, protowire.AppendVarint(nil, 42))
	old = protowire.AppendTag(old, 3, protowire.BytesType) // v1.9 attribute_indices (packed)
	old = protowire.AppendBytes(old, protowire.AppendVarint(nil, 1))
	old = protowire.AppendTag(old, 4, protowire.VarintType) // v1.9 link_index
	old = protowire.AppendVarint(old, 1)
	var sample pb.Sample
	require.NoError(t, proto.Unmarshal(old, &sample), "the old encoding decodes without error")
	require.Equal(t, []int32{42}, sample.GetAttributeIndices(), "...into the wrong fields")

	b := ebpfRequest()
	req := b.Request()
	req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].Samples = []*pb.Sample{&sample}
	res, err := Convert(req, testOptions())
	require.NoError(t, err)
	require.Len(t, res.Rejected, 1)
	require.Equal(t, ReasonUnknownFields, res.Rejected[0].Reason)
	require.Contains(t, res.Rejected[0].Message, "upgrade the sender")
}

func TestConvertResourceErrorsRejectItsProfiles(t *testing.T) {
	b := ebpfRequest()
	req := b.Request()
	req.ResourceProfiles[0].Resource.Attributes = append(req.ResourceProfiles[0].Resource.Attributes,
		&commonpb.KeyValue{KeyStrindex: 9999})
	res, err := Convert(req, testOptions())
	require.NoError(t, err)
	require.Len(t, res.Rejected, 1)
	require.Contains(t, res.Rejected[0].Message, "key_strindex 9999 is out of range")
	require.Empty(t, res.Batch.Samples)
}

func TestSummaryIsBounded(t *testing.T) {
	r := &Result{Profiles: 1000}
	for i := range 1000 {
		r.Rejected = append(r.Rejected, Rejection{Path: fmt.Sprintf("p[%d]", i), Message: "bad"})
	}
	s := r.Summary(200)
	require.LessOrEqual(t, len(s), 230)
	require.Contains(t, s, "1000 of 1000 profiles rejected")
	require.Contains(t, s, "more")
}

func TestConvertDoesNotCountCPUTwice(t *testing.T) {
	// A Go pprof CPU profile has samples/count and cpu/nanoseconds; as OTLP
	// it becomes two profiles of one scope. Only the second is CPU time.
	b := otlpbuild.New()
	st := b.Stack(b.Location(0, 0, "", otlpbuild.Line{Function: b.Function("f", "", "", 0)}))
	sp := otlpbuild.Scope(b.Resource("service.name", "go-app"), "pprof", "")
	for _, vt := range [][2]string{{"samples", "count"}, {"cpu", "nanoseconds"}} {
		v := int64(3)
		if vt[0] == "cpu" {
			v = 30_000_000
		}
		sp.Profiles = append(sp.Profiles, &pb.Profile{
			SampleType: b.ValueType(vt[0], vt[1]), PeriodType: b.ValueType("cpu", "nanoseconds"), Period: 10_000_000,
			TimeUnixNano: t0, Samples: []*pb.Sample{{StackIndex: st, Values: []int64{v}}},
		})
	}
	res, err := Convert(b.Request(), testOptions())
	require.NoError(t, err)
	got := map[string]int64{}
	for _, s := range res.Batch.Samples {
		got[s.Meta.ProfileType] += s.Value
	}
	require.Equal(t, map[string]int64{
		"process_cpu:samples:count:cpu:nanoseconds":   3,
		"process_cpu:cpu:nanoseconds:cpu:nanoseconds": 30_000_000,
	}, got)
}

// TestConvertKeepsMappingPlacement checks that an unsymbolized frame
// carries its mapping's memory start and file offset (what the query needs
// to turn the address into the executable's virtual address), that a
// symbolized frame of the same mapping carries none, and that the
// placement is not part of the frame's id.
func TestConvertKeepsMappingPlacement(t *testing.T) {
	type want struct{ start, offset uint64 }
	for _, tc := range []struct {
		name                 string
		start, limit, offset uint64
		withMapping          bool
		withFunction         bool
		want                 want
	}{
		{name: "pie executable, runtime address", start: 0x55d0c0a00000, limit: 0x55d0c0a42000, offset: 0x1000, withMapping: true, want: want{0x55d0c0a00000, 0x1000}},
		{name: "shared library at offset 0", start: 0x7f0000000000, limit: 0x7f0000200000, withMapping: true, want: want{0x7f0000000000, 0}},
		{name: "mapping without placement", withMapping: true},
		{name: "no mapping", withMapping: false},
		{name: "symbolized frame", start: 0x400000, limit: 0x800000, offset: 0x1000, withMapping: true, withFunction: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := map[bool]uint64{}
			for _, shifted := range []bool{false, true} {
				b := otlpbuild.New()
				var m int32
				if tc.withMapping {
					start, limit := tc.start, tc.limit
					if shifted && limit != 0 { // the same binary and address, placed elsewhere
						start, limit = start+0x10000, limit+0x10000
					}
					m = b.Mapping(start, limit, tc.offset, "/usr/lib/libdemo.so", "b1d0")
				}
				var lines []otlpbuild.Line
				if tc.withFunction {
					lines = append(lines, otlpbuild.Line{Function: b.Function("demo", "", "demo.c", 1), Line: 3})
				}
				loc := b.Location(m, 0x7f0000012345, "native", lines...)
				rp := b.Resource("service.name", "demo")
				sp := otlpbuild.Scope(rp, "test", "1")
				sp.Profiles = append(sp.Profiles, &pb.Profile{
					SampleType: b.ValueType("samples", "count"), TimeUnixNano: t0, DurationNano: 1e9,
					Samples: []*pb.Sample{{StackIndex: b.Stack(loc), Values: []int64{1}}},
				})
				res, err := Convert(b.Request(), testOptions())
				require.NoError(t, err)
				require.Empty(t, res.Rejected)
				sym := res.Batch.Symbols[model.ServiceKey{Tenant: "acme", Service: "demo"}]
				require.NotNil(t, sym)
				require.Len(t, sym.Frames, 1)
				f := sym.Frames[0]
				ids[shifted] = f.ID
				if shifted {
					continue
				}
				require.Equal(t, tc.want, want{f.MappingStart, f.MappingOffset})
				if !tc.withFunction {
					require.Equal(t, uint64(0x7f0000012345), f.Address)
				}
			}
			require.Equal(t, ids[false], ids[true], "the placement is not part of the frame id")
		})
	}
}

// TestResultOutlivesItsDecoder: Protobuf decodes into pooled tables that
// the next conversions reuse; a result refers to its payload only, so it
// is the same after other requests went through the pool.
// smallReports is the generator's shape of the pooling tests' requests.
func smallReports() profilegen.Config {
	cfg := profilegen.DefaultConfig()
	cfg.SamplesPerSecond, cfg.Pods, cfg.Stacks = 50, 3, 300
	return cfg
}

// convertGenerated converts the report of a generator of cfg and seed
// through Protobuf.
func convertGenerated(t *testing.T, cfg profilegen.Config, seed uint64) *Result {
	t.Helper()
	cfg.Seed = seed
	payload, err := proto.Marshal(profilegen.New(cfg).Report(time.Unix(1_700_000_000, 0)))
	require.NoError(t, err)
	res, err := Protobuf(payload, testOptions())
	require.NoError(t, err)
	return res
}

func TestResultOutlivesItsDecoder(t *testing.T) {
	convertSeed := func(seed uint64) *Result { return convertGenerated(t, smallReports(), seed) }
	first := convertSeed(1)
	want, err := json.Marshal(toGolden(t, first.Batch))
	require.NoError(t, err)
	for seed := uint64(2); seed < 10; seed++ {
		convertSeed(seed)
	}
	got, err := json.Marshal(toGolden(t, first.Batch))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
	require.NotEqual(t, string(want), func() string {
		b, err := json.Marshal(toGolden(t, convertSeed(2).Batch))
		require.NoError(t, err)
		return string(b)
	}(), "the requests differ")
}

// TestReleasedArraysServeLaterConversions: a released result's arrays go
// to the next conversions, which come out as they do from fresh memory;
// a result that is not released keeps its own.
func TestReleasedArraysServeLaterConversions(t *testing.T) {
	small := smallReports()
	big := small // more locations and stacks than any small request
	big.Pods, big.Stacks = 6, 3000
	convert := func(cfg profilegen.Config, seed uint64) *Result { return convertGenerated(t, cfg, seed) }
	golden := func(res *Result) string {
		b, err := json.Marshal(toGolden(t, res.Batch))
		require.NoError(t, err)
		return string(b)
	}
	want := map[uint64]string{}
	for seed := uint64(1); seed < 8; seed++ {
		want[seed] = golden(convert(small, seed)) // never released: fresh arrays
	}
	held := convert(small, 1)
	for round := range 3 {
		for seed := uint64(2); seed < 8; seed++ {
			// A larger request released just before: the conversion gets
			// arrays whose every entry another request used.
			convert(big, seed+100).Release()
			res := convert(small, seed)
			require.JSONEq(t, want[seed], golden(res), "round %d, seed %d", round, seed)
			res.Release()
			require.Nil(t, res.Batch.Symbols, "a released batch keeps no symbols")
		}
	}
	require.JSONEq(t, want[1], golden(held))
}
