package otlpwire

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// requireSameAsProto checks Decode against proto.Unmarshal on one input:
// both fail or neither does, and then the content and every message's
// Unknown flag agree. It returns the decoded request (nil on error).
func requireSameAsProto(t testing.TB, payload []byte) *Request {
	t.Helper()
	var msg collectorpb.ExportProfilesServiceRequest
	protoErr := proto.Unmarshal(payload, &msg)
	got, err := Decode(payload)
	reusedMu.Lock()
	defer reusedMu.Unlock()
	again, againErr := reused.Decode(payload)
	if protoErr != nil {
		require.Error(t, err, "proto.Unmarshal fails with %v", protoErr)
		require.Nil(t, got)
		require.Error(t, againErr, "a reused Decoder")
		return nil
	}
	require.NoError(t, err)
	want := normalize(fromProto(&msg))
	require.Equal(t, want, normalize(got))
	require.NoError(t, againErr, "a reused Decoder")
	require.Equal(t, want, normalize(again), "a Decoder that decoded other requests before")
	return got
}

// reused is a Decoder that every request of the tests goes through after
// the one before, so that what a Decoder keeps between requests is
// checked against fresh decodes.
var (
	reused   Decoder
	reusedMu sync.Mutex
)

// sameAsProto is requireSameAsProto as a predicate.
func sameAsProto(payload []byte) bool {
	var msg collectorpb.ExportProfilesServiceRequest
	protoErr := proto.Unmarshal(payload, &msg)
	got, err := Decode(payload)
	reusedMu.Lock()
	defer reusedMu.Unlock()
	again, againErr := reused.Decode(payload)
	if protoErr != nil || err != nil || againErr != nil {
		return (protoErr != nil) == (err != nil) && (err != nil) == (againErr != nil)
	}
	want := normalize(fromProto(&msg))
	return assert.ObjectsAreEqual(want, normalize(got)) && assert.ObjectsAreEqual(want, normalize(again))
}

func hasUnknown(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) > 0 }

// fromProto converts a generated message to the Request Decode should
// produce for its encoding, with Unknown flags from the generated messages'
// unknown fields.
func fromProto(m *collectorpb.ExportProfilesServiceRequest) *Request {
	r := &Request{Unknown: hasUnknown(m)}
	c := converter{r: r}
	for _, rp := range m.GetResourceProfiles() {
		r.Resources = append(r.Resources, c.resourceProfiles(rp))
	}
	if d := m.GetDictionary(); d != nil {
		r.Dictionary = c.dictionary(d)
	}
	return r
}

type converter struct{ r *Request }

func (c converter) int32s(v []int32) Span {
	s := Span{Off: u32(len(c.r.Int32s)), Len: u32(len(v))}
	c.r.Int32s = append(c.r.Int32s, v...)
	return s
}

func (c converter) resourceProfiles(rp *pb.ResourceProfiles) ResourceProfiles {
	out := ResourceProfiles{Unknown: hasUnknown(rp), SchemaURL: rp.GetSchemaUrl()}
	if res := rp.GetResource(); res != nil {
		out.Resource = Resource{
			Attributes: keyValues(res.GetAttributes()), DroppedAttributesCount: res.GetDroppedAttributesCount(), Unknown: hasUnknown(res),
		}
	}
	for _, sp := range rp.GetScopeProfiles() {
		out.Scopes = append(out.Scopes, c.scopeProfiles(sp))
	}
	return out
}

func (c converter) scopeProfiles(sp *pb.ScopeProfiles) ScopeProfiles {
	out := ScopeProfiles{Unknown: hasUnknown(sp), SchemaURL: sp.GetSchemaUrl()}
	if s := sp.GetScope(); s != nil {
		out.Scope = InstrumentationScope{
			Name: s.GetName(), Version: s.GetVersion(), Attributes: keyValues(s.GetAttributes()),
			DroppedAttributesCount: s.GetDroppedAttributesCount(), Unknown: hasUnknown(s),
		}
	}
	for _, p := range sp.GetProfiles() {
		out.Profiles = append(out.Profiles, c.profile(p))
	}
	return out
}

