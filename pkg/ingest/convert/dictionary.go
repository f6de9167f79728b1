package convert

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// Semantic-convention attribute keys the converter reads.
const (
	attrFrameType  = "profile.frame.type"
	attrBuildIDGNU = "process.executable.build_id.gnu"
	attrBuildIDGo  = "process.executable.build_id.go"
	attrBuildIDHTL = "process.executable.build_id.htlhash"
)

// checkDictionary applies the request-wide rules: no unknown fields in any
// table entry, and every non-empty table starts with its zero-value
// sentinel. Empty tables are accepted as long as nothing references them.
func checkDictionary(d *pb.ProfilesDictionary) error {
	if hasUnknown(d) {
		return unknownFieldsError("the dictionary")
	}
	type table struct {
		name    string
		entries []proto.Message
	}
	tables := []table{
		{"mapping_table", messages(d.GetMappingTable())},
		{"location_table", messages(d.GetLocationTable())},
		{"function_table", messages(d.GetFunctionTable())},
		{"link_table", messages(d.GetLinkTable())},
		{"attribute_table", messages(d.GetAttributeTable())},
		{"stack_table", messages(d.GetStackTable())},
	}
	for _, t := range tables {
		for i, e := range t.entries {
			if hasUnknown(e) {
				return unknownFieldsError(fmt.Sprintf("dictionary.%s[%d]", t.name, i))
			}
		}
		if len(t.entries) > 0 && !isZero(t.entries[0]) {
			return &RequestError{Reason: ReasonInvalidSentinel, Message: fmt.Sprintf(
				"rejected the request: dictionary.%s[0] must be the zero value (index 0 means \"unset\" in OTLP profiles)", t.name)}
		}
	}
	for i, l := range d.GetLocationTable() {
		for j, line := range l.GetLines() {
			if hasUnknown(line) {
				return unknownFieldsError(fmt.Sprintf("dictionary.location_table[%d].lines[%d]", i, j))
			}
		}
	}
	if s := d.GetStringTable(); len(s) > 0 && s[0] != "" {
		return &RequestError{Reason: ReasonInvalidSentinel, Message: "rejected the request: dictionary.string_table[0] must be the empty string"}
	}
	return nil
}

func messages[T proto.Message](entries []T) []proto.Message {
	out := make([]proto.Message, len(entries))
	for i, e := range entries {
		out[i] = e
	}
	return out
}

// isZero reports whether a sentinel entry carries nothing. A Link sentinel
// may hold all-zero ids, as the specification recommends.
func isZero(m proto.Message) bool {
	if l, ok := m.(*pb.Link); ok {
		return hexID(l.GetTraceId()) == "" && hexID(l.GetSpanId()) == ""
	}
	if kv, ok := m.(*pb.KeyValueAndUnit); ok {
		return kv.GetKeyStrindex() == 0 && kv.GetUnitStrindex() == 0 && (kv.GetValue() == nil || kv.GetValue().GetValue() == nil)
	}
	return proto.Size(m) == 0
}

// converter resolves dictionary references for one request, each at most
// once.
type converter struct {
	opts Options
	dict *pb.ProfilesDictionary
	strs []string
	// Resolved table entries, by index (nil: not resolved yet).
	attrs     []*attribute
	mappings  []*mapping
	locations []*locationFrames
	stacks    []*stackFrames
	// attrSets memoizes resolved attribute index lists.
	attrSets map[string]*attributeSetResult
}

type attributeSetResult struct {
	attrs map[string]string
	err   error
}

type attribute struct {
	key, value string
	err        error
}

type mapping struct {
	file, buildID string
	err           error
}

type locationFrames struct {
	frames []*model.Frame // outermost (caller) first
	err    error
}

// stackFrames is a resolved stack, root first.
type stackFrames struct {
	id     uint64
	ids    []uint64
	frames []*model.Frame
	err    error
}

func newConverter(d *pb.ProfilesDictionary, opts Options) *converter {
	return &converter{
		opts: opts, dict: d, strs: d.GetStringTable(),
		attrs:     make([]*attribute, len(d.GetAttributeTable())),
		mappings:  make([]*mapping, len(d.GetMappingTable())),
		locations: make([]*locationFrames, len(d.GetLocationTable())),
		stacks:    make([]*stackFrames, len(d.GetStackTable())),
		attrSets:  map[string]*attributeSetResult{},
	}
}

