// Package pdatawire hands the Collector's decoded profiles (pprofile) to
// Flamehouse's conversion without encoding them back to the wire: it fills
// an otlpwire.Request, the form otlpwire.Decode gives the ingest service,
// from pdata's accessors. The conversion after it is the ingest's, so a
// request gives the same rows either way (tested against Decode of
// pprofile's own encoding).
//
// pdata's public API hides a few things that the wire form holds: the
// string_value_strindex member of an AnyValue and a KeyValue's key_strindex
// (both read as empty; pdata resolves those of resource and scope
// attributes that are in range when it decodes), and it accepts what
// Decode refuses (invalid UTF-8, nesting beyond protobuf's recursion limit,
// and entity references, which Decode validates). When a request holds any
// of these, or a map key is empty, Request reports false and the caller
// encodes the request with Encode and decodes it as the ingest service
// does, so every request is still answered as the ingest answers it.
//
// pdata's encoder does not encode pd as it holds it: it moves the strings
// of resource and scope attributes into the string table, appending those
// not there yet (and does so in pd itself unless pd is read-only). A
// request whose string table grew in the encoder would be answered
// differently: an index that was out of range could name an appended
// string, and a rejection names the table's length. Encode's Adjust undoes
// that in the decoding, so that both ways answer the same.
package pdatawire

import (
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"

	"github.com/flamehouse/flamehouse/pkg/ingest/otlpwire"
)

// maxNesting bounds AnyValue nesting taken natively; deeper values go the
// wire way, where Decode applies protobuf's recursion limit.
const maxNesting = 64

// Request returns pd as otlpwire.Decode would return pd's protobuf
// encoding, and true; or false when pd holds something that only the
// encoding shows or that Decode refuses (see the package comment). The
// Request's strings and byte slices alias pd: pd must not change while the
// Request is in use. Its tables come from a pool: hand it to Release once
// it is converted (a conversion's result does not refer to them).
func Request(pd pprofile.Profiles) (*otlpwire.Request, bool) {
	r, _ := requests.Get().(*otlpwire.Request)
	if r == nil {
		r = new(otlpwire.Request)
	}
	b := builder{r: r, ok: true}
	b.sizeArrays(pd)
	b.dictionary(pd.Dictionary())
	rps := pd.ResourceProfiles()
	b.r.Resources = otlpwire.Table(b.r.Resources, rps.Len())
	for i := range rps.Len() {
		b.resourceProfiles(rps.At(i), &b.r.Resources[i])
		if !b.ok {
			break
		}
	}
	if !b.ok {
		Release(r)
		return nil, false
	}
	return b.r, true
}

// requests keeps the tables of converted requests for the next ones: the
// dictionary tables of a node report are its largest allocation here.
var requests sync.Pool

// Release gives a Request that Request returned back to the pool, once
// nothing reads it any more.
func Release(r *otlpwire.Request) {
	r.Reset()
	requests.Put(r)
}

// builder fills a Request; ok turns false at the first thing that must go
// the wire way.
type builder struct {
	r  *otlpwire.Request
	ok bool
}

// sizeArrays allocates the Request's shared arrays at their final size.
func (b *builder) sizeArrays(pd pprofile.Profiles) {
	d := pd.Dictionary()
	var int32s, int64s, uint64s, lines int
	for i, ms := 0, d.MappingTable(); i < ms.Len(); i++ {
		int32s += ms.At(i).AttributeIndices().Len()
	}
	for i, ls := 0, d.LocationTable(); i < ls.Len(); i++ {
		l := ls.At(i)
		int32s += l.AttributeIndices().Len()
		lines += l.Lines().Len()
	}
	for i, ss := 0, d.StackTable(); i < ss.Len(); i++ {
		int32s += ss.At(i).LocationIndices().Len()
	}
	rps := pd.ResourceProfiles()
	for i := range rps.Len() {
		sps := rps.At(i).ScopeProfiles()
		for j := range sps.Len() {
			ps := sps.At(j).Profiles()
			for k := range ps.Len() {
				p := ps.At(k)
				int32s += p.AttributeIndices().Len()
				samples := p.Samples()
				for m := range samples.Len() {
					s := samples.At(m)
					int32s += s.AttributeIndices().Len()
					int64s += s.Values().Len()
					uint64s += s.TimestampsUnixNano().Len()
				}
			}
		}
	}
	b.r.Int32s = otlpwire.Table(b.r.Int32s, int32s)[:0]
	b.r.Int64s = otlpwire.Table(b.r.Int64s, int64s)[:0]
	b.r.Uint64s = otlpwire.Table(b.r.Uint64s, uint64s)[:0]
	b.r.Lines = otlpwire.Table(b.r.Lines, lines)[:0]
}

