// Package otlpwire decodes OTLP profiles export requests
// (opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest,
// profiles v0.4.0) straight from the protobuf wire format into flat tables,
// as a fast, allocation-light replacement for proto.Unmarshal into the
// generated structs on the ingest path.
//
// Decoding is zero-copy: strings and byte slices in a Request alias the
// payload, so the payload must stay unmodified while the Request, or any
// string or slice taken from it, is in use. Repeated scalar fields and
// location lines live in a few shared arrays of the Request (Int32s, Int64s,
// Uint64s, Lines) that Spans index; the dictionary tables and the samples of
// all profiles are plain slices sized by a cheap counting pass, so the number
// of allocations does not grow with the number of samples or table entries.
//
// Decode accepts and rejects exactly what proto.Unmarshal does, and it
// records unknown fields (including known field numbers with an unexpected
// wire type, and groups) per message: every decoded message has an Unknown
// flag that is set exactly when the corresponding generated message would
// hold unknown fields. Consumers use it to reject payloads of older,
// renumbered schema versions.
package otlpwire

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Decode parses an ExportProfilesServiceRequest. Strings and byte slices in
// the result alias payload: the caller must not modify payload while the
// Request (or strings taken from it) is in use. It returns an error exactly
// when proto.Unmarshal would (malformed wire data, invalid UTF-8 in a proto3
// string field, invalid field number, nesting deeper than protobuf-go's
// recursion limit).
func Decode(payload []byte) (*Request, error) {
	return new(Decoder).Decode(payload)
}

// A Decoder decodes requests into tables that it keeps for the next one,
// so that a stream of similar requests allocates them once. The Request
// that Decode returns is valid until the Decoder's next Decode or Reset.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	d decoder
}

// Decode is the package's Decode into the Decoder's tables.
func (dec *Decoder) Decode(payload []byte) (*Request, error) {
	if uint64(len(payload)) > math.MaxUint32 {
		return nil, errors.New("otlpwire: payloads of 4 GiB and more are not supported")
	}
	// Sub-slices of the payload keep their capacity up to its end, so that
	// the reader may load 8 bytes at a time near the end of a field; it
	// never reads past the payload's length.
	payload = payload[:len(payload):len(payload)]
	var c counts
	c.request(payload)
	dec.Reset()
	d := &dec.d
	d.init(&c)
	if err := d.request(payload); err != nil {
		return nil, fmt.Errorf("otlpwire: decode ExportProfilesServiceRequest: %w", err)
	}
	return &d.r, nil
}

// Reset forgets the last request: its tables are cleared (their strings
// and byte slices alias its payload, which the Decoder must not keep
// alive) and keep their capacity.
func (dec *Decoder) Reset() {
	d := &dec.d
	d.r.Reset()
	d.scopes, d.profiles, d.samples = clearTable(d.scopes), clearTable(d.profiles), clearTable(d.samples)
	d.resAttrs, d.scopeAttrs, d.pending = clearTable(d.resAttrs), clearTable(d.scopeAttrs), d.pending[:0]
}

// Reset empties a Request for reuse: every table is cleared (strings and
// byte slices alias what the Request was filled from) and keeps its
// capacity, and the Unknown flags are unset.
func (r *Request) Reset() {
	*r = Request{
		Resources: clearTable(r.Resources), Int32s: r.Int32s[:0], Int64s: r.Int64s[:0], Uint64s: r.Uint64s[:0],
		Lines: clearTable(r.Lines),
		Dictionary: Dictionary{
			Mappings: clearTable(r.Dictionary.Mappings), Locations: clearTable(r.Dictionary.Locations),
			Functions: clearTable(r.Dictionary.Functions), Links: clearTable(r.Dictionary.Links),
			Strings: clearTable(r.Dictionary.Strings), Attributes: clearTable(r.Dictionary.Attributes),
			Stacks: clearTable(r.Dictionary.Stacks),
		},
	}
}

