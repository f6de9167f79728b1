package otlpwire

import (
	"encoding/binary"
	"math/bits"
)

// counts are the sizes of a Request's tables and shared arrays, found by a
// first pass over the payload that only reads tags and lengths (and counts
// the varints in packed fields). Decode allocates everything at these sizes,
// so that well-formed input needs no growth. The counts are only capacity
// hints: the counting pass stops at malformed data, and the decoding pass
// appends and validates.
type counts struct {
	resources, scopes, profiles, samples, resAttrs, scopeAttrs         int
	mappings, locations, functions, links, strings, attributes, stacks int
	int32s, int64s, uint64s, lines                                     int
}

// request counts an ExportProfilesServiceRequest.
func (c *counts) request(b []byte) {
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return
		}
		switch tag {
		case 1<<3 | wireBytes:
			c.resources++
			c.resourceProfiles(v)
		case 2<<3 | wireBytes:
			c.dictionary(v)
		}
	}
}

// resourceProfiles counts a ResourceProfiles message.
func (c *counts) resourceProfiles(b []byte) {
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return
		}
		switch tag {
		case 1<<3 | wireBytes: // resource
			c.resAttrs += c.occurrences(v, 1<<3|wireBytes)
		case 2<<3 | wireBytes: // scope_profiles
			c.scopes++
			c.scopeProfiles(v)
		}
	}
}

// scopeProfiles counts a ScopeProfiles message.
func (c *counts) scopeProfiles(b []byte) {
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return
		}
		switch tag {
		case 1<<3 | wireBytes: // scope
			c.scopeAttrs += c.occurrences(v, 3<<3|wireBytes)
		case 2<<3 | wireBytes: // profiles
			c.profiles++
			c.profile(v)
		}
	}
}

// profile counts a Profile message.
func (c *counts) profile(b []byte) {
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return
		}
		switch tag {
		case 2<<3 | wireBytes: // samples
			c.samples++
			c.sample(v)
		case 11<<3 | wireBytes: // attribute_indices, packed
			c.int32s += countVarints(v)
		case 11<<3 | wireVarint:
			c.int32s++
		}
	}
}

// sample counts a Sample message. Samples are the bulk of a request, so the
// common shape (one-byte tags of known fields, payloads under 128 bytes) is
// handled inline, without decoding varints; anything else goes to
// sampleFields.
func (c *counts) sample(b []byte) {
	for i := 0; i < len(b); {
		switch t := uint64(b[i]); t {
		case 1<<3 | wireVarint, 3<<3 | wireVarint: // stack_index, link_index
			i = skipVarint(b, i+1)
			continue
		case 2<<3 | wireBytes, 4<<3 | wireBytes, 5<<3 | wireBytes:
			if i+1 < len(b) && b[i+1] < 0x80 && i+2+int(b[i+1]) <= len(b) {
				v := b[i+2 : i+2+int(b[i+1])]
				switch t {
				case 2<<3 | wireBytes:
					c.int32s += countVarints(v)
				case 4<<3 | wireBytes:
					c.int64s += countVarints(v)
				default:
					c.uint64s += len(v) / 8
				}
				i += 2 + len(v)
				continue
			}
		}
		c.sampleFields(b[i:])
		return
	}
}

// sampleFields counts the fields of a Sample message.
func (c *counts) sampleFields(b []byte) {
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return
		}
		switch tag {
		case 2<<3 | wireBytes: // attribute_indices, packed
			c.int32s += countVarints(v)
		case 2<<3 | wireVarint:
			c.int32s++
		case 4<<3 | wireBytes: // values, packed
			c.int64s += countVarints(v)
		case 4<<3 | wireVarint:
			c.int64s++
		case 5<<3 | wireBytes: // timestamps_unix_nano, packed
			c.uint64s += len(v) / 8
		case 5<<3 | wireFixed64:
			c.uint64s++
		}
	}
}

// skipVarint returns the offset after the varint at b[i:] (past len(b) if
// it is unterminated).
func skipVarint(b []byte, i int) int {
	if i+8 <= cap(b) { // see reader.next
		if stop := ^binary.LittleEndian.Uint64(b[i:i+8]) & 0x8080808080808080; stop != 0 {
			return i + bits.TrailingZeros64(stop)>>3 + 1
		}
	}
	for i < len(b) && b[i] >= 0x80 {
		i++
	}
	return i + 1
}

// dictionary counts a ProfilesDictionary message.
func (c *counts) dictionary(b []byte) {
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return
		}
		switch tag {
		case 1<<3 | wireBytes: // mapping_table
			c.mappings++
			c.int32s += c.packed(v, 5)
		case 2<<3 | wireBytes: // location_table
			c.locations++
			c.location(v)
		case 3<<3 | wireBytes:
			c.functions++
		case 4<<3 | wireBytes:
			c.links++
		case 5<<3 | wireBytes:
			c.strings++
		case 6<<3 | wireBytes:
			c.attributes++
		case 7<<3 | wireBytes: // stack_table
			c.stacks++
			c.int32s += c.packed(v, 1)
		}
	}
}

// location counts a Location message.
func (c *counts) location(b []byte) {
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return
		}
		switch tag {
		case 3<<3 | wireBytes: // lines
			c.lines++
		case 4<<3 | wireBytes: // attribute_indices, packed
			c.int32s += countVarints(v)
		case 4<<3 | wireVarint:
			c.int32s++
		}
	}
}

// occurrences counts the fields of message b with the given tag.
func (*counts) occurrences(b []byte, tag uint64) int {
	n := 0
	for rd := (reader{b: b}); rd.more(); {
		t, _, _, err := rd.next()
		if err != nil {
			break
		}
		if t == tag {
			n++
		}
	}
	return n
}

// packed counts the elements of repeated varint field num of message b,
// packed or not.
func (*counts) packed(b []byte, num uint64) int {
	n := 0
	for rd := (reader{b: b}); rd.more(); {
		t, _, v, err := rd.next()
		if err != nil {
			break
		}
		switch t {
		case num<<3 | wireBytes:
			n += countVarints(v)
		case num<<3 | wireVarint:
			n++
		}
	}
	return n
}