func (c converter) profile(p *pb.Profile) Profile {
	out := Profile{
		Unknown: hasUnknown(p), SampleType: valueTypeOf(p.GetSampleType()), PeriodType: valueTypeOf(p.GetPeriodType()),
		TimeUnixNano: p.GetTimeUnixNano(), DurationNano: p.GetDurationNano(), Period: p.GetPeriod(), ProfileID: p.GetProfileId(),
		DroppedAttributesCount: p.GetDroppedAttributesCount(), OriginalPayloadFormat: p.GetOriginalPayloadFormat(),
		OriginalPayload: p.GetOriginalPayload(), AttributeIndices: c.int32s(p.GetAttributeIndices()),
	}
	for _, s := range p.GetSamples() {
		smp := Sample{
			StackIndex: s.GetStackIndex(), LinkIndex: s.GetLinkIndex(), AttributeIndices: c.int32s(s.GetAttributeIndices()),
			Values:             Span{Off: u32(len(c.r.Int64s)), Len: u32(len(s.GetValues()))},
			TimestampsUnixNano: Span{Off: u32(len(c.r.Uint64s)), Len: u32(len(s.GetTimestampsUnixNano()))},
			Unknown:            hasUnknown(s),
		}
		c.r.Int64s = append(c.r.Int64s, s.GetValues()...)
		c.r.Uint64s = append(c.r.Uint64s, s.GetTimestampsUnixNano()...)
		out.Samples = append(out.Samples, smp)
	}
	return out
}

func valueTypeOf(vt *pb.ValueType) ValueType {
	if vt == nil {
		return ValueType{}
	}
	return ValueType{TypeStrindex: vt.GetTypeStrindex(), UnitStrindex: vt.GetUnitStrindex(), Unknown: hasUnknown(vt)}
}

func (c converter) dictionary(d *pb.ProfilesDictionary) Dictionary {
	out := Dictionary{Unknown: hasUnknown(d), Strings: d.GetStringTable()}
	for _, m := range d.GetMappingTable() {
		out.Mappings = append(out.Mappings, Mapping{
			MemoryStart: m.GetMemoryStart(), MemoryLimit: m.GetMemoryLimit(), FileOffset: m.GetFileOffset(),
			FilenameStrindex: m.GetFilenameStrindex(), AttributeIndices: c.int32s(m.GetAttributeIndices()), Unknown: hasUnknown(m),
		})
	}
	for _, l := range d.GetLocationTable() {
		loc := Location{MappingIndex: l.GetMappingIndex(), Address: l.GetAddress(), Unknown: hasUnknown(l)}
		loc.Lines = Span{Off: u32(len(c.r.Lines)), Len: u32(len(l.GetLines()))}
		for _, ln := range l.GetLines() {
			c.r.Lines = append(c.r.Lines, Line{FunctionIndex: ln.GetFunctionIndex(), Line: ln.GetLine(), Column: ln.GetColumn(), Unknown: hasUnknown(ln)})
		}
		loc.AttributeIndices = c.int32s(l.GetAttributeIndices())
		out.Locations = append(out.Locations, loc)
	}
	for _, f := range d.GetFunctionTable() {
		out.Functions = append(out.Functions, Function{
			NameStrindex: f.GetNameStrindex(), SystemNameStrindex: f.GetSystemNameStrindex(), FilenameStrindex: f.GetFilenameStrindex(),
			StartLine: f.GetStartLine(), Unknown: hasUnknown(f),
		})
	}
	for _, l := range d.GetLinkTable() {
		out.Links = append(out.Links, Link{TraceID: l.GetTraceId(), SpanID: l.GetSpanId(), Unknown: hasUnknown(l)})
	}
	for _, a := range d.GetAttributeTable() {
		out.Attributes = append(out.Attributes, KeyValueAndUnit{
			KeyStrindex: a.GetKeyStrindex(), Value: anyValueOf(a.GetValue()), UnitStrindex: a.GetUnitStrindex(), Unknown: hasUnknown(a),
		})
	}
	for _, s := range d.GetStackTable() {
		out.Stacks = append(out.Stacks, Stack{LocationIndices: c.int32s(s.GetLocationIndices()), Unknown: hasUnknown(s)})
	}
	return out
}

func keyValues(kvs []*commonpb.KeyValue) []KeyValue {
	var out []KeyValue
	for _, kv := range kvs {
		out = append(out, KeyValue{Key: kv.GetKey(), KeyStrindex: kv.GetKeyStrindex(), Value: anyValueOf(kv.GetValue()), Unknown: hasUnknown(kv)})
	}
	return out
}