// int32s appends s to Int32s and returns its span.
func (b *builder) int32s(s pcommon.Int32Slice) otlpwire.Span {
	n := s.Len()
	if n == 0 {
		return otlpwire.Span{}
	}
	off := len(b.r.Int32s)
	for i := range n {
		b.r.Int32s = append(b.r.Int32s, s.At(i))
	}
	return otlpwire.Span{Off: uint32(off), Len: uint32(n)}
}

// str returns s when it is valid UTF-8, as Decode requires of a string.
func (b *builder) str(s string) string {
	if !utf8.ValidString(s) {
		b.ok = false
	}
	return s
}

func (b *builder) dictionary(d pprofile.ProfilesDictionary) {
	t := &b.r.Dictionary
	ms := d.MappingTable()
	t.Mappings = otlpwire.Table(t.Mappings, ms.Len())
	for i := range ms.Len() {
		m := ms.At(i)
		t.Mappings[i] = otlpwire.Mapping{
			MemoryStart: m.MemoryStart(), MemoryLimit: m.MemoryLimit(), FileOffset: m.FileOffset(),
			FilenameStrindex: m.FilenameStrindex(), AttributeIndices: b.int32s(m.AttributeIndices()),
		}
	}
	ls := d.LocationTable()
	t.Locations = otlpwire.Table(t.Locations, ls.Len())
	for i := range ls.Len() {
		l := ls.At(i)
		loc := &t.Locations[i]
		loc.MappingIndex, loc.Address = l.MappingIndex(), l.Address()
		if lines := l.Lines(); lines.Len() > 0 {
			loc.Lines = otlpwire.Span{Off: uint32(len(b.r.Lines)), Len: uint32(lines.Len())}
			for j := range lines.Len() {
				ln := lines.At(j)
				b.r.Lines = append(b.r.Lines, otlpwire.Line{FunctionIndex: ln.FunctionIndex(), Line: ln.Line(), Column: ln.Column()})
			}
		}
		loc.AttributeIndices = b.int32s(l.AttributeIndices())
	}
	fs := d.FunctionTable()
	t.Functions = otlpwire.Table(t.Functions, fs.Len())
	for i := range fs.Len() {
		f := fs.At(i)
		t.Functions[i] = otlpwire.Function{
			NameStrindex: f.NameStrindex(), SystemNameStrindex: f.SystemNameStrindex(),
			FilenameStrindex: f.FilenameStrindex(), StartLine: f.StartLine(),
		}
	}
	links := d.LinkTable()
	t.Links = otlpwire.Table(t.Links, links.Len())
	for i := range links.Len() {
		l := links.At(i)
		if tid := l.TraceID(); !tid.IsEmpty() {
			t.Links[i].TraceID = tid[:]
		}
		if sid := l.SpanID(); !sid.IsEmpty() {
			t.Links[i].SpanID = sid[:]
		}
	}
	ss := d.StringTable()
	t.Strings = otlpwire.Table(t.Strings, ss.Len())
	for i := range ss.Len() {
		t.Strings[i] = b.str(ss.At(i))
	}
	as := d.AttributeTable()
	t.Attributes = otlpwire.Table(t.Attributes, as.Len())
	for i := range as.Len() {
		a := as.At(i)
		t.Attributes[i] = otlpwire.KeyValueAndUnit{KeyStrindex: a.KeyStrindex(), Value: b.anyValue(a.Value(), 1), UnitStrindex: a.UnitStrindex()}
	}
	stacks := d.StackTable()
	t.Stacks = otlpwire.Table(t.Stacks, stacks.Len())
	for i := range stacks.Len() {
		t.Stacks[i].LocationIndices = b.int32s(stacks.At(i).LocationIndices())
	}
}