// cached returns the memoized entry of a table, or nil (not resolved yet,
// or an index that cannot be cached: 0 or out of range).
func cached[T any](cache []*T, idx int32) *T {
	if idx <= 0 || int(idx) >= len(cache) {
		return nil
	}
	return cache[idx]
}

// store memoizes an entry when its index can be cached.
func store[T any](cache []*T, idx int32, v *T) *T {
	if idx > 0 && int(idx) < len(cache) {
		cache[idx] = v
	}
	return v
}

// checkIndex validates an index into a table of n entries; 0 ("unset")
// is valid even for an empty table.
func checkIndex(idx int32, n int, field, table string) error {
	if idx < 0 || (idx > 0 && int(idx) >= n) {
		return invalid(ReasonIndexOutOfRange, "%s %d is out of range (%s has %d entries)", field, idx, table, n)
	}
	return nil
}

func (c *converter) str(idx int32, field string) (string, error) {
	if idx == 0 {
		return "", nil
	}
	if err := checkIndex(idx, len(c.strs), field, "string_table"); err != nil {
		return "", err
	}
	return c.strs[idx], nil
}

// anyValue renders an attribute value as a string.
func (c *converter) anyValue(v *commonpb.AnyValue) (string, error) {
	if v == nil {
		return "", nil
	}
	if hasUnknown(v) {
		return "", unknownFields("value")
	}
	switch x := v.GetValue().(type) {
	case nil:
		return "", nil
	case *commonpb.AnyValue_StringValue:
		return x.StringValue, nil
	case *commonpb.AnyValue_StringValueStrindex:
		return c.str(x.StringValueStrindex, "string_value_strindex")
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue), nil
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10), nil
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64), nil
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue), nil
	case *commonpb.AnyValue_ArrayValue:
		items := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, item := range x.ArrayValue.GetValues() {
			s, err := c.anyValue(item)
			if err != nil {
				return "", err
			}
			items = append(items, s)
		}
		return jsonString(items), nil
	case *commonpb.AnyValue_KvlistValue:
		m, err := c.keyValues(x.KvlistValue.GetValues())
		if err != nil {
			return "", err
		}
		return jsonString(m), nil
	}
	return "", invalid(ReasonInvalidAttribute, "unsupported attribute value %T", v.GetValue())
}

func jsonString(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(raw)
}

// attribute resolves one attribute_table entry.
func (c *converter) attribute(idx int32) (key, value string, err error) {
	a := cached(c.attrs, idx)
	if a == nil {
		a = store(c.attrs, idx, c.resolveAttribute(idx))
	}
	return a.key, a.value, a.err
}

func (c *converter) resolveAttribute(idx int32) *attribute {
	table := c.dict.GetAttributeTable()
	if err := checkIndex(idx, len(table), "attribute index", "attribute_table"); err != nil {
		return &attribute{err: err}
	}
	if idx == 0 {
		return &attribute{}
	}
	kv := table[idx]
	key, err := c.str(kv.GetKeyStrindex(), "key_strindex")
	if err == nil {
		_, err = c.str(kv.GetUnitStrindex(), "unit_strindex")
	}
	if err != nil {
		return &attribute{err: wrap(err, fmt.Sprintf("attribute_table[%d]", idx))}
	}
	value, err := c.anyValue(kv.GetValue())
	if err != nil {
		return &attribute{err: wrap(err, fmt.Sprintf("attribute_table[%d]", idx))}
	}
	return &attribute{key: key, value: value}
}

// attributeSet resolves a list of attribute indices into a map; keys must
// be unique within the list. Equal lists resolve once per request and share
// their result, which callers must not modify.
func (c *converter) attributeSet(indices []int32, where string) (map[string]string, error) {
	r := c.attributeSetOf(indices)
	if r.err != nil {
		return nil, wrap(r.err, where)
	}
	return r.attrs, nil
}

// attributeSetOf returns the memoized resolution of an index list; nil
// for an empty list.
func (c *converter) attributeSetOf(indices []int32) *attributeSetResult {
	if len(indices) == 0 {
		return emptyAttributeSet
	}
	var arr [64]byte
	key := arr[:0]
	for _, i := range indices {
		key = binary.LittleEndian.AppendUint32(key, uint32(i)) //nolint:gosec // G115: a bit-exact key
	}
	if r, ok := c.attrSets[string(key)]; ok {
		return r
	}
	attrs, err := c.resolveAttributeSet(indices)
	r := &attributeSetResult{attrs: attrs, err: err}
	c.attrSets[string(key)] = r
	return r
}

