package otlpwire

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Wire builders: each returns the encoding of one field.

func cat(fields ...[]byte) []byte {
	var out []byte
	for _, f := range fields {
		out = append(out, f...)
	}
	return out
}

func varintField(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func fixed64Field(num protowire.Number, v uint64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
}

func fixed32Field(num protowire.Number, v uint32) []byte {
	return protowire.AppendFixed32(protowire.AppendTag(nil, num, protowire.Fixed32Type), v)
}

func bytesField(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

func strField(num protowire.Number, s string) []byte { return bytesField(num, []byte(s)) }

// msgField encodes a message field whose content is the given fields.
func msgField(num protowire.Number, fields ...[]byte) []byte { return bytesField(num, cat(fields...)) }

func groupField(num protowire.Number, fields ...[]byte) []byte {
	b := protowire.AppendTag(nil, num, protowire.StartGroupType)
	b = append(b, cat(fields...)...)
	return protowire.AppendTag(b, num, protowire.EndGroupType)
}

func packedVarints(num protowire.Number, vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = protowire.AppendVarint(b, v)
	}
	return bytesField(num, b)
}

// packedTimestamps encodes Sample.timestamps_unix_nano, packed.
func packedTimestamps(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = protowire.AppendFixed64(b, v)
	}
	return bytesField(5, b)
}

// Paths into a request, as message builders.

func inDictionary(fields ...[]byte) []byte { return msgField(2, fields...) }

func inResourceProfiles(fields ...[]byte) []byte { return msgField(1, fields...) }

func inScopeProfiles(fields ...[]byte) []byte { return inResourceProfiles(msgField(2, fields...)) }

func inProfile(fields ...[]byte) []byte { return inScopeProfiles(msgField(2, fields...)) }

func inSample(fields ...[]byte) []byte { return inProfile(msgField(2, fields...)) }

// inResourceAttr puts fields in the first KeyValue of the resource.
func inResourceAttr(fields ...[]byte) []byte {
	return inResourceProfiles(msgField(1, msgField(1, fields...)))
}

// inAttrValue puts fields in the AnyValue of the first dictionary attribute.
func inAttrValue(fields ...[]byte) []byte { return inDictionary(msgField(6, msgField(2, fields...))) }

var unknownVarint = varintField(99, 1)

