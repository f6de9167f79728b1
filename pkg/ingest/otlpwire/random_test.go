package otlpwire

import (
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// A grammar-based generator of ExportProfilesServiceRequest encodings that
// mixes the known fields of every message with repeated singular fields
// (which merge or replace), packed and unpacked repeated fields, oneof
// members in any order, unknown fields and groups, known fields with another
// wire type, and now and then invalid UTF-8 or a truncation.

type fieldKind uint8

const (
	kindVarint fieldKind = iota
	kindFixed64
	kindBytes
	kindString
	kindMessage
	kindPackedVarint
	kindPackedFixed64
)

type fieldSpec struct {
	num  protowire.Number
	kind fieldKind
	msg  string // for kindMessage
}

func fields(kind fieldKind, nums ...protowire.Number) []fieldSpec {
	var out []fieldSpec
	for _, n := range nums {
		out = append(out, fieldSpec{num: n, kind: kind})
	}
	return out
}

func msgSpec(num protowire.Number, msg string) fieldSpec {
	return fieldSpec{num: num, kind: kindMessage, msg: msg}
}

func join(parts ...[]fieldSpec) []fieldSpec {
	var out []fieldSpec
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func msgs(specs ...fieldSpec) []fieldSpec { return specs }

var schema = map[string][]fieldSpec{
	"request":           msgs(msgSpec(1, "resource_profiles"), msgSpec(2, "dictionary")),
	"resource_profiles": join(msgs(msgSpec(1, "resource"), msgSpec(2, "scope_profiles")), fields(kindString, 3)),
	"resource":          join(msgs(msgSpec(1, "key_value"), msgSpec(3, "entity_ref")), fields(kindVarint, 2)),
	"entity_ref":        fields(kindString, 1, 2, 3, 4),
	"scope_profiles":    join(msgs(msgSpec(1, "scope"), msgSpec(2, "profile")), fields(kindString, 3)),
	"scope":             join(fields(kindString, 1, 2), msgs(msgSpec(3, "key_value")), fields(kindVarint, 4)),
	"profile": join(
		msgs(msgSpec(1, "value_type"), msgSpec(2, "sample"), msgSpec(5, "value_type"), msgSpec(2, "sample")),
		fields(kindFixed64, 3), fields(kindVarint, 4, 6, 8), fields(kindBytes, 7, 10), fields(kindString, 9),
		fields(kindPackedVarint, 11),
	),
	"value_type": fields(kindVarint, 1, 2),
	"sample":     join(fields(kindVarint, 1, 3), fields(kindPackedVarint, 2, 4), fields(kindPackedFixed64, 5)),
	"dictionary": join(msgs(
		msgSpec(1, "mapping"), msgSpec(2, "location"), msgSpec(3, "function"), msgSpec(4, "link"),
		msgSpec(6, "key_value_and_unit"), msgSpec(7, "stack"),
	), fields(kindString, 5)),
	"mapping":            join(fields(kindVarint, 1, 2, 3, 4), fields(kindPackedVarint, 5)),
	"location":           join(fields(kindVarint, 1, 2), msgs(msgSpec(3, "line")), fields(kindPackedVarint, 4)),
	"line":               fields(kindVarint, 1, 2, 3),
	"function":           fields(kindVarint, 1, 2, 3, 4),
	"link":               fields(kindBytes, 1, 2),
	"key_value_and_unit": join(fields(kindVarint, 1, 3), msgs(msgSpec(2, "any_value"))),
	"stack":              fields(kindPackedVarint, 1),
	"key_value":          join(fields(kindString, 1), msgs(msgSpec(2, "any_value")), fields(kindVarint, 3)),
	"any_value": join(fields(kindString, 1), fields(kindVarint, 2, 3, 8), fields(kindFixed64, 4),
		msgs(msgSpec(5, "array_value"), msgSpec(6, "kvlist_value")), fields(kindBytes, 7)),
	"array_value":  msgs(msgSpec(1, "any_value")),
	"kvlist_value": msgs(msgSpec(1, "key_value")),
}

type generator struct{ rng *rand.Rand }

func (g generator) varint() uint64 {
	switch g.rng.IntN(6) {
	case 0:
		return uint64(g.rng.IntN(128))
	case 1:
		return uint64(g.rng.IntN(1 << 14))
	case 2:
		return g.rng.Uint64() // up to 10 bytes
	case 3:
		return uint64(g.rng.Int64N(1<<31)) - 1<<31 // a negative int32 as int64
	default:
		return g.rng.Uint64N(1 << (7 * (1 + g.rng.IntN(8))))
	}
}

func (g generator) text() []byte {
	words := []string{"", "a", "cpu", "héllo ✓", "nanoseconds", "worker-1"}
	s := []byte(words[g.rng.IntN(len(words))])
	if g.rng.IntN(100) == 0 {
		s = append(s, 0xff) // invalid UTF-8
	}
	return s
}

// message encodes a message of the given schema type.
func (g generator) message(name string, depth int) []byte {
	var out []byte
	specs := schema[name]
	var n int
	switch {
	case depth <= 5: // down to samples and dictionary entries' fields
		n = 1 + g.rng.IntN(4)
	case depth <= 8:
		n = g.rng.IntN(4)
	default:
		n = g.rng.IntN(2)
	}
	for range n {
		switch g.rng.IntN(20) {
		case 0: // an unknown field
			out = g.unknown(out, protowire.Number(20+g.rng.IntN(5)))
		case 1: // a known field with any wire type
			out = g.unknown(out, specs[g.rng.IntN(len(specs))].num)
		default:
			out = g.field(out, specs[g.rng.IntN(len(specs))], depth)
		}
	}
	return out
}

func (g generator) unknown(out []byte, num protowire.Number) []byte {
	switch g.rng.IntN(5) {
	case 0:
		return protowire.AppendVarint(protowire.AppendTag(out, num, protowire.VarintType), g.varint())
	case 1:
		return protowire.AppendFixed64(protowire.AppendTag(out, num, protowire.Fixed64Type), g.rng.Uint64())
	case 2:
		return protowire.AppendFixed32(protowire.AppendTag(out, num, protowire.Fixed32Type), g.rng.Uint32())
	case 3:
		return protowire.AppendBytes(protowire.AppendTag(out, num, protowire.BytesType), g.text())
	default:
		return append(out, groupField(num, varintField(1, g.varint()))...)
	}
}

func (g generator) field(out []byte, f fieldSpec, depth int) []byte {
	switch f.kind {
	case kindVarint:
		return protowire.AppendVarint(protowire.AppendTag(out, f.num, protowire.VarintType), g.varint())
	case kindFixed64:
		return protowire.AppendFixed64(protowire.AppendTag(out, f.num, protowire.Fixed64Type), g.rng.Uint64())
	case kindBytes:
		return protowire.AppendBytes(protowire.AppendTag(out, f.num, protowire.BytesType), []byte{byte(g.rng.IntN(256))})
	case kindString:
		return protowire.AppendBytes(protowire.AppendTag(out, f.num, protowire.BytesType), g.text())
	case kindMessage:
		return protowire.AppendBytes(protowire.AppendTag(out, f.num, protowire.BytesType), g.message(f.msg, depth+1))
	case kindPackedVarint:
		if g.rng.IntN(3) == 0 {
			return protowire.AppendVarint(protowire.AppendTag(out, f.num, protowire.VarintType), g.varint())
		}
		var vs []uint64
		for range g.rng.IntN(4) {
			vs = append(vs, g.varint())
		}
		return append(out, packedVarints(f.num, vs...)...)
	default: // kindPackedFixed64
		if g.rng.IntN(3) == 0 {
			return protowire.AppendFixed64(protowire.AppendTag(out, f.num, protowire.Fixed64Type), g.rng.Uint64())
		}
		var b []byte
		for range g.rng.IntN(3) {
			b = protowire.AppendFixed64(b, g.rng.Uint64())
		}
		return protowire.AppendBytes(protowire.AppendTag(out, f.num, protowire.BytesType), b)
	}
}

// request returns a random request encoding, truncated now and then.
func (g generator) request() []byte {
	b := g.message("request", 1)
	if len(b) > 0 && g.rng.IntN(20) == 0 {
		b = b[:g.rng.IntN(len(b))]
	}
	return b
}

func TestRandomRequests(t *testing.T) {
	n := 20000 // a few seconds under the race detector; FuzzDecode explores further
	if testing.Short() {
		n = 2000
	}
	g := generator{rng: rand.New(rand.NewPCG(7, 11))}
	for i := range n {
		payload := g.request()
		if !sameAsProto(payload) {
			t.Logf("case %d: %q", i, payload)
			requireSameAsProto(t, payload) // reports the difference
		}
	}
}