// anyValue converts v at the given nesting depth. An empty value may be a
// string_value_strindex that pdata does not show: it goes the wire way.
func (b *builder) anyValue(v pcommon.Value, depth int) otlpwire.AnyValue {
	if depth > maxNesting {
		b.ok = false
		return otlpwire.AnyValue{}
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return otlpwire.AnyValue{Kind: otlpwire.KindString, Str: b.str(v.Str())}
	case pcommon.ValueTypeBool:
		return otlpwire.AnyValue{Kind: otlpwire.KindBool, Bool: v.Bool()}
	case pcommon.ValueTypeInt:
		return otlpwire.AnyValue{Kind: otlpwire.KindInt, Int: v.Int()}
	case pcommon.ValueTypeDouble:
		return otlpwire.AnyValue{Kind: otlpwire.KindDouble, Double: v.Double()}
	case pcommon.ValueTypeBytes:
		return otlpwire.AnyValue{Kind: otlpwire.KindBytes, Bytes: v.Bytes().AsRaw()}
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		out := otlpwire.AnyValue{Kind: otlpwire.KindArray}
		if s.Len() > 0 {
			out.Array = make([]otlpwire.AnyValue, s.Len())
			for i := range s.Len() {
				out.Array[i] = b.anyValue(s.At(i), depth+1)
			}
		}
		return out
	case pcommon.ValueTypeMap:
		return otlpwire.AnyValue{Kind: otlpwire.KindKvlist, Kvlist: b.keyValues(v.Map(), depth+1)}
	default:
		if hidesMember(v) {
			b.ok = false
		}
		return otlpwire.AnyValue{}
	}
}

// emptyValueSize is the encoded size of profiles whose dictionary holds
// one attribute with an empty value.
var emptyValueSize = sync.OnceValue(func() int {
	pd := pprofile.NewProfiles()
	pd.Dictionary().AttributeTable().AppendEmpty()
	return (&pprofile.ProtoMarshaler{}).ProfilesSize(pd)
})

// hidesMember reports whether an empty value holds a member that pdata
// does not show (string_value_strindex): its copy encodes larger than an
// empty value. Only empty values pay for the check, mostly the attribute
// table's zero-value sentinel.
func hidesMember(v pcommon.Value) bool {
	pd := pprofile.NewProfiles()
	v.CopyTo(pd.Dictionary().AttributeTable().AppendEmpty().Value())
	return (&pprofile.ProtoMarshaler{}).ProfilesSize(pd) != emptyValueSize()
}

// keyValues converts a map's entries in order. An empty key may be a
// key_strindex that pdata does not show: it goes the wire way.
func (b *builder) keyValues(m pcommon.Map, depth int) []otlpwire.KeyValue {
	if m.Len() == 0 {
		return nil
	}
	out := make([]otlpwire.KeyValue, 0, m.Len())
	for k, v := range m.All() {
		if k == "" {
			b.ok = false
		}
		out = append(out, otlpwire.KeyValue{Key: b.str(k), Value: b.anyValue(v, depth+1)})
	}
	return out
}

func (b *builder) resourceProfiles(rp pprofile.ResourceProfiles, out *otlpwire.ResourceProfiles) {
	res := rp.Resource()
	if entity.ResourceEntityRefs(res).Len() > 0 {
		b.ok = false // Decode validates and drops them
		return
	}
	out.Resource = otlpwire.Resource{Attributes: b.keyValues(res.Attributes(), 1), DroppedAttributesCount: res.DroppedAttributesCount()}
	out.SchemaURL = b.str(rp.SchemaUrl())
	sps := rp.ScopeProfiles()
	if sps.Len() == 0 {
		return
	}
	out.Scopes = make([]otlpwire.ScopeProfiles, sps.Len())
	for i := range sps.Len() {
		b.scopeProfiles(sps.At(i), &out.Scopes[i])
	}
}

func (b *builder) scopeProfiles(sp pprofile.ScopeProfiles, out *otlpwire.ScopeProfiles) {
	sc := sp.Scope()
	out.Scope = otlpwire.InstrumentationScope{
		Name: b.str(sc.Name()), Version: b.str(sc.Version()),
		Attributes: b.keyValues(sc.Attributes(), 1), DroppedAttributesCount: sc.DroppedAttributesCount(),
	}
	out.SchemaURL = b.str(sp.SchemaUrl())
	ps := sp.Profiles()
	if ps.Len() == 0 {
		return
	}
	out.Profiles = make([]otlpwire.Profile, ps.Len())
	for i := range ps.Len() {
		b.profile(ps.At(i), &out.Profiles[i])
	}
}

