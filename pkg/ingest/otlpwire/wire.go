package otlpwire

import (
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// Wire types as they appear in the low three bits of a tag. A decoder
// switches on the whole tag (number<<3 | wire type), so a known field
// number that arrives with another wire type falls through to the
// unknown-field case, as it does in protobuf-go.
const (
	wireVarint  = uint64(protowire.VarintType)
	wireFixed64 = uint64(protowire.Fixed64Type)
	wireBytes   = uint64(protowire.BytesType)
)

// maxDepth is protobuf-go's default recursion limit: proto.Unmarshal fails
// on a message nested more deeply than this (the request is at depth 1).
const maxDepth = protowire.DefaultRecursionLimit

var (
	errInvalidUTF8  = errors.New("invalid UTF-8")
	errFieldNumber  = errors.New("invalid field number")
	errDepth        = errors.New("exceeded maximum recursion depth")
	errFixed64Align = errors.New("packed fixed64 length is not a multiple of 8")
)

// reader walks the fields of one message, b, whose capacity reaches the end
// of the payload (see Decode).
type reader struct {
	b []byte
	i int // the offset of the next field
}

// more reports whether fields remain.
func (r *reader) more() bool { return r.i < len(r.b) }

// next parses the next field; more must be true. tag is number<<3 | wire
// type. A varint or fixed64 field's value is in x; a length-delimited
// field's payload is in v (aliasing the input). Fixed32 fields and groups
// are consumed whole (they are always unknown fields here). The errors are
// those of proto.Unmarshal: malformed data, field numbers outside
// [1, 2^29-1], unexpected end-group markers and reserved wire types.
//
// next itself handles the most common fields: a one-byte tag of field
// 1-15 and a varint value or length of one or two bytes.
func (r *reader) next() (tag, x uint64, v []byte, err error) {
	if b, i := r.b, r.i; i+2 < len(b) {
		t := uint64(b[i])
		x, n := uint64(b[i+1]), 2
		if x >= 0x80 {
			x, n = x&0x7f|uint64(b[i+2])<<7, 3
		}
		if x < 1<<14 && t >= 1<<3 && t < 0x80 && t&5 == 0 {
			end := i + n
			if t&7 == wireBytes {
				end += int(x)
			}
			if end <= len(b) {
				r.i = end
				return t, x, b[i+n : end], nil
			}
		}
	}
	return r.nextWord()
}

// nextWord is next for longer varints.
func (r *reader) nextWord() (tag, x uint64, v []byte, err error) {
	// A one-byte tag of field 1-15 and a varint value or length of up to 7
	// bytes, decoded without branches from one 8-byte load. The load may run
	// past the message but stays within its capacity, that is, within the
	// payload; bytes past the field are not used.
	b, i := r.b, r.i
	if i+8 <= cap(b) {
		w := binary.LittleEndian.Uint64(b[i : i+8])
		tag = w & 0xff
		stop := ^w & 0x8080808080808000 // the high bits of bytes that end a varint
		if tag >= 1<<3 && tag < 0x80 && tag&5 == 0 && stop != 0 {
			// Varint (0) or length-delimited (2) field.
			l := bits.TrailingZeros64(stop) + 1 // bits up to the end of the value
			x = packVarint(w&lowBits(l)>>8, l > 40)
			start := i + l>>3
			end := start
			if tag&7 == wireBytes {
				end += int(x)
			}
			if end <= len(b) {
				r.i = end
				return tag, x, b[start:end], nil
			}
		}
	}
	return r.nextSlow()
}

// packVarint packs the 7-bit groups of a little-endian varint of up to 8
// bytes whose continuation bits are still set: pairwise into 14 bits per
// 16-bit lane, then 28 bits per 32-bit lane, then (when long, that is, over
// 4 bytes) 56 bits.
func packVarint(w uint64, long bool) uint64 {
	w &= 0x7f7f7f7f7f7f7f7f
	w = w&0x007f007f007f007f | w>>1&0x3f803f803f803f80
	w = w&0x00003fff00003fff | w>>2&0x0fffc0000fffc000
	if long {
		w = w&0x000000000fffffff | w>>4&0x00ffffff_f0000000
	}
	return w
}

// lowBits is a mask of the low l bits, 1 <= l <= 64.
func lowBits(l int) uint64 { return ^uint64(0) >> uint((64-l)&63) }

// nextSlow is next for any field.
func (r *reader) nextSlow() (tag, x uint64, v []byte, err error) {
	b := r.b[r.i:]
	var n int
	if tag, n = uvarint(b); n < 0 {
		return 0, 0, nil, protowire.ParseError(n)
	}
	if num := tag >> 3; num == 0 || num > uint64(protowire.MaxValidNumber) {
		return 0, 0, nil, errFieldNumber
	}
	b = b[n:]
	r.i += n
	switch tag & 7 {
	case wireVarint:
		x, n = uvarint(b)
	case wireBytes:
		v, n = protowire.ConsumeBytes(b)
	case wireFixed64:
		if len(b) < 8 {
			return 0, 0, nil, io.ErrUnexpectedEOF
		}
		x, n = binary.LittleEndian.Uint64(b), 8
	default: // fixed32, groups, stray end-group markers, reserved types
		n = protowire.ConsumeFieldValue(protowire.Number(tag>>3), protowire.Type(tag&7), b)
	}
	if n < 0 {
		return 0, 0, nil, protowire.ParseError(n)
	}
	r.i += n
	return tag, x, v, nil
}

// uvarint decodes a varint with a fast path for one byte.
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return protowire.ConsumeVarint(b)
}