// Table returns a table of n zero elements, in s's array when it is large
// enough (for filling a Request that Reset emptied), else in a new one.
func Table[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// clearTable zeroes a table's elements and empties it, keeping its
// capacity.
func clearTable[T any](s []T) []T {
	clear(s)
	return s[:0]
}

// decoder holds the Request being decoded and the backing arrays that the
// per-message lists of scopes, profiles, samples and attributes share.
//
// A list grows by appending to the end of its backing array (see extend and
// toTail), so while it grows nothing else may append to that array. That
// holds because no message nests a message whose lists share a backing
// array with its own, with one exception: a profile's attribute_indices
// and its samples' share Int32s, so the profile's collect in pending first.
// (Were it otherwise, interleaved lists would have to move, and a crafted
// payload could make decoding quadratic.)
type decoder struct {
	r          Request
	scopes     []ScopeProfiles
	profiles   []Profile
	samples    []Sample
	resAttrs   []KeyValue // resource attributes
	scopeAttrs []KeyValue // scope attributes
	pending    []int32    // the attribute_indices of the profile being decoded
}

// init gives every table and shared array (empty, as Reset left them)
// at least its counted capacity.
func (d *decoder) init(c *counts) {
	d.scopes = sized(d.scopes, c.scopes)
	d.profiles = sized(d.profiles, c.profiles)
	d.samples = sized(d.samples, c.samples)
	d.resAttrs = sized(d.resAttrs, c.resAttrs)
	d.scopeAttrs = sized(d.scopeAttrs, c.scopeAttrs)
	r := &d.r
	r.Resources = sized(r.Resources, c.resources)
	r.Int32s = sized(r.Int32s, c.int32s)
	r.Int64s = sized(r.Int64s, c.int64s)
	r.Uint64s = sized(r.Uint64s, c.uint64s)
	r.Lines = sized(r.Lines, c.lines)
	t := &r.Dictionary
	t.Mappings = sized(t.Mappings, c.mappings)
	t.Locations = sized(t.Locations, c.locations)
	t.Functions = sized(t.Functions, c.functions)
	t.Links = sized(t.Links, c.links)
	t.Strings = sized(t.Strings, c.strings)
	t.Attributes = sized(t.Attributes, c.attributes)
	t.Stacks = sized(t.Stacks, c.stacks)
}

// sized returns an empty table of at least n elements' capacity: s when
// it has it, else a new one.
func sized[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:0]
	}
	return make([]T, 0, n)
}

// request decodes the ExportProfilesServiceRequest message (depth 1).
func (d *decoder) request(b []byte) error {
	r := &d.r
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // resource_profiles
			r.Resources = append(r.Resources, ResourceProfiles{})
			i := len(r.Resources) - 1
			if err := d.resourceProfiles(v, &r.Resources[i]); err != nil {
				return within("resource_profiles", i, err)
			}
		case 2<<3 | wireBytes: // dictionary
			if err := d.dictionary(v, &r.Dictionary); err != nil {
				return within("dictionary", -1, err)
			}
		default:
			r.Unknown = true
		}
	}
	return nil
}

// fieldError is a decoding error with the path of the field it occurred in,
// such as resource_profiles[2].scope_profiles[0].profiles[1].samples[7].
type fieldError struct {
	segs []string // innermost first
	err  error
}

// elide is how many path segments an error message keeps at either end of
// a very long (deeply nested) path.
const elide = 12

func (e *fieldError) Error() string {
	var sb strings.Builder
	for i := len(e.segs) - 1; i >= 0; i-- {
		if i == len(e.segs)-1-elide && i > elide {
			sb.WriteString("(…).")
			i = elide
		}
		sb.WriteString(e.segs[i])
		if i > 0 {
			sb.WriteByte('.')
		}
	}
	return sb.String() + ": " + e.err.Error()
}

func (e *fieldError) Unwrap() error { return e.err }

// within adds the field that contains err's field to the error's path; i is
// the element index for repeated fields, -1 for singular ones.
func within(field string, i int, err error) error {
	if i >= 0 {
		field += "[" + strconv.Itoa(i) + "]"
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		fe.segs = append(fe.segs, field)
		return fe
	}
	return &fieldError{segs: []string{field}, err: err}
}
