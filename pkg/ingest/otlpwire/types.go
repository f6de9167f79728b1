package otlpwire

// Span is a range of one of the Request's shared arrays (Int32s, Int64s,
// Uint64s or Lines): Len elements starting at index Off.
type Span struct{ Off, Len uint32 }

// Request is a decoded opentelemetry.proto.collector.profiles.v1development
// ExportProfilesServiceRequest. Repeated scalar fields and Location lines are
// stored in the shared arrays below and referenced by Spans; resolve them
// with Int32Slice, Int64Slice, Uint64Slice and LineSlice.
type Request struct {
	// Unknown is set when the ExportProfilesServiceRequest message itself
	// had unknown fields.
	Unknown bool
	// Dictionary is the dictionary field, the zero value when absent.
	Dictionary Dictionary
	// Resources are the resource_profiles, in wire order.
	Resources []ResourceProfiles

	// Int32s holds every repeated int32 field (attribute_indices,
	// location_indices).
	Int32s []int32
	// Int64s holds Sample.values.
	Int64s []int64
	// Uint64s holds Sample.timestamps_unix_nano.
	Uint64s []uint64
	// Lines holds Location.lines.
	Lines []Line
}

// Int32Slice returns the elements of Int32s that s refers to. The result
// aliases the Request: do not append to it.
func (r *Request) Int32Slice(s Span) []int32 { return r.Int32s[s.Off : s.Off+s.Len : s.Off+s.Len] }

// Int64Slice returns the elements of Int64s that s refers to. The result
// aliases the Request: do not append to it.
func (r *Request) Int64Slice(s Span) []int64 { return r.Int64s[s.Off : s.Off+s.Len : s.Off+s.Len] }

// Uint64Slice returns the elements of Uint64s that s refers to. The result
// aliases the Request: do not append to it.
func (r *Request) Uint64Slice(s Span) []uint64 { return r.Uint64s[s.Off : s.Off+s.Len : s.Off+s.Len] }

// LineSlice returns the elements of Lines that s refers to. The result
// aliases the Request: do not append to it.
func (r *Request) LineSlice(s Span) []Line { return r.Lines[s.Off : s.Off+s.Len : s.Off+s.Len] }

// Dictionary is a ProfilesDictionary: the tables that profiles refer into
// by index.
type Dictionary struct {
	// Unknown is set when the ProfilesDictionary message itself had unknown
	// fields.
	Unknown bool
	// Mappings is mapping_table (field 1).
	Mappings []Mapping
	// Locations is location_table (field 2).
	Locations []Location
	// Functions is function_table (field 3).
	Functions []Function
	// Links is link_table (field 4).
	Links []Link
	// Strings is string_table (field 5).
	Strings []string
	// Attributes is attribute_table (field 6).
	Attributes []KeyValueAndUnit
	// Stacks is stack_table (field 7).
	Stacks []Stack
}

// Mapping is a dictionary mapping: a mapped binary's address range.
type Mapping struct {
	MemoryStart, MemoryLimit, FileOffset uint64
	FilenameStrindex                     int32
	// AttributeIndices indexes Request.Int32s.
	AttributeIndices Span
	// Unknown is set when the Mapping message had unknown fields.
	Unknown bool
}

// Location is a dictionary location: an address and its source lines.
type Location struct {
	MappingIndex int32
	Address      uint64
	// Lines indexes Request.Lines.
	Lines Span
	// AttributeIndices indexes Request.Int32s.
	AttributeIndices Span
	// Unknown is set when the Location message had unknown fields.
	Unknown bool
}

// Line is one source line of a Location.
type Line struct {
	FunctionIndex int32
	Line, Column  int64
	// Unknown is set when the Line message had unknown fields.
	Unknown bool
}

// Function is a dictionary function.
type Function struct {
	NameStrindex, SystemNameStrindex, FilenameStrindex int32
	StartLine                                          int64
	// Unknown is set when the Function message had unknown fields.
	Unknown bool
}

// Link is a dictionary link to a trace span. TraceID and SpanID alias the
// payload.
type Link struct {
	TraceID, SpanID []byte
	// Unknown is set when the Link message had unknown fields.
	Unknown bool
}