var emptyAttributeSet = &attributeSetResult{}

func (c *converter) resolveAttributeSet(indices []int32) (map[string]string, error) {
	out := make(map[string]string, len(indices))
	for _, idx := range indices {
		key, value, err := c.attribute(idx)
		if err != nil {
			return nil, err
		}
		if key == "" {
			continue
		}
		if _, dup := out[key]; dup {
			return nil, invalid(ReasonDuplicateAttribute, "attribute key %q appears twice", key)
		}
		out[key] = value
	}
	return out, nil
}

// mapping resolves a mapping's file name and build id.
func (c *converter) mapping(idx int32) (file, buildID string, err error) {
	m := cached(c.mappings, idx)
	if m == nil {
		m = store(c.mappings, idx, c.resolveMapping(idx))
	}
	return m.file, m.buildID, m.err
}

func (c *converter) resolveMapping(idx int32) *mapping {
	table := c.dict.GetMappingTable()
	if err := checkIndex(idx, len(table), "mapping_index", "mapping_table"); err != nil || idx == 0 {
		return &mapping{err: err}
	}
	m := table[idx]
	where := func() string { return fmt.Sprintf("mapping_table[%d]", idx) }
	if m.GetMemoryStart() >= m.GetMemoryLimit() && (m.GetMemoryStart() != 0 || m.GetMemoryLimit() != 0) {
		return &mapping{err: invalid(ReasonInvalidMapping, "%s: memory_start %#x is not below memory_limit %#x", where(), m.GetMemoryStart(), m.GetMemoryLimit())}
	}
	file, err := c.str(m.GetFilenameStrindex(), "filename_strindex")
	if err != nil {
		return &mapping{err: wrap(err, where())}
	}
	set := c.attributeSetOf(m.GetAttributeIndices())
	if set.err != nil {
		return &mapping{err: wrap(set.err, where())}
	}
	attrs := set.attrs
	buildID := attrs[attrBuildIDGNU]
	if buildID == "" {
		buildID = attrs[attrBuildIDGo]
	}
	if buildID == "" {
		buildID = attrs[attrBuildIDHTL]
	}
	return &mapping{file: file, buildID: buildID}
}

// location resolves a location into frames, outermost caller first: a
// location with inlined calls has several lines, lines[0] the innermost.
func (c *converter) location(idx int32) ([]*model.Frame, error) {
	l := cached(c.locations, idx)
	if l == nil {
		frames, err := c.resolveLocation(idx)
		l = store(c.locations, idx, &locationFrames{frames: frames, err: err})
	}
	return l.frames, l.err
}

func (c *converter) resolveLocation(idx int32) ([]*model.Frame, error) {
	table := c.dict.GetLocationTable()
	if err := checkIndex(idx, len(table), "location index", "location_table"); err != nil {
		return nil, err
	}
	if idx == 0 {
		return nil, invalid(ReasonIndexOutOfRange, "stack refers to location 0, which means \"unset\"")
	}
	loc := table[idx]
	where := func() string { return fmt.Sprintf("location_table[%d]", idx) }
	file, buildID, err := c.mapping(loc.GetMappingIndex())
	if err != nil {
		return nil, wrap(err, where())
	}
	set := c.attributeSetOf(loc.GetAttributeIndices())
	if set.err != nil {
		return nil, wrap(set.err, where())
	}
	attrs := set.attrs
	base := model.Frame{MappingFile: file, BuildID: buildID, FrameType: attrs[attrFrameType]}
	lines := loc.GetLines()
	if len(lines) == 0 {
		f := base
		f.Address = loc.GetAddress()
		f.ComputeID()
		return []*model.Frame{&f}, nil
	}
	// One allocation for the frames, one for the pointers.
	backing := make([]model.Frame, len(lines))
	frames := make([]*model.Frame, len(lines))
	for i, line := range lines {
		f := &backing[len(lines)-1-i]
		*f = base
		if err := c.lineFrame(f, line); err != nil {
			return nil, wrap(err, fmt.Sprintf("%s.lines[%d]", where(), i))
		}
		f.Inlined = i < len(lines)-1
		f.ComputeID()
		frames[len(lines)-1-i] = f
	}
	return frames, nil
}

