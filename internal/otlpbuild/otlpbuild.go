// Package otlpbuild assembles OTLP profiles export requests: a dictionary
// whose tables deduplicate strings, functions, mappings, locations, stacks,
// attributes and links (index 0 holds each table's zero-value sentinel),
// and resource, scope and profile containers that refer into it. The pprof
// converter, the load generator and the tests build requests with it.
package otlpbuild

import (
	"encoding/binary"
	"fmt"
	"strings"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// Builder builds one export request.
type Builder struct {
	dict      *pb.ProfilesDictionary
	strings   map[string]int32
	functions map[string]int32
	mappings  map[string]int32
	locations map[string]int32
	stacks    map[string]int32
	attrs     map[string]int32
	links     map[string]int32
	resources []*pb.ResourceProfiles
}

// New returns a builder whose tables hold only their sentinels.
func New() *Builder {
	return &Builder{
		dict: &pb.ProfilesDictionary{
			StringTable:    []string{""},
			FunctionTable:  []*pb.Function{{}},
			MappingTable:   []*pb.Mapping{{}},
			LocationTable:  []*pb.Location{{}},
			StackTable:     []*pb.Stack{{}},
			AttributeTable: []*pb.KeyValueAndUnit{{}},
			LinkTable:      []*pb.Link{{}},
		},
		strings: map[string]int32{"": 0}, functions: map[string]int32{}, mappings: map[string]int32{},
		locations: map[string]int32{}, stacks: map[string]int32{}, attrs: map[string]int32{}, links: map[string]int32{},
	}
}

func intern(m map[string]int32, key string, add func() int32) int32 {
	if idx, ok := m[key]; ok {
		return idx
	}
	idx := add()
	m[key] = idx
	return idx
}

func index(n int) int32 { return int32(n - 1) }

// Str interns a string and returns its string_table index.
func (b *Builder) Str(s string) int32 {
	return intern(b.strings, s, func() int32 {
		b.dict.StringTable = append(b.dict.StringTable, s)
		return index(len(b.dict.StringTable))
	})
}

// Function interns a function.
func (b *Builder) Function(name, systemName, file string, startLine int64) int32 {
	key := fmt.Sprint(name, "\x00", systemName, "\x00", file, "\x00", startLine)
	return intern(b.functions, key, func() int32 {
		b.dict.FunctionTable = append(b.dict.FunctionTable, &pb.Function{
			NameStrindex: b.Str(name), SystemNameStrindex: b.Str(systemName), FilenameStrindex: b.Str(file), StartLine: startLine,
		})
		return index(len(b.dict.FunctionTable))
	})
}

// Mapping interns a mapped file; buildID (optional) becomes the
// process.executable.build_id.gnu attribute.
func (b *Builder) Mapping(start, limit, offset uint64, file, buildID string) int32 {
	key := fmt.Sprint(start, limit, offset, file, buildID)
	return intern(b.mappings, key, func() int32 {
		m := &pb.Mapping{MemoryStart: start, MemoryLimit: limit, FileOffset: offset, FilenameStrindex: b.Str(file)}
		if buildID != "" {
			m.AttributeIndices = []int32{b.Attr("process.executable.build_id.gnu", buildID)}
		}
		b.dict.MappingTable = append(b.dict.MappingTable, m)
		return index(len(b.dict.MappingTable))
	})
}

// Line is one line of a location: a function index, line and column.
type Line struct {
	Function int32
	Line     int64
	Column   int64
}

// Location interns a location; lines go innermost (inlined callee) first.
// frameType (optional) becomes the profile.frame.type attribute.
func (b *Builder) Location(mapping int32, address uint64, frameType string, lines ...Line) int32 {
	var key strings.Builder
	fmt.Fprint(&key, mapping, "/", address, "/", frameType)
	for _, l := range lines {
		fmt.Fprint(&key, "/", l.Function, ":", l.Line, ":", l.Column)
	}
	return intern(b.locations, key.String(), func() int32 {
		loc := &pb.Location{MappingIndex: mapping, Address: address}
		for _, l := range lines {
			loc.Lines = append(loc.Lines, &pb.Line{FunctionIndex: l.Function, Line: l.Line, Column: l.Column})
		}
		if frameType != "" {
			loc.AttributeIndices = []int32{b.Attr("profile.frame.type", frameType)}
		}
		b.dict.LocationTable = append(b.dict.LocationTable, loc)
		return index(len(b.dict.LocationTable))
	})
}

// Stack interns a stack of location indices, leaf first.
func (b *Builder) Stack(locations ...int32) int32 {
	key := make([]byte, 4*len(locations))
	for i, l := range locations {
		binary.LittleEndian.PutUint32(key[4*i:], uint32(l))
	}
	return intern(b.stacks, string(key), func() int32 {
		b.dict.StackTable = append(b.dict.StackTable, &pb.Stack{LocationIndices: locations})
		return index(len(b.dict.StackTable))
	})
}

// Attr interns a string attribute for attribute_indices lists.
func (b *Builder) Attr(key, value string) int32 {
	return intern(b.attrs, key+"\x00"+value, func() int32 {
		b.dict.AttributeTable = append(b.dict.AttributeTable, &pb.KeyValueAndUnit{
			KeyStrindex: b.Str(key), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: value}},
		})
		return index(len(b.dict.AttributeTable))
	})
}

// Link interns a trace link (16-byte trace id, 8-byte span id).
func (b *Builder) Link(traceID [16]byte, spanID [8]byte) int32 {
	return intern(b.links, string(traceID[:])+string(spanID[:]), func() int32 {
		b.dict.LinkTable = append(b.dict.LinkTable, &pb.Link{TraceId: traceID[:], SpanId: spanID[:]})
		return index(len(b.dict.LinkTable))
	})
}

// Resource adds a ResourceProfiles with string attributes (key, value
// pairs) and returns it for adding scopes.
func (b *Builder) Resource(attrs ...string) *pb.ResourceProfiles {
	rp := &pb.ResourceProfiles{Resource: &resourcepb.Resource{Attributes: KeyValues(attrs...)}}
	b.resources = append(b.resources, rp)
	return rp
}

// KeyValues turns key, value pairs into OTLP string attributes.
func KeyValues(pairs ...string) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, &commonpb.KeyValue{Key: pairs[i], Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: pairs[i+1]}}})
	}
	return out
}

// Scope adds a ScopeProfiles to a resource.
func Scope(rp *pb.ResourceProfiles, name, version string) *pb.ScopeProfiles {
	sp := &pb.ScopeProfiles{Scope: &commonpb.InstrumentationScope{Name: name, Version: version}}
	rp.ScopeProfiles = append(rp.ScopeProfiles, sp)
	return sp
}

// ValueType interns a (type, unit) pair.
func (b *Builder) ValueType(typ, unit string) *pb.ValueType {
	return &pb.ValueType{TypeStrindex: b.Str(typ), UnitStrindex: b.Str(unit)}
}

// Request returns the export request built so far.
func (b *Builder) Request() *collectorpb.ExportProfilesServiceRequest {
	return &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: b.resources, Dictionary: b.dict}
}

// Dictionary exposes the dictionary (tests corrupt it on purpose).
func (b *Builder) Dictionary() *pb.ProfilesDictionary { return b.dict }
