package convert

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/ingest/otlpwire"
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
func checkDictionary(req *otlpwire.Request) error {
	d := &req.Dictionary
	if d.Unknown {
		return unknownFieldsError("the dictionary")
	}
	tables := []struct {
		name    string
		n       int
		unknown func(i int) bool
		zero    func() bool
	}{
		{"mapping_table", len(d.Mappings), func(i int) bool { return d.Mappings[i].Unknown }, func() bool { return d.Mappings[0] == (otlpwire.Mapping{}) }},
		{"location_table", len(d.Locations), func(i int) bool { return d.Locations[i].Unknown }, func() bool {
			l := &d.Locations[0]
			return l.MappingIndex == 0 && l.Address == 0 && l.Lines.Len == 0 && l.AttributeIndices.Len == 0
		}},
		{"function_table", len(d.Functions), func(i int) bool { return d.Functions[i].Unknown }, func() bool { return d.Functions[0] == (otlpwire.Function{}) }},
		{"link_table", len(d.Links), func(i int) bool { return d.Links[i].Unknown }, func() bool {
			return hexID(d.Links[0].TraceID) == "" && hexID(d.Links[0].SpanID) == ""
		}},
		{"attribute_table", len(d.Attributes), func(i int) bool { return d.Attributes[i].Unknown }, func() bool {
			a := &d.Attributes[0]
			return a.KeyStrindex == 0 && a.UnitStrindex == 0 && a.Value.Kind == otlpwire.KindNone
		}},
		{"stack_table", len(d.Stacks), func(i int) bool { return d.Stacks[i].Unknown }, func() bool { return d.Stacks[0].LocationIndices.Len == 0 }},
	}
	for _, t := range tables {
		for i := range t.n {
			if t.unknown(i) {
				return unknownFieldsError(fmt.Sprintf("dictionary.%s[%d]", t.name, i))
			}
		}
		if t.n > 0 && !t.zero() {
			return &RequestError{Reason: ReasonInvalidSentinel, Message: fmt.Sprintf(
				"rejected the request: dictionary.%s[0] must be the zero value (index 0 means \"unset\" in OTLP profiles)", t.name)}
		}
	}
	for i := range d.Locations {
		for j, line := range req.LineSlice(d.Locations[i].Lines) {
			if line.Unknown {
				return unknownFieldsError(fmt.Sprintf("dictionary.location_table[%d].lines[%d]", i, j))
			}
		}
	}
	if len(d.Strings) > 0 && d.Strings[0] != "" {
		return &RequestError{Reason: ReasonInvalidSentinel, Message: "rejected the request: dictionary.string_table[0] must be the empty string"}
	}
	return nil
}

// Resolution states of a dictionary entry.
const (
	unresolved uint8 = iota
	resolved
	failed
)

type attrEntry struct {
	state      uint8
	key, value string
	err        error
}

type mappingEntry struct {
	state         uint8
	file, buildID string
	err           error
}

// locEntry is a resolved location: its frames, outermost (caller) first,
// are converter.frames[start : start+n].
type locEntry struct {
	state    uint8
	start, n uint32
	err      error
}

// stackEntry is a resolved stack: its frame ids, root first, are
// converter.stackIDs[start : start+n].
type stackEntry struct {
	state     uint8
	truncated bool
	start, n  uint32
	id        uint64
	err       error
}

type linkEntry struct {
	state       uint8
	trace, span string
	err         error
}

// converter resolves dictionary references for one request, each at most
// once, into per-request arrays.
type converter struct {
	opts Options
	req  *otlpwire.Request
	dict *otlpwire.Dictionary
	strs []string

	attrs    []attrEntry
	mappings []mappingEntry
	locs     []locEntry
	stacks   []stackEntry
	links    []linkEntry

	// frames holds the frames of resolved locations; stackIDs the frame
	// ids of resolved stacks.
	frames   []model.Frame
	stackIDs []uint64

	// sets are the resolved attribute sets (see attributeSet).
	sets    []attrSet
	setIDs  map[uint64]int32 // by a hash of the indices
	lastSet int32

	ps profileState
	usage
}

func newConverter(req *otlpwire.Request, opts Options) *converter {
	d := &req.Dictionary
	return &converter{
		opts: opts, req: req, dict: d, strs: d.Strings,
		attrs:    make([]attrEntry, len(d.Attributes)),
		mappings: make([]mappingEntry, len(d.Mappings)),
		locs:     locsPool.get(len(d.Locations)),
		stacks:   stacksPool.get(len(d.Stacks)),
		links:    make([]linkEntry, len(d.Links)),
		frames:   framesPool.get(locationFrames(req))[:0],
		stackIDs: stackIDsPool.get(stackFrames(req))[:0],
		sets:     []attrSet{{}},
		setIDs:   map[uint64]int32{},
		ps: profileState{
			rows: map[rowKey]int32{}, metas: map[int32]*model.SampleMeta{}, merged: map[int32][]model.KV{},
		},
		usage: newUsage(len(d.Stacks)),
	}
}