// lineFrame fills a frame from a line and its function.
func (c *converter) lineFrame(f *model.Frame, line *pb.Line) error {
	if line.GetLine() < 0 || line.GetColumn() < 0 {
		return invalid(ReasonInvalidLine, "line %d and column %d must not be negative", line.GetLine(), line.GetColumn())
	}
	table := c.dict.GetFunctionTable()
	idx := line.GetFunctionIndex()
	if err := checkIndex(idx, len(table), "function_index", "function_table"); err != nil {
		return err
	}
	f.Line = clampUint32(line.GetLine())
	f.Column = clampUint32(line.GetColumn())
	if idx == 0 {
		return nil
	}
	fn := table[idx]
	if fn.GetStartLine() < 0 {
		return invalid(ReasonInvalidFunction, "function_table[%d]: start_line %d must not be negative", idx, fn.GetStartLine())
	}
	var err error
	if f.FunctionName, err = c.str(fn.GetNameStrindex(), "name_strindex"); err != nil {
		return wrap(err, fmt.Sprintf("function_table[%d]", idx))
	}
	if f.SystemName, err = c.str(fn.GetSystemNameStrindex(), "system_name_strindex"); err != nil {
		return wrap(err, fmt.Sprintf("function_table[%d]", idx))
	}
	if f.FileName, err = c.str(fn.GetFilenameStrindex(), "filename_strindex"); err != nil {
		return wrap(err, fmt.Sprintf("function_table[%d]", idx))
	}
	return nil
}

func clampUint32(v int64) uint32 {
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v) //nolint:gosec // G115: 0 <= v <= MaxUint32 here
}

// truncatedFrame ends a stack cut at MaxStackDepth.
var truncatedFrame = func() *model.Frame {
	f := &model.Frame{FunctionName: "[truncated]"}
	f.ComputeID()
	return f
}()

// stack resolves a stack into frames, root first, and its id.
func (c *converter) stack(idx int32) (*stackFrames, error) {
	s := cached(c.stacks, idx)
	if s == nil {
		s = store(c.stacks, idx, c.resolveStack(idx))
	}
	return s, s.err
}

func (c *converter) resolveStack(idx int32) *stackFrames {
	table := c.dict.GetStackTable()
	if err := checkIndex(idx, len(table), "stack_index", "stack_table"); err != nil {
		return &stackFrames{err: err}
	}
	var locs []int32
	if idx > 0 {
		locs = table[idx].GetLocationIndices()
	}
	s := &stackFrames{frames: make([]*model.Frame, 0, len(locs)+len(locs)/4)}
	// location_indices are leaf first; frames are stored root first.
	for i := len(locs) - 1; i >= 0; i-- {
		frames, err := c.location(locs[i])
		if err != nil {
			return &stackFrames{err: wrap(err, fmt.Sprintf("stack_table[%d]", idx))}
		}
		s.frames = append(s.frames, frames...)
	}
	if len(s.frames) > c.opts.MaxStackDepth {
		s.frames = append(s.frames[:c.opts.MaxStackDepth-1:c.opts.MaxStackDepth-1], truncatedFrame)
	}
	s.ids = make([]uint64, len(s.frames))
	for i, f := range s.frames {
		s.ids[i] = f.ID
	}
	s.id = model.StackID(s.ids)
	return s
}

// link resolves a sample's trace link into hex ids ("" when unset).
func (c *converter) link(idx int32) (traceID, spanID string, err error) {
	table := c.dict.GetLinkTable()
	if err := checkIndex(idx, len(table), "link_index", "link_table"); err != nil {
		return "", "", err
	}
	if idx == 0 {
		return "", "", nil
	}
	l := table[idx]
	if len(l.GetTraceId()) != 16 || len(l.GetSpanId()) != 8 {
		return "", "", invalid(ReasonInvalidLink, "link_table[%d] must hold a 16-byte trace_id and an 8-byte span_id, got %d and %d bytes",
			idx, len(l.GetTraceId()), len(l.GetSpanId()))
	}
	return hexID(l.GetTraceId()), hexID(l.GetSpanId()), nil
}