// unknownPaths lists the messages of r that have their Unknown flag set.
func unknownPaths(r *Request) []string {
	var out []string
	add := func(unknown bool, format string, args ...any) {
		if unknown {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	var anyValue func(v AnyValue, path string)
	keyValues := func(kvs []KeyValue, path string) {
		for i, kv := range kvs {
			add(kv.Unknown, "%s[%d]", path, i)
			anyValue(kv.Value, fmt.Sprintf("%s[%d].value", path, i))
		}
	}
	anyValue = func(v AnyValue, path string) {
		add(v.Unknown, "%s", path)
		for i, e := range v.Array {
			anyValue(e, fmt.Sprintf("%s.array[%d]", path, i))
		}
		keyValues(v.Kvlist, path+".kvlist")
	}
	add(r.Unknown, "request")
	for i, rp := range r.Resources {
		p := fmt.Sprintf("resource_profiles[%d]", i)
		add(rp.Unknown, "%s", p)
		add(rp.Resource.Unknown, "%s.resource", p)
		keyValues(rp.Resource.Attributes, p+".resource.attributes")
		for j, sp := range rp.Scopes {
			p := fmt.Sprintf("%s.scope_profiles[%d]", p, j)
			add(sp.Unknown, "%s", p)
			add(sp.Scope.Unknown, "%s.scope", p)
			keyValues(sp.Scope.Attributes, p+".scope.attributes")
			for k, prof := range sp.Profiles {
				p := fmt.Sprintf("%s.profiles[%d]", p, k)
				add(prof.Unknown, "%s", p)
				add(prof.SampleType.Unknown, "%s.sample_type", p)
				add(prof.PeriodType.Unknown, "%s.period_type", p)
				for l, s := range prof.Samples {
					add(s.Unknown, "%s.samples[%d]", p, l)
				}
			}
		}
	}
	d := &r.Dictionary
	add(d.Unknown, "dictionary")
	for i, m := range d.Mappings {
		add(m.Unknown, "dictionary.mapping_table[%d]", i)
	}
	for i, l := range d.Locations {
		add(l.Unknown, "dictionary.location_table[%d]", i)
		for j, line := range r.LineSlice(l.Lines) {
			add(line.Unknown, "dictionary.location_table[%d].lines[%d]", i, j)
		}
	}
	for i, f := range d.Functions {
		add(f.Unknown, "dictionary.function_table[%d]", i)
	}
	for i, l := range d.Links {
		add(l.Unknown, "dictionary.link_table[%d]", i)
	}
	for i, a := range d.Attributes {
		add(a.Unknown, "dictionary.attribute_table[%d]", i)
		anyValue(a.Value, fmt.Sprintf("dictionary.attribute_table[%d].value", i))
	}
	for i, s := range d.Stacks {
		add(s.Unknown, "dictionary.stack_table[%d]", i)
	}
	return out
}

func TestUnknownFields(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		want    []string
	}{
		{"none", cat(inSample(varintField(1, 1)), inDictionary(strField(5, ""))), nil},
		{"request", cat(unknownVarint, inDictionary()), []string{"request"}},
		{"dictionary", inDictionary(unknownVarint), []string{"dictionary"}},
		{"mapping", inDictionary(msgField(1, unknownVarint)), []string{"dictionary.mapping_table[0]"}},
		{"location", inDictionary(msgField(2, msgField(3), unknownVarint)), []string{"dictionary.location_table[0]"}},
		{"line", inDictionary(msgField(2, msgField(3), msgField(3, unknownVarint))), []string{"dictionary.location_table[0].lines[1]"}},
		{"function", inDictionary(msgField(3, unknownVarint)), []string{"dictionary.function_table[0]"}},
		{"link", inDictionary(msgField(4, unknownVarint)), []string{"dictionary.link_table[0]"}},
		{"attribute", inDictionary(msgField(6, unknownVarint)), []string{"dictionary.attribute_table[0]"}},
		{"attribute value", inAttrValue(unknownVarint), []string{"dictionary.attribute_table[0].value"}},
		{"stack", inDictionary(msgField(7, unknownVarint)), []string{"dictionary.stack_table[0]"}},
		{"resource_profiles", inResourceProfiles(unknownVarint), []string{"resource_profiles[0]"}},
		{"resource", inResourceProfiles(msgField(1, unknownVarint)), []string{"resource_profiles[0].resource"}},
		{"resource attribute", inResourceAttr(unknownVarint), []string{"resource_profiles[0].resource.attributes[0]"}},
		{"resource attribute value", inResourceAttr(msgField(2, unknownVarint)), []string{"resource_profiles[0].resource.attributes[0].value"}},
		{"array wrapper", inAttrValue(msgField(5, unknownVarint)), []string{"dictionary.attribute_table[0].value"}},
		{"array element", inAttrValue(msgField(5, msgField(1, unknownVarint))), []string{"dictionary.attribute_table[0].value.array[0]"}},
		{"kvlist wrapper", inAttrValue(msgField(6, unknownVarint)), []string{"dictionary.attribute_table[0].value"}},
		{"kvlist element", inAttrValue(msgField(6, msgField(1, unknownVarint))), []string{"dictionary.attribute_table[0].value.kvlist[0]"}},
		{"kvlist element value", inAttrValue(msgField(6, msgField(1, msgField(2, unknownVarint)))), []string{"dictionary.attribute_table[0].value.kvlist[0].value"}},
		{"entity ref is not reported", inResourceProfiles(msgField(1, msgField(3, unknownVarint))), nil},
		{"scope_profiles", inScopeProfiles(unknownVarint), []string{"resource_profiles[0].scope_profiles[0]"}},
		{"scope", inScopeProfiles(msgField(1, unknownVarint)), []string{"resource_profiles[0].scope_profiles[0].scope"}},
		{"scope attribute", inScopeProfiles(msgField(1, msgField(3, unknownVarint))), []string{"resource_profiles[0].scope_profiles[0].scope.attributes[0]"}},
		{"profile", inProfile(unknownVarint), []string{"resource_profiles[0].scope_profiles[0].profiles[0]"}},
		{"sample_type", inProfile(msgField(1, unknownVarint)), []string{"resource_profiles[0].scope_profiles[0].profiles[0].sample_type"}},
		{"period_type", inProfile(msgField(5, unknownVarint)), []string{"resource_profiles[0].scope_profiles[0].profiles[0].period_type"}},
		{"sample", inSample(unknownVarint), []string{"resource_profiles[0].scope_profiles[0].profiles[0].samples[0]"}},

		// Other kinds of unknown fields.
		{"unknown fixed64", inSample(fixed64Field(20, 1)), []string{"resource_profiles[0].scope_profiles[0].profiles[0].samples[0]"}},
		{"unknown fixed32", inSample(fixed32Field(20, 1)), []string{"resource_profiles[0].scope_profiles[0].profiles[0].samples[0]"}},
		{"unknown bytes", inSample(strField(20, "\xff")), []string{"resource_profiles[0].scope_profiles[0].profiles[0].samples[0]"}},
		{"unknown group", inSample(groupField(20, varintField(1, 1), groupField(2))), []string{"resource_profiles[0].scope_profiles[0].profiles[0].samples[0]"}},
		{"group of a known field", inSample(groupField(1)), []string{"resource_profiles[0].scope_profiles[0].profiles[0].samples[0]"}},
		{"largest field number", inDictionary(varintField(protowire.MaxValidNumber, 1)), []string{"dictionary"}},

		// A known field with another wire type is unknown.
		{"varint as fixed64", inSample(fixed64Field(1, 1)), []string{"resource_profiles[0].scope_profiles[0].profiles[0].samples[0]"}},
		{"fixed64 as varint", inProfile(varintField(3, 1)), []string{"resource_profiles[0].scope_profiles[0].profiles[0]"}},
		{"message as varint", inProfile(varintField(2, 1)), []string{"resource_profiles[0].scope_profiles[0].profiles[0]"}},
		{"string as varint", inDictionary(varintField(5, 1)), []string{"dictionary"}},
		{"singular varint as bytes", inDictionary(msgField(1, bytesField(1, []byte{1}))), []string{"dictionary.mapping_table[0]"}},
		{"packed fixed64 as varint", inSample(varintField(5, 1)), []string{"resource_profiles[0].scope_profiles[0].profiles[0].samples[0]"}},
		{"packed varint as fixed64", inSample(fixed64Field(2, 1)), []string{"resource_profiles[0].scope_profiles[0].profiles[0].samples[0]"}},
		{"oneof string as varint", inAttrValue(varintField(1, 1)), []string{"dictionary.attribute_table[0].value"}},
		{"oneof double as varint", inAttrValue(varintField(4, 1)), []string{"dictionary.attribute_table[0].value"}},
		{"invalid UTF-8 in an unknown-typed string", inDictionary(fixed32Field(5, 0xffffffff)), []string{"dictionary"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := requireSameAsProto(t, tt.payload)
			require.NotNil(t, r)
			require.Equal(t, tt.want, unknownPaths(r))
		})
	}
}

func TestPackedAndUnpacked(t *testing.T) {
	// Each case encodes a repeated field as packed, unpacked and mixed; all
	// decode to the same values, without unknown fields.
	int32s := func(r *Request, get func(*Request) Span) []uint64 {
		var out []uint64
		for _, v := range r.Int32Slice(get(r)) {
			out = append(out, uint64(v))
		}
		return out
	}
	sample := func(r *Request) *Sample { return &r.Resources[0].Scopes[0].Profiles[0].Samples[0] }
	values := []uint64{1, 300, 0, 1 << 20}
	tests := []struct {
		name string
		wrap func(...[]byte) []byte
		num  protowire.Number
		get  func(*Request) []uint64
	}{
		{"sample attribute_indices", inSample, 2, func(r *Request) []uint64 {
			return int32s(r, func(r *Request) Span { return sample(r).AttributeIndices })
		}},
		{"sample values", inSample, 4, func(r *Request) []uint64 {
			var out []uint64
			for _, v := range r.Int64Slice(sample(r).Values) {
				out = append(out, uint64(v))
			}
			return out
		}},
		{"profile attribute_indices", inProfile, 11, func(r *Request) []uint64 {
			return int32s(r, func(r *Request) Span { return r.Resources[0].Scopes[0].Profiles[0].AttributeIndices })
		}},
		{"mapping attribute_indices", func(f ...[]byte) []byte { return inDictionary(msgField(1, f...)) }, 5, func(r *Request) []uint64 {
			return int32s(r, func(r *Request) Span { return r.Dictionary.Mappings[0].AttributeIndices })
		}},
		{"location attribute_indices", func(f ...[]byte) []byte { return inDictionary(msgField(2, f...)) }, 4, func(r *Request) []uint64 {
			return int32s(r, func(r *Request) Span { return r.Dictionary.Locations[0].AttributeIndices })
		}},
		{"stack location_indices", func(f ...[]byte) []byte { return inDictionary(msgField(7, f...)) }, 1, func(r *Request) []uint64 {
			return int32s(r, func(r *Request) Span { return r.Dictionary.Stacks[0].LocationIndices })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var unpacked [][]byte
			for _, v := range values {
				unpacked = append(unpacked, varintField(tt.num, v))
			}
			encodings := map[string][]byte{
				"packed":   tt.wrap(packedVarints(tt.num, values...)),
				"unpacked": tt.wrap(unpacked...),
				"mixed":    tt.wrap(packedVarints(tt.num, values[0]), unpacked[1], packedVarints(tt.num), packedVarints(tt.num, values[2:]...)),
			}
			for name, payload := range encodings {
				r := requireSameAsProto(t, payload)
				require.Equal(t, values, tt.get(r), name)
				require.Empty(t, unknownPaths(r), name)
			}
		})
	}
	t.Run("sample timestamps_unix_nano", func(t *testing.T) {
		ts := []uint64{1, 2, math.MaxUint64}
		for name, payload := range map[string][]byte{
			"packed":   inSample(packedTimestamps(ts...)),
			"unpacked": inSample(fixed64Field(5, ts[0]), fixed64Field(5, ts[1]), fixed64Field(5, ts[2])),
			"mixed":    inSample(packedTimestamps(ts[0]), fixed64Field(5, ts[1]), packedTimestamps(ts[2])),
		} {
			r := requireSameAsProto(t, payload)
			require.Equal(t, ts, r.Uint64Slice(sample(r).TimestampsUnixNano), name)
			require.Empty(t, unknownPaths(r), name)
		}
	})
}

func TestInterleavedRepeatedFields(t *testing.T) {
	// A profile's attribute_indices around samples that have their own, a
	// location's attribute_indices around its lines, and a resource's
	// attributes around a scope's: every list stays whole.
	payload := cat(
		inResourceProfiles(
			msgField(1, msgField(1, strField(1, "a"))),
			msgField(2, msgField(1, msgField(3, strField(1, "x"))),
				msgField(2, packedVarints(11, 1), msgField(2, packedVarints(2, 7, 8)), varintField(11, 2), msgField(2, packedVarints(2, 9)), packedVarints(11, 3))),
			msgField(1, msgField(1, strField(1, "b"))),
		),
		inDictionary(msgField(2, packedVarints(4, 5), msgField(3, varintField(1, 1)), packedVarints(4, 6), msgField(3, varintField(1, 2)))),
	)
	r := requireSameAsProto(t, payload)
	rp := r.Resources[0]
	require.Len(t, rp.Resource.Attributes, 2)
	require.Equal(t, "a", rp.Resource.Attributes[0].Key)
	require.Equal(t, "b", rp.Resource.Attributes[1].Key)
	require.Equal(t, "x", rp.Scopes[0].Scope.Attributes[0].Key)
	p := rp.Scopes[0].Profiles[0]
	require.Equal(t, []int32{1, 2, 3}, r.Int32Slice(p.AttributeIndices))
	require.Equal(t, []int32{7, 8}, r.Int32Slice(p.Samples[0].AttributeIndices))
	require.Equal(t, []int32{9}, r.Int32Slice(p.Samples[1].AttributeIndices))
	loc := r.Dictionary.Locations[0]
	require.Equal(t, []int32{5, 6}, r.Int32Slice(loc.AttributeIndices))
	require.Equal(t, []Line{{FunctionIndex: 1}, {FunctionIndex: 2}}, r.LineSlice(loc.Lines))
}

func TestMerging(t *testing.T) {
	sv := func(s string) []byte { return strField(1, s) }
	tests := []struct {
		name    string
		payload []byte
		check   func(t *testing.T, r *Request)
	}{
		{"dictionary", cat(inDictionary(strField(5, "a")), inDictionary(strField(5, "b"), unknownVarint)), func(t *testing.T, r *Request) {
			require.Equal(t, []string{"a", "b"}, r.Dictionary.Strings)
			require.True(t, r.Dictionary.Unknown)
		}},
		{"resource", inResourceProfiles(
			msgField(1, msgField(1, strField(1, "a")), varintField(2, 1)),
			msgField(1, msgField(1, strField(1, "b")), varintField(2, 2)),
		), func(t *testing.T, r *Request) {
			res := r.Resources[0].Resource
			require.Len(t, res.Attributes, 2)
			require.Equal(t, uint32(2), res.DroppedAttributesCount)
		}},
		{"scope", inScopeProfiles(msgField(1, strField(1, "n")), msgField(1, strField(2, "v"))), func(t *testing.T, r *Request) {
			s := r.Resources[0].Scopes[0].Scope
			require.Equal(t, "n", s.Name)
			require.Equal(t, "v", s.Version)
		}},
		{"sample_type and period_type", inProfile(
			msgField(1, varintField(1, 3)), msgField(5, varintField(2, 4)), msgField(1, varintField(2, 5)), msgField(5, unknownVarint),
		), func(t *testing.T, r *Request) {
			p := r.Resources[0].Scopes[0].Profiles[0]
			require.Equal(t, ValueType{TypeStrindex: 3, UnitStrindex: 5}, p.SampleType)
			require.Equal(t, ValueType{UnitStrindex: 4, Unknown: true}, p.PeriodType)
		}},
		{"scalars: the last wins", inProfile(varintField(6, 1), varintField(6, 2), strField(9, "a"), strField(9, "b")), func(t *testing.T, r *Request) {
			p := r.Resources[0].Scopes[0].Profiles[0]
			require.Equal(t, int64(2), p.Period)
			require.Equal(t, "b", p.OriginalPayloadFormat)
		}},
		{"keyvalue value", inResourceAttr(msgField(2, sv("a")), msgField(2, varintField(3, 7))), func(t *testing.T, r *Request) {
			require.Equal(t, AnyValue{Kind: KindInt, Int: 7}, r.Resources[0].Resource.Attributes[0].Value)
		}},
		{"keyvalueandunit value", inDictionary(msgField(6, msgField(2, msgField(5, msgField(1, sv("a")))), msgField(2, msgField(5, msgField(1, sv("b")))))), func(t *testing.T, r *Request) {
			require.Equal(t, AnyValue{Kind: KindArray, Array: []AnyValue{{Kind: KindString, Str: "a"}, {Kind: KindString, Str: "b"}}}, r.Dictionary.Attributes[0].Value)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := requireSameAsProto(t, tt.payload)
			tt.check(t, r)
		})
	}
}

func TestAnyValueOneof(t *testing.T) {
	sv := func(s string) []byte { return strField(1, s) }
	arr := func(fields ...[]byte) []byte { return msgField(5, fields...) }
	kvl := func(fields ...[]byte) []byte { return msgField(6, fields...) }
	elem := func(fields ...[]byte) []byte { return msgField(1, fields...) }
	tests := []struct {
		name   string
		fields [][]byte
		want   AnyValue
	}{
		{"empty", nil, AnyValue{}},
		{"string", [][]byte{sv("a")}, AnyValue{Kind: KindString, Str: "a"}},
		{"bool", [][]byte{varintField(2, 2)}, AnyValue{Kind: KindBool, Bool: true}},
		{"int", [][]byte{varintField(3, math.MaxUint64)}, AnyValue{Kind: KindInt, Int: -1}},
		{"double", [][]byte{fixed64Field(4, math.Float64bits(1.5))}, AnyValue{Kind: KindDouble, Double: 1.5}},
		{"bytes", [][]byte{bytesField(7, []byte{0xff})}, AnyValue{Kind: KindBytes, Bytes: []byte{0xff}}},
		{"empty bytes", [][]byte{bytesField(7, nil)}, AnyValue{Kind: KindBytes, Bytes: []byte{}}},
		{"strindex", [][]byte{varintField(8, 1<<32+5)}, AnyValue{Kind: KindStringStrindex, Strindex: 5}},
		{"empty array", [][]byte{arr()}, AnyValue{Kind: KindArray}},
		{"empty kvlist", [][]byte{kvl()}, AnyValue{Kind: KindKvlist}},
		{"string then int", [][]byte{sv("a"), varintField(3, 1)}, AnyValue{Kind: KindInt, Int: 1}},
		{"int then int", [][]byte{varintField(3, 1), varintField(3, 2)}, AnyValue{Kind: KindInt, Int: 2}},
		{"array then string", [][]byte{arr(elem(sv("x"))), sv("a")}, AnyValue{Kind: KindString, Str: "a"}},
		{"array then array merge", [][]byte{arr(elem(sv("x"))), arr(elem(sv("y")))}, AnyValue{Kind: KindArray, Array: []AnyValue{{Kind: KindString, Str: "x"}, {Kind: KindString, Str: "y"}}}},
		{"array, string, array", [][]byte{arr(elem(sv("x"))), sv("a"), arr(elem(sv("y")))}, AnyValue{Kind: KindArray, Array: []AnyValue{{Kind: KindString, Str: "y"}}}},
		{"kvlist then array", [][]byte{kvl(elem(strField(1, "k"))), arr()}, AnyValue{Kind: KindArray}},
		{"kvlist merge", [][]byte{kvl(elem(strField(1, "k"))), kvl(elem(strField(1, "l")))}, AnyValue{Kind: KindKvlist, Kvlist: []KeyValue{{Key: "k"}, {Key: "l"}}}},
		{"unknown wrapper replaced", [][]byte{arr(unknownVarint), sv("a")}, AnyValue{Kind: KindString, Str: "a"}},
		{"unknown wrapper merged", [][]byte{arr(unknownVarint), arr()}, AnyValue{Kind: KindArray, Unknown: true}},
		{"own unknown stays", [][]byte{unknownVarint, arr(), sv("a")}, AnyValue{Kind: KindString, Str: "a", Unknown: true}},
		{"wrong wire type keeps the member", [][]byte{sv("a"), varintField(1, 1)}, AnyValue{Kind: KindString, Str: "a", Unknown: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Once as one AnyValue, once split over two occurrences of the
			// value field, which merge.
			r := requireSameAsProto(t, inAttrValue(tt.fields...))
			require.Equal(t, tt.want, r.Dictionary.Attributes[0].Value)
			if len(tt.fields) > 1 {
				split := inDictionary(msgField(6, msgField(2, tt.fields[0]), msgField(2, tt.fields[1:]...)))
				r := requireSameAsProto(t, split)
				require.Equal(t, tt.want, r.Dictionary.Attributes[0].Value)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	bad := "\xff\xfe"
	tests := []struct {
		name    string
		payload []byte
		err     string // a substring of the error
	}{
		{"field number 0", []byte{0x00, 0x01}, "invalid field number"},
		{"field number 0, overlong tag", []byte{0x80, 0x00, 0x01}, "invalid field number"},
		{"field number too large", varintField(protowire.MaxValidNumber+1, 1), "invalid field number"},
		{"field number 0 in a sample", inSample([]byte{0x00, 0x01}), "samples[0]: invalid field number"},
		{"truncated tag", []byte{0x80}, "unexpected EOF"},
		{"truncated varint", []byte{0x08, 0x80}, "unexpected EOF"},
		{"varint overflow", cat([]byte{0x08}, []byte(strings.Repeat("\xff", 9)), []byte{0x02}), "overflow"},
		{"truncated length", []byte{0x0a, 0x05, 0x00}, "unexpected EOF"},
		{"truncated fixed64", inSample([]byte{0x29, 1, 2, 3}), "unexpected EOF"},
		{"truncated fixed32", []byte{0x0d, 1, 2, 3}, "unexpected EOF"},
		{"length past the end in a message", inProfile([]byte{0x12, 0x10, 0x08}), "unexpected EOF"},
		{"stray end group", protowire.AppendTag(nil, 5, protowire.EndGroupType), ""},
		{"unterminated group", protowire.AppendTag(nil, 5, protowire.StartGroupType), "unexpected EOF"},
		{"mismatched end group", cat(protowire.AppendTag(nil, 5, protowire.StartGroupType), protowire.AppendTag(nil, 6, protowire.EndGroupType)), ""},
		{"reserved wire type 6", []byte{0x0e}, ""},
		{"reserved wire type 7 on a known field", inSample([]byte{0x0f}), ""},
		{"truncated packed varints", inSample(bytesField(2, []byte{0x80})), "samples[0].attribute_indices: unexpected EOF"},
		{"packed fixed64 of 7 bytes", inSample(bytesField(5, make([]byte, 7))), "timestamps_unix_nano"},
		{"UTF-8: string_table", inDictionary(strField(5, "ok"), strField(5, bad)), "dictionary.string_table[1]: invalid UTF-8"},
		{"UTF-8: resource schema_url", inResourceProfiles(strField(3, bad)), "resource_profiles[0].schema_url"},
		{"UTF-8: resource attribute key", inResourceAttr(strField(1, bad)), "resource_profiles[0].resource.attributes[0].key"},
		{"UTF-8: string_value", inResourceAttr(msgField(2, strField(1, bad))), "attributes[0].value.string_value"},
		{
			"UTF-8: nested", inAttrValue(msgField(6, msgField(1, msgField(2, msgField(5, msgField(1, strField(1, bad))))))),
			"dictionary.attribute_table[0].value.kvlist_value.values[0].value.array_value.values[0].string_value: invalid UTF-8",
		},
		{"UTF-8: entity ref schema_url", inResourceProfiles(msgField(1, msgField(3, strField(1, bad)))), "entity_refs[0].schema_url"},
		{"UTF-8: entity ref type", inResourceProfiles(msgField(1, msgField(3, strField(2, bad)))), "entity_refs[0].type"},
		{"UTF-8: entity ref id_keys", inResourceProfiles(msgField(1, msgField(3), msgField(3, strField(3, "a"), strField(3, bad)))), "entity_refs[1].id_keys"},
		{"UTF-8: entity ref description_keys", inResourceProfiles(msgField(1, msgField(3, strField(4, bad)))), "entity_refs[0].description_keys"},
		{"UTF-8: scope name", inScopeProfiles(msgField(1, strField(1, bad))), "scope.name"},
		{"UTF-8: scope version", inScopeProfiles(msgField(1, strField(2, bad))), "scope.version"},
		{"UTF-8: scope attribute", inScopeProfiles(msgField(1, msgField(3, strField(1, bad)))), "scope.attributes[0].key"},
		{"UTF-8: scope schema_url", inScopeProfiles(strField(3, bad)), "scope_profiles[0].schema_url"},
		{"UTF-8: original_payload_format", inProfile(strField(9, bad)), "profiles[0].original_payload_format"},
		{"UTF-8: surrogate", inDictionary(strField(5, "\xed\xa0\x80")), "invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Nil(t, requireSameAsProto(t, tt.payload))
			_, err := Decode(tt.payload)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestBytesAreNotValidated(t *testing.T) {
	bad := []byte{0xff}
	payload := cat(
		inProfile(bytesField(7, bad), bytesField(10, bad)),
		inDictionary(msgField(4, bytesField(1, bad), bytesField(2, bad)), msgField(6, msgField(2, bytesField(7, bad)))),
	)
	r := requireSameAsProto(t, payload)
	require.Equal(t, bad, r.Dictionary.Links[0].TraceID)
	require.Equal(t, bad, r.Resources[0].Scopes[0].Profiles[0].OriginalPayload)
	// Byte slices alias the payload but cannot be appended into it.
	id := r.Resources[0].Scopes[0].Profiles[0].ProfileID
	require.Equal(t, len(id), cap(id))
}

func TestTruncations(t *testing.T) {
	// Every prefix of a request that uses every field: Decode fails exactly
	// when proto.Unmarshal does, and agrees with it otherwise.
	full, err := proto.Marshal(fullRequest())
	require.NoError(t, err)
	for n := range full {
		requireSameAsProto(t, full[:n])
	}
}

// nested returns a request whose first dictionary attribute's value nests
// arrays so that the innermost AnyValue is at the given depth (the request
// is at depth 1, the attribute's AnyValue at 4).
func nested(depth int) []byte {
	// Inside out: the innermost AnyValue, then alternately an ArrayValue
	// holding it and an AnyValue holding that.
	msg := strField(1, "leaf")
	for d := depth; d > 4; d -= 2 {
		msg = msgField(5, msgField(1, msg)) // AnyValue(d-2){array_value: ArrayValue(d-1){values: AnyValue(d)}}
	}
	return inAttrValue(msg)
}

func TestRecursionLimit(t *testing.T) {
	for _, depth := range []int{maxDepth - 4, maxDepth - 2, maxDepth, maxDepth + 2, maxDepth + 4} {
		t.Run(strconv.Itoa(depth), func(t *testing.T) {
			payload := nested(depth)
			r := requireSameAsProto(t, payload)
			if depth <= maxDepth {
				require.NotNil(t, r)
			} else {
				require.Nil(t, r)
				_, err := Decode(payload)
				require.ErrorContains(t, err, "exceeded maximum recursion depth")
				require.Less(t, len(err.Error()), 2000, "a short message for deep paths")
			}
		})
	}
	// Through kvlists too: AnyValue > KeyValueList > KeyValue > AnyValue.
	msg := strField(1, "leaf")
	for range maxDepth / 3 {
		msg = msgField(6, msgField(1, msgField(2, msg)))
	}
	require.Nil(t, requireSameAsProto(t, inAttrValue(msg)))
}

func TestInterleavingStaysLinear(t *testing.T) {
	// Lists that interleave with nested lists of the same array are not
	// moved around (which a crafted payload could make quadratic): the
	// shared arrays hold each value once.
	const n = 20000
	var profile, rp [][]byte
	for i := range n {
		profile = append(profile, varintField(11, uint64(i)), msgField(2, varintField(2, 1)))
		rp = append(rp, msgField(1, msgField(1, strField(1, "r"))), msgField(2, msgField(1, msgField(3, strField(1, "s")))))
	}
	r := requireSameAsProto(t, cat(inScopeProfiles(msgField(2, profile...)), inResourceProfiles(rp...)))
	require.Len(t, r.Int32s, 2*n)
	p := r.Resources[0].Scopes[0].Profiles[0]
	require.Equal(t, int32(n-1), r.Int32Slice(p.AttributeIndices)[n-1])
	require.Len(t, r.Resources[1].Resource.Attributes, n)
	require.Len(t, r.Resources[1].Scopes, n)
}