// str returns b as a string without copying. Strings alias the payload.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b)) //nolint:gosec // G103: the payload is immutable while the Request is in use (see Decode)
}

// utf8Str validates a proto3 string field and returns it aliased.
func utf8Str(b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", errInvalidUTF8
	}
	return str(b), nil
}

// countVarints counts the varints in packed data: the bytes that end one.
// It is exact for well-formed data (protobuf-go sizes slices the same way).
func countVarints(b []byte) int {
	n := 0
	for len(b) >= 8 {
		n += 8 - bits.OnesCount64(binary.LittleEndian.Uint64(b)&0x8080808080808080)
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// appendVarints decodes packed varints onto arr, keeping the low bits as
// protobuf-go does for int32 and int64 fields.
func appendVarints[T int32 | int64](arr []T, b []byte) ([]T, error) {
	for i := 0; i < len(b); {
		// Indices and counts mostly take one or two bytes.
		if c := uint64(b[i]); c < 0x80 {
			arr = append(arr, T(c))
			i++
			continue
		} else if i+1 < len(b) && b[i+1] < 0x80 {
			arr = append(arr, T(c&0x7f|uint64(b[i+1])<<7))
			i += 2
			continue
		}
		if i+8 <= cap(b) { // see reader.nextWord
			w := binary.LittleEndian.Uint64(b[i : i+8])
			if stop := ^w & 0x8080808080808080; stop != 0 {
				l := bits.TrailingZeros64(stop) + 1
				if i+l>>3 <= len(b) {
					arr = append(arr, T(packVarint(w&lowBits(l), l > 32)))
					i += l >> 3
					continue
				}
			}
		}
		x, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return arr, protowire.ParseError(n)
		}
		arr = append(arr, T(x))
		i += n
	}
	return arr, nil
}

// appendFixed64s decodes packed fixed64 values onto arr.
func appendFixed64s(arr []uint64, b []byte) ([]uint64, error) {
	if len(b)%8 != 0 {
		return arr, errFixed64Align
	}
	for ; len(b) >= 8; b = b[8:] {
		arr = append(arr, binary.LittleEndian.Uint64(b))
	}
	return arr, nil
}

// toTail prepares span s of arr for appending. A span grows only while it
// is at the end of arr (see decoder); should it not be, it is copied there
// first, which keeps the result correct.
func toTail[T any](arr []T, s *Span) []T {
	switch {
	case s.Len == 0:
		s.Off = u32(len(arr))
	case int(s.Off)+int(s.Len) != len(arr):
		arr = append(arr, arr[s.Off:s.Off+s.Len]...)
		s.Off = u32(len(arr)) - s.Len
	}
	return arr
}

// extend appends a zero element to list, a slice of the shared backing array
// *arr, and returns the longer list. Lists of one message type (the samples
// of every profile, say) share one allocation. A list grows only while it is
// at the end of *arr (see decoder); should it not be, it is copied there
// first, which keeps the result correct.
func extend[T any](arr *[]T, list []T) []T {
	a := *arr
	if len(list) > 0 && (len(a) == 0 || &list[len(list)-1] != &a[len(a)-1]) {
		a = append(a, list...)
	}
	var zero T
	a = append(a, zero)
	*arr = a
	n := len(list) + 1
	return a[len(a)-n : len(a) : len(a)]
}

// u32 converts a length below 4 GiB (Decode rejects larger payloads, and
// every array holds fewer elements than the payload has bytes).
func u32(n int) uint32 { return uint32(n) }

// i32 keeps the low 32 bits of a varint, as protobuf-go does for int32.
func i32(x uint64) int32 { return int32(x) }

// i64 reinterprets a varint as int64, as protobuf-go does for int64.
func i64(x uint64) int64 { return int64(x) }

// low32 keeps the low 32 bits of a varint, as protobuf-go does for uint32.
func low32(x uint64) uint32 { return uint32(x) }