// KeyValueAndUnit is a dictionary attribute.
type KeyValueAndUnit struct {
	KeyStrindex  int32
	Value        AnyValue
	UnitStrindex int32
	// Unknown is set when the KeyValueAndUnit message had unknown fields.
	Unknown bool
}

// Stack is a dictionary stack of location indices.
type Stack struct {
	// LocationIndices indexes Request.Int32s.
	LocationIndices Span
	// Unknown is set when the Stack message had unknown fields.
	Unknown bool
}

// ValueKind says which member of the AnyValue value oneof is set.
type ValueKind uint8

// The members of the AnyValue value oneof.
const (
	KindNone           ValueKind = iota // no member set
	KindString                          // string_value: Str
	KindBool                            // bool_value: Bool
	KindInt                             // int_value: Int
	KindDouble                          // double_value: Double
	KindArray                           // array_value: Array
	KindKvlist                          // kvlist_value: Kvlist
	KindBytes                           // bytes_value: Bytes
	KindStringStrindex                  // string_value_strindex: Strindex
)

// AnyValue is opentelemetry.proto.common.v1.AnyValue. Only the field that
// Kind names is set. Unknown is set when the AnyValue message (or, for
// arrays and kvlists, the ArrayValue/KeyValueList wrapper message) had
// unknown fields.
type AnyValue struct {
	Kind     ValueKind
	Str      string
	Bytes    []byte
	Int      int64
	Double   float64
	Bool     bool
	Strindex int32
	Array    []AnyValue
	Kvlist   []KeyValue
	Unknown  bool
}

// KeyValue is opentelemetry.proto.common.v1.KeyValue (key=1, value=2,
// key_strindex=3).
type KeyValue struct {
	Key         string
	KeyStrindex int32
	Value       AnyValue
	// Unknown is set when the KeyValue message had unknown fields.
	Unknown bool
}

// ResourceProfiles is the profiles of one resource.
type ResourceProfiles struct {
	// Unknown is set when the ResourceProfiles message had unknown fields.
	Unknown   bool
	Resource  Resource
	Scopes    []ScopeProfiles
	SchemaURL string
}

// Resource is opentelemetry.proto.resource.v1.Resource. Its entity_refs
// are validated and dropped.
type Resource struct {
	Attributes             []KeyValue
	DroppedAttributesCount uint32
	// Unknown is set when the Resource message had unknown fields.
	Unknown bool
}

// ScopeProfiles is the profiles of one instrumentation scope.
type ScopeProfiles struct {
	// Unknown is set when the ScopeProfiles message had unknown fields.
	Unknown   bool
	Scope     InstrumentationScope
	Profiles  []Profile
	SchemaURL string
}

// InstrumentationScope is opentelemetry.proto.common.v1.InstrumentationScope.
type InstrumentationScope struct {
	Name, Version          string
	Attributes             []KeyValue
	DroppedAttributesCount uint32
	// Unknown is set when the InstrumentationScope message had unknown
	// fields.
	Unknown bool
}

// Profile is one profile. ProfileID and OriginalPayload alias the payload.
type Profile struct {
	// Unknown is set when the Profile message had unknown fields.
	Unknown                    bool
	SampleType, PeriodType     ValueType
	Samples                    []Sample
	TimeUnixNano, DurationNano uint64
	Period                     int64
	ProfileID                  []byte
	DroppedAttributesCount     uint32
	OriginalPayloadFormat      string
	OriginalPayload            []byte
	// AttributeIndices indexes Request.Int32s.
	AttributeIndices Span
}

// ValueType is a (type, unit) pair of string_table indices.
type ValueType struct {
	TypeStrindex, UnitStrindex int32
	// Unknown is set when the ValueType message had unknown fields.
	Unknown bool
}

// Sample is one sample of a profile.
type Sample struct {
	StackIndex, LinkIndex int32
	// AttributeIndices indexes Request.Int32s.
	AttributeIndices Span
	// Values indexes Request.Int64s.
	Values Span
	// TimestampsUnixNano indexes Request.Uint64s.
	TimestampsUnixNano Span
	// Unknown is set when the Sample message had unknown fields.
	Unknown bool
}