func anyValueOf(v *commonpb.AnyValue) AnyValue {
	if v == nil {
		return AnyValue{}
	}
	out := AnyValue{Unknown: hasUnknown(v)}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		out.Kind, out.Str = KindString, x.StringValue
	case *commonpb.AnyValue_BoolValue:
		out.Kind, out.Bool = KindBool, x.BoolValue
	case *commonpb.AnyValue_IntValue:
		out.Kind, out.Int = KindInt, x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		out.Kind, out.Double = KindDouble, x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		out.Kind = KindArray
		if x.ArrayValue != nil {
			out.Unknown = out.Unknown || hasUnknown(x.ArrayValue)
			for _, e := range x.ArrayValue.GetValues() {
				out.Array = append(out.Array, anyValueOf(e))
			}
		}
	case *commonpb.AnyValue_KvlistValue:
		out.Kind = KindKvlist
		if x.KvlistValue != nil {
			out.Unknown = out.Unknown || hasUnknown(x.KvlistValue)
			out.Kvlist = keyValues(x.KvlistValue.GetValues())
		}
	case *commonpb.AnyValue_BytesValue:
		out.Kind, out.Bytes = KindBytes, x.BytesValue
	case *commonpb.AnyValue_StringValueStrindex:
		out.Kind, out.Strindex = KindStringStrindex, x.StringValueStrindex
	}
	return out
}

// normalize returns r in a canonical form for comparison: the shared arrays
// rebuilt in traversal order (so that Spans compare by content), empty
// slices nil, and doubles compared by bits (NaN != NaN otherwise).
func normalize(r *Request) *Request {
	n := normalizer{in: r, out: &Request{Unknown: r.Unknown}}
	for _, rp := range r.Resources {
		n.out.Resources = append(n.out.Resources, n.resourceProfiles(rp))
	}
	n.out.Dictionary = n.dictionary(r.Dictionary)
	return n.out
}

type normalizer struct{ in, out *Request }

func (n normalizer) int32s(s Span) Span {
	v := n.in.Int32Slice(s)
	if len(v) == 0 {
		return Span{}
	}
	out := Span{Off: u32(len(n.out.Int32s)), Len: u32(len(v))}
	n.out.Int32s = append(n.out.Int32s, v...)
	return out
}

func (n normalizer) resourceProfiles(rp ResourceProfiles) ResourceProfiles {
	rp.Resource.Attributes = normKeyValues(rp.Resource.Attributes)
	scopes := rp.Scopes
	rp.Scopes = nil
	for _, sp := range scopes {
		sp.Scope.Attributes = normKeyValues(sp.Scope.Attributes)
		profiles := sp.Profiles
		sp.Profiles = nil
		for _, p := range profiles {
			sp.Profiles = append(sp.Profiles, n.profile(p))
		}
		rp.Scopes = append(rp.Scopes, sp)
	}
	return rp
}

func (n normalizer) profile(p Profile) Profile {
	p.ProfileID, p.OriginalPayload = normBytes(p.ProfileID), normBytes(p.OriginalPayload)
	p.AttributeIndices = n.int32s(p.AttributeIndices)
	samples := p.Samples
	p.Samples = nil
	for _, s := range samples {
		s.AttributeIndices = n.int32s(s.AttributeIndices)
		if v := n.in.Int64Slice(s.Values); len(v) > 0 {
			s.Values = Span{Off: u32(len(n.out.Int64s)), Len: u32(len(v))}
			n.out.Int64s = append(n.out.Int64s, v...)
		} else {
			s.Values = Span{}
		}
		if v := n.in.Uint64Slice(s.TimestampsUnixNano); len(v) > 0 {
			s.TimestampsUnixNano = Span{Off: u32(len(n.out.Uint64s)), Len: u32(len(v))}
			n.out.Uint64s = append(n.out.Uint64s, v...)
		} else {
			s.TimestampsUnixNano = Span{}
		}
		p.Samples = append(p.Samples, s)
	}
	return p
}

func (n normalizer) dictionary(d Dictionary) Dictionary {
	out := Dictionary{Unknown: d.Unknown}
	for _, m := range d.Mappings {
		m.AttributeIndices = n.int32s(m.AttributeIndices)
		out.Mappings = append(out.Mappings, m)
	}
	for _, l := range d.Locations {
		if lines := n.in.LineSlice(l.Lines); len(lines) > 0 {
			l.Lines = Span{Off: u32(len(n.out.Lines)), Len: u32(len(lines))}
			n.out.Lines = append(n.out.Lines, lines...)
		} else {
			l.Lines = Span{}
		}
		l.AttributeIndices = n.int32s(l.AttributeIndices)
		out.Locations = append(out.Locations, l)
	}
	out.Functions = append(out.Functions, d.Functions...)
	for _, l := range d.Links {
		l.TraceID, l.SpanID = normBytes(l.TraceID), normBytes(l.SpanID)
		out.Links = append(out.Links, l)
	}
	out.Strings = append(out.Strings, d.Strings...)
	for _, a := range d.Attributes {
		a.Value = normAnyValue(a.Value)
		out.Attributes = append(out.Attributes, a)
	}
	for _, s := range d.Stacks {
		s.LocationIndices = n.int32s(s.LocationIndices)
		out.Stacks = append(out.Stacks, s)
	}
	return out
}

func normBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func normKeyValues(kvs []KeyValue) []KeyValue {
	var out []KeyValue
	for _, kv := range kvs {
		kv.Value = normAnyValue(kv.Value)
		out = append(out, kv)
	}
	return out
}

func normAnyValue(v AnyValue) AnyValue {
	v.Bytes = normBytes(v.Bytes)
	if v.Kind == KindDouble {
		v.Str = fmt.Sprintf("bits %#x", math.Float64bits(v.Double))
		v.Double = 0
	}
	arr := v.Array
	v.Array = nil
	for _, e := range arr {
		v.Array = append(v.Array, normAnyValue(e))
	}
	v.Kvlist = normKeyValues(v.Kvlist)
	return v
}

// fullRequest returns a request that sets every field of every message.
func fullRequest() *collectorpb.ExportProfilesServiceRequest {
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	nested := &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
		{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
			str("x"),
			{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}},
			{Value: &commonpb.AnyValue_IntValue{IntValue: -7}},
			{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 2.5}},
			{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1}}},
			{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: 3}},
			{},
		}}}}},
		{KeyStrindex: 2, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{}}}},
	}}}}
	return &collectorpb.ExportProfilesServiceRequest{
		ResourceProfiles: []*pb.ResourceProfiles{{
			Resource: &resourcepb.Resource{
				Attributes:             []*commonpb.KeyValue{{Key: "service.name", Value: str("svc")}, {Key: "nested", Value: nested}},
				DroppedAttributesCount: 4,
				EntityRefs:             []*commonpb.EntityRef{{SchemaUrl: "s", Type: "t", IdKeys: []string{"a"}, DescriptionKeys: []string{"b"}}},
			},
			ScopeProfiles: []*pb.ScopeProfiles{{
				Scope: &commonpb.InstrumentationScope{
					Name: "scope", Version: "v1", Attributes: []*commonpb.KeyValue{{Key: "k", Value: str("v")}}, DroppedAttributesCount: 1,
				},
				Profiles: []*pb.Profile{{
					SampleType: &pb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
					Samples: []*pb.Sample{
						{StackIndex: 1, AttributeIndices: []int32{1, 2}, LinkIndex: 1, Values: []int64{-1, 1 << 40}, TimestampsUnixNano: []uint64{1, 2, 3}},
						{StackIndex: 2, Values: []int64{5}},
					},
					TimeUnixNano: 1 << 62, DurationNano: 5e9, PeriodType: &pb.ValueType{TypeStrindex: 3, UnitStrindex: 4}, Period: -10,
					ProfileId: []byte("0123456789abcdef"), DroppedAttributesCount: 2, OriginalPayloadFormat: "pprof",
					OriginalPayload: []byte{1, 2, 3}, AttributeIndices: []int32{0, -1, 1 << 30},
				}},
				SchemaUrl: "https://scope",
			}},
			SchemaUrl: "https://resource",
		}},
		Dictionary: &pb.ProfilesDictionary{
			MappingTable:  []*pb.Mapping{{}, {MemoryStart: 1, MemoryLimit: 2, FileOffset: 3, FilenameStrindex: 4, AttributeIndices: []int32{1}}},
			LocationTable: []*pb.Location{{}, {MappingIndex: 1, Address: 0xffff, Lines: []*pb.Line{{FunctionIndex: 1, Line: 2, Column: 3}, {}}, AttributeIndices: []int32{2, 1}}},
			FunctionTable: []*pb.Function{{}, {NameStrindex: 1, SystemNameStrindex: 2, FilenameStrindex: 3, StartLine: -4}},
			LinkTable:     []*pb.Link{{}, {TraceId: []byte("0123456789abcdef"), SpanId: []byte("01234567")}},
			StringTable:   []string{"", "samples", "count", "cpu", "nanoseconds", "héllo ✓"},
			AttributeTable: []*pb.KeyValueAndUnit{
				{}, {KeyStrindex: 1, Value: str("v"), UnitStrindex: 2}, {KeyStrindex: 2, Value: nested},
			},
			StackTable: []*pb.Stack{{}, {LocationIndices: []int32{1, 1, 1}}},
		},
	}
}