func (b *builder) profile(p pprofile.Profile, out *otlpwire.Profile) {
	out.SampleType = valueType(p.SampleType())
	out.PeriodType = valueType(p.PeriodType())
	out.TimeUnixNano, out.DurationNano, out.Period = uint64(p.Time()), p.DurationNano(), p.Period()
	if id := p.ProfileID(); !id.IsEmpty() {
		out.ProfileID = id[:]
	}
	out.DroppedAttributesCount = p.DroppedAttributesCount()
	out.OriginalPayloadFormat = b.str(p.OriginalPayloadFormat())
	if op := p.OriginalPayload(); op.Len() > 0 {
		out.OriginalPayload = op.AsRaw()
	}
	samples := p.Samples()
	if samples.Len() > 0 {
		out.Samples = make([]otlpwire.Sample, samples.Len())
	}
	for i := range samples.Len() {
		s := samples.At(i)
		o := &out.Samples[i]
		o.StackIndex, o.LinkIndex = s.StackIndex(), s.LinkIndex()
		o.AttributeIndices = b.int32s(s.AttributeIndices())
		if vs := s.Values(); vs.Len() > 0 {
			o.Values = otlpwire.Span{Off: uint32(len(b.r.Int64s)), Len: uint32(vs.Len())}
			for j := range vs.Len() {
				b.r.Int64s = append(b.r.Int64s, vs.At(j))
			}
		}
		if ts := s.TimestampsUnixNano(); ts.Len() > 0 {
			o.TimestampsUnixNano = otlpwire.Span{Off: uint32(len(b.r.Uint64s)), Len: uint32(ts.Len())}
			for j := range ts.Len() {
				b.r.Uint64s = append(b.r.Uint64s, ts.At(j))
			}
		}
	}
	out.AttributeIndices = b.int32s(p.AttributeIndices())
}

func valueType(vt pprofile.ValueType) otlpwire.ValueType {
	return otlpwire.ValueType{TypeStrindex: vt.TypeStrindex(), UnitStrindex: vt.UnitStrindex()}
}

// Encode returns pd's protobuf encoding for the wire way, and the
// function that undoes in its decoding what the encoder added (see the
// package comment): hand both to the pipeline (pipeline.Request's Payload
// and AdjustDecoded). pd's resource and scope attributes are copied first,
// since the encoder rewrites them when pd is not read-only.
func Encode(pd pprofile.Profiles) (payload []byte, adjust func(*otlpwire.Request)) {
	held := heldAttributes(pd)
	payload, _ = (&pprofile.ProtoMarshaler{}).MarshalProfiles(pd) // it never fails
	return payload, held.restore
}

// attributes is pd's string table length and the resource and scope
// attributes as pdata shows them, in the order they are encoded.
type attributes struct {
	strings int
	maps    []pcommon.Map // per resource: its own, then its scopes'
}

func heldAttributes(pd pprofile.Profiles) *attributes {
	a := &attributes{strings: pd.Dictionary().StringTable().Len()}
	rps := pd.ResourceProfiles()
	for i := range rps.Len() {
		rp := rps.At(i)
		a.maps = append(a.maps, copied(rp.Resource().Attributes()))
		for j, sps := 0, rp.ScopeProfiles(); j < sps.Len(); j++ {
			a.maps = append(a.maps, copied(sps.At(j).Scope().Attributes()))
		}
	}
	return a
}

func copied(m pcommon.Map) pcommon.Map {
	c := pcommon.NewMap()
	m.CopyTo(c)
	return c
}

// restore puts back into r, the decoding of the encoding, the keys and
// string values that the encoder turned into string table references,
// and cuts the string table back to its length in pd. A reference pdata
// kept hidden (its key reads as empty, its value holds no string) is left
// as it came: the sender's own, out of range or not.
func (a *attributes) restore(r *otlpwire.Request) {
	next := 0
	take := func(kvs []otlpwire.KeyValue) {
		if next < len(a.maps) {
			restoreKeyValues(kvs, a.maps[next])
		}
		next++
	}
	for i := range r.Resources {
		rp := &r.Resources[i]
		take(rp.Resource.Attributes)
		for j := range rp.Scopes {
			take(rp.Scopes[j].Scope.Attributes)
		}
	}
	if len(r.Dictionary.Strings) > a.strings {
		r.Dictionary.Strings = r.Dictionary.Strings[:a.strings]
	}
}

func restoreKeyValues(kvs []otlpwire.KeyValue, m pcommon.Map) {
	if len(kvs) != m.Len() {
		return // not the encoding of m: left to the conversion as it is
	}
	i := 0
	for k, v := range m.All() {
		kv := &kvs[i]
		i++
		if k != "" {
			kv.Key, kv.KeyStrindex = k, 0
		}
		restoreValue(&kv.Value, v)
	}
}

func restoreValue(av *otlpwire.AnyValue, v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if s := v.Str(); s != "" && av.Kind == otlpwire.KindStringStrindex {
			av.Kind, av.Str, av.Strindex = otlpwire.KindString, s, 0
		}
	case pcommon.ValueTypeMap:
		restoreKeyValues(av.Kvlist, v.Map())
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		if len(av.Array) != s.Len() {
			return
		}
		for i := range av.Array {
			restoreValue(&av.Array[i], s.At(i))
		}
	default:
	}
}