// locationFrames counts the frames of all locations: one per line, or one
// for a location without lines.
func locationFrames(req *otlpwire.Request) int {
	n := 0
	for i := range req.Dictionary.Locations {
		n += max(1, int(req.Dictionary.Locations[i].Lines.Len))
	}
	return n
}

// stackFrames estimates the frame ids of all stacks: one per location
// reference (inlined lines add more, MaxStackDepth cuts).
func stackFrames(req *otlpwire.Request) int {
	n := 0
	for i := range req.Dictionary.Stacks {
		n += int(req.Dictionary.Stacks[i].LocationIndices.Len)
	}
	return n
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
func (c *converter) anyValue(v *otlpwire.AnyValue) (string, error) {
	if v.Unknown {
		return "", unknownFields("value")
	}
	switch v.Kind {
	case otlpwire.KindNone:
		return "", nil
	case otlpwire.KindString:
		return v.Str, nil
	case otlpwire.KindStringStrindex:
		return c.str(v.Strindex, "string_value_strindex")
	case otlpwire.KindBool:
		return strconv.FormatBool(v.Bool), nil
	case otlpwire.KindInt:
		return strconv.FormatInt(v.Int, 10), nil
	case otlpwire.KindDouble:
		return strconv.FormatFloat(v.Double, 'g', -1, 64), nil
	case otlpwire.KindBytes:
		return hex.EncodeToString(v.Bytes), nil
	case otlpwire.KindArray:
		items := make([]string, 0, len(v.Array))
		for i := range v.Array {
			s, err := c.anyValue(&v.Array[i])
			if err != nil {
				return "", err
			}
			items = append(items, s)
		}
		return jsonString(items), nil
	case otlpwire.KindKvlist:
		m, err := c.keyValues(v.Kvlist)
		if err != nil {
			return "", err
		}
		return jsonString(m), nil
	}
	return "", invalid(ReasonInvalidAttribute, "unsupported attribute value kind %d", v.Kind)
}

func jsonString(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(raw)
}

// keyValues resolves resource or scope attributes, whose keys and string
// values may be references into the dictionary's string table.
func (c *converter) keyValues(kvs []otlpwire.KeyValue) (map[string]string, error) {
	out := make(map[string]string, len(kvs))
	for i := range kvs {
		kv := &kvs[i]
		if kv.Unknown {
			return nil, unknownFields(fmt.Sprintf("attributes[%d]", i))
		}
		key := kv.Key
		if kv.KeyStrindex != 0 {
			if key != "" {
				return nil, invalid(ReasonInvalidAttribute, "attributes[%d] sets both key and key_strindex", i)
			}
			s, err := c.str(kv.KeyStrindex, "key_strindex")
			if err != nil {
				return nil, wrap(err, fmt.Sprintf("attributes[%d]", i))
			}
			key = s
		}
		if key == "" {
			continue
		}
		value, err := c.anyValue(&kv.Value)
		if err != nil {
			return nil, wrap(err, fmt.Sprintf("attributes[%d]", i))
		}
		out[key] = value
	}
	return out, nil
}

// attribute resolves one attribute_table entry.
func (c *converter) attribute(idx int32) (key, value string, err error) {
	if err := checkIndex(idx, len(c.attrs), "attribute index", "attribute_table"); err != nil {
		return "", "", err
	}
	if idx == 0 {
		return "", "", nil
	}
	a := &c.attrs[idx]
	if a.state == unresolved {
		a.key, a.value, a.err = c.resolveAttribute(idx)
		a.state = resolved
	}
	return a.key, a.value, a.err
}

func (c *converter) resolveAttribute(idx int32) (key, value string, err error) {
	kv := &c.dict.Attributes[idx]
	key, err = c.str(kv.KeyStrindex, "key_strindex")
	if err == nil {
		_, err = c.str(kv.UnitStrindex, "unit_strindex")
	}
	if err == nil {
		value, err = c.anyValue(&kv.Value)
	}
	if err != nil {
		return "", "", wrap(err, fmt.Sprintf("attribute_table[%d]", idx))
	}
	return key, value, nil
}

// attributeValue resolves a dictionary entry's (mapping, location)
// attribute indices like any attribute list and returns one key's value.
func (c *converter) attributeValue(indices []int32, key string) (string, error) {
	set, err := c.attributeSet(indices)
	if err != nil {
		return "", err
	}
	for _, kv := range c.sets[set].kvs {
		if kv.Key == key {
			return kv.Value, nil
		}
	}
	return "", nil
}

// mapping resolves a mapping's file name and build id.
func (c *converter) mapping(idx int32) (file, buildID string, err error) {
	if err := checkIndex(idx, len(c.mappings), "mapping_index", "mapping_table"); err != nil || idx == 0 {
		return "", "", err
	}
	m := &c.mappings[idx]
	if m.state == unresolved {
		m.file, m.buildID, m.err = c.resolveMapping(idx)
		m.state = resolved
	}
	return m.file, m.buildID, m.err
}

func (c *converter) resolveMapping(idx int32) (file, buildID string, err error) {
	m := &c.dict.Mappings[idx]
	where := func() string { return fmt.Sprintf("mapping_table[%d]", idx) }
	if m.MemoryStart >= m.MemoryLimit && (m.MemoryStart != 0 || m.MemoryLimit != 0) {
		return "", "", invalid(ReasonInvalidMapping, "%s: memory_start %#x is not below memory_limit %#x", where(), m.MemoryStart, m.MemoryLimit)
	}
	file, err = c.str(m.FilenameStrindex, "filename_strindex")
	if err != nil {
		return "", "", wrap(err, where())
	}
	indices := c.req.Int32Slice(m.AttributeIndices)
	for _, key := range [...]string{attrBuildIDGNU, attrBuildIDGo, attrBuildIDHTL} {
		if buildID, err = c.attributeValue(indices, key); err != nil || buildID != "" {
			break
		}
	}
	if err != nil {
		return "", "", wrap(err, where())
	}
	return file, buildID, nil
}

// location resolves a location into frames, outermost caller first (a
// location with inlined calls has several lines, lines[0] the innermost),
// and returns their range in c.frames.
func (c *converter) location(idx int32) (start, n uint32, err error) {
	if err := checkIndex(idx, len(c.locs), "location index", "location_table"); err != nil {
		return 0, 0, err
	}
	if idx == 0 {
		return 0, 0, invalid(ReasonIndexOutOfRange, "stack refers to location 0, which means \"unset\"")
	}
	l := &c.locs[idx]
	if l.state == unresolved {
		l.start = uint32(len(c.frames))
		l.err = c.resolveLocation(idx)
		if l.err != nil {
			c.frames = c.frames[:l.start]
		}
		l.n = uint32(len(c.frames)) - l.start
		l.state = resolved
	}
	return l.start, l.n, l.err
}

// resolveLocation appends a location's frames to c.frames.
func (c *converter) resolveLocation(idx int32) error {
	loc := &c.dict.Locations[idx]
	where := func() string { return fmt.Sprintf("location_table[%d]", idx) }
	file, buildID, err := c.mapping(loc.MappingIndex)
	if err != nil {
		return wrap(err, where())
	}
	frameType, err := c.frameType(c.req.Int32Slice(loc.AttributeIndices))
	if err != nil {
		return wrap(err, where())
	}
	base := model.Frame{MappingFile: file, BuildID: buildID, FrameType: frameType}
	lines := c.req.LineSlice(loc.Lines)
	if len(lines) == 0 {
		f := base
		f.Address = loc.Address
		if loc.MappingIndex != 0 { // the placement the query needs to resolve the address (symbols.VA)
			m := &c.dict.Mappings[loc.MappingIndex]
			f.MappingStart, f.MappingOffset = m.MemoryStart, m.FileOffset
		}
		f.ComputeID()
		c.frames = append(c.frames, f)
		return nil
	}
	// Lines are innermost first; frames are stored outermost first.
	for i := len(lines) - 1; i >= 0; i-- {
		f := base
		if err := c.lineFrame(&f, &lines[i]); err != nil {
			return wrap(err, fmt.Sprintf("%s.lines[%d]", where(), i))
		}
		f.Inlined = i < len(lines)-1
		f.ComputeID()
		c.frames = append(c.frames, f)
	}
	return nil
}

// frameType reads profile.frame.type from a location's attributes (the
// list is validated like any attribute list).
func (c *converter) frameType(indices []int32) (string, error) {
	if len(indices) == 1 { // the common case: no set to resolve
		key, value, err := c.attribute(indices[0])
		if err != nil || key != attrFrameType {
			return "", err
		}
		return value, nil
	}
	return c.attributeValue(indices, attrFrameType)
}

// lineFrame fills a frame from a line and its function.
func (c *converter) lineFrame(f *model.Frame, line *otlpwire.Line) error {
	if line.Line < 0 || line.Column < 0 {
		return invalid(ReasonInvalidLine, "line %d and column %d must not be negative", line.Line, line.Column)
	}
	idx := line.FunctionIndex
	if err := checkIndex(idx, len(c.dict.Functions), "function_index", "function_table"); err != nil {
		return err
	}
	f.Line = clampUint32(line.Line)
	f.Column = clampUint32(line.Column)
	if idx == 0 {
		return nil
	}
	fn := &c.dict.Functions[idx]
	if fn.StartLine < 0 {
		return invalid(ReasonInvalidFunction, "function_table[%d]: start_line %d must not be negative", idx, fn.StartLine)
	}
	var err error
	if f.FunctionName, err = c.str(fn.NameStrindex, "name_strindex"); err != nil {
		return wrap(err, fmt.Sprintf("function_table[%d]", idx))
	}
	if f.SystemName, err = c.str(fn.SystemNameStrindex, "system_name_strindex"); err != nil {
		return wrap(err, fmt.Sprintf("function_table[%d]", idx))
	}
	if f.FileName, err = c.str(fn.FilenameStrindex, "filename_strindex"); err != nil {
		return wrap(err, fmt.Sprintf("function_table[%d]", idx))
	}
	return nil
}

func clampUint32(v int64) uint32 {
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// truncatedFrame ends a stack cut at MaxStackDepth.
var truncatedFrame = func() model.Frame {
	f := model.Frame{FunctionName: "[truncated]"}
	f.ComputeID()
	return f
}()

// stack resolves a stack into its frame ids, root first, and its id.
func (c *converter) stack(idx int32) (*stackEntry, error) {
	if err := checkIndex(idx, len(c.stacks), "stack_index", "stack_table"); err != nil {
		return nil, err
	}
	if idx == 0 {
		return &emptyStack, nil
	}
	s := &c.stacks[idx]
	if s.state == unresolved {
		c.resolveStack(idx, s)
	}
	return s, s.err
}

// emptyStack is the stack of stack_index 0: no frames.
var emptyStack = stackEntry{state: resolved, id: model.StackID(nil)}

func (c *converter) resolveStack(idx int32, s *stackEntry) {
	s.state = resolved
	s.start = uint32(len(c.stackIDs))
	locs := c.req.Int32Slice(c.dict.Stacks[idx].LocationIndices)
	limit := c.opts.MaxStackDepth
	frames := 0
	// location_indices are leaf first; frames are stored root first. Past
	// the limit, locations are still validated but their frames not kept.
	for i := len(locs) - 1; i >= 0; i-- {
		start, n, err := c.location(locs[i])
		if err != nil {
			c.stackIDs = c.stackIDs[:s.start]
			s.err = wrap(err, fmt.Sprintf("stack_table[%d]", idx))
			return
		}
		for _, f := range c.frames[start : start+n] {
			if frames < limit {
				c.stackIDs = append(c.stackIDs, f.ID)
			}
			frames++
		}
	}
	if frames > limit {
		// Keep the root-most frames and say that the rest was cut.
		c.stackIDs = append(c.stackIDs[:int(s.start)+limit-1], truncatedFrame.ID)
		s.truncated = true
	}
	s.n = uint32(len(c.stackIDs)) - s.start
	s.id = model.StackID(c.stackIDs[s.start:])
}

// link resolves a sample's trace link into hex ids ("" when unset).
func (c *converter) link(idx int32) (traceID, spanID string, err error) {
	if err := checkIndex(idx, len(c.links), "link_index", "link_table"); err != nil {
		return "", "", err
	}
	if idx == 0 {
		return "", "", nil
	}
	l := &c.links[idx]
	if l.state == unresolved {
		l.state = resolved
		w := &c.dict.Links[idx]
		if len(w.TraceID) != 16 || len(w.SpanID) != 8 {
			l.err = invalid(ReasonInvalidLink, "link_table[%d] must hold a 16-byte trace_id and an 8-byte span_id, got %d and %d bytes",
				idx, len(w.TraceID), len(w.SpanID))
		} else {
			l.trace, l.span = hexID(w.TraceID), hexID(w.SpanID)
		}
	}
	return l.trace, l.span, l.err
}

// hexID renders a trace or span id as otel_traces stores it.
func hexID(b []byte) string {
	for _, x := range b {
		if x != 0 {
			return hex.EncodeToString(b)
		}
	}
	return ""
}
