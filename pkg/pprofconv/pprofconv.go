// Package pprofconv converts pprof profiles (github.com/google/pprof/profile)
// into OTLP profiles export requests, so that existing pprof data, and the
// Go runtime's own profiles, can be sent to any OTLP profiles endpoint.
//
// Each pprof sample type becomes one OTLP profile (OTLP profiles carry a
// single sample type); locations, lines (inlined calls included),
// functions and mappings keep their fields; string labels become sample
// attributes and numeric labels attributes with their unit. A sample whose
// labels hold a valid trace_id (32 hex digits) and span_id (16 hex digits),
// as selftrace.Do sets them, is linked to that span instead (an OTLP link,
// which the ingest stores as the sample's TraceId and SpanId); ids that are
// not valid stay attributes.
package pprofconv

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/pprof/profile"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// Options describe where the profile comes from.
type Options struct {
	// ResourceAttributes (key, value pairs) describe the profiled process;
	// service.name is the one that matters most.
	ResourceAttributes []string
	// ScopeName names the producer ("pprof" when empty).
	ScopeName string
}

var errNoSamples = errors.New("the pprof profile has no sample types")

// Convert turns one pprof profile into an export request.
func Convert(p *profile.Profile, opts Options) (*collectorpb.ExportProfilesServiceRequest, error) {
	if len(p.SampleType) == 0 {
		return nil, errNoSamples
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("invalid pprof profile: %w", err)
	}
	b := otlpbuild.New()
	c := &converter{b: b, mappings: map[uint64]int32{}, functions: map[uint64]int32{}, locations: map[uint64]int32{}}
	scope := opts.ScopeName
	if scope == "" {
		scope = "pprof"
	}
	sp := otlpbuild.Scope(b.Resource(opts.ResourceAttributes...), scope, "")
	periodType := &pb.ValueType{}
	if p.PeriodType != nil {
		periodType = b.ValueType(p.PeriodType.Type, p.PeriodType.Unit)
	}
	for ti, st := range p.SampleType {
		out := &pb.Profile{
			SampleType:            b.ValueType(st.Type, st.Unit),
			PeriodType:            periodType,
			Period:                p.Period,
			TimeUnixNano:          uint64(max(p.TimeNanos, 0)),
			DurationNano:          uint64(max(p.DurationNanos, 0)),
			OriginalPayloadFormat: "pprof",
		}
		for _, s := range p.Sample {
			if ti >= len(s.Value) || s.Value[ti] == 0 {
				continue
			}
			attrs, link := c.labels(s)
			out.Samples = append(out.Samples, &pb.Sample{
				StackIndex:       c.stack(s.Location),
				AttributeIndices: attrs,
				LinkIndex:        link,
				Values:           []int64{s.Value[ti]},
			})
		}
		sp.Profiles = append(sp.Profiles, out)
	}
	return b.Request(), nil
}

type converter struct {
	b         *otlpbuild.Builder
	mappings  map[uint64]int32
	functions map[uint64]int32
	locations map[uint64]int32
}

// stack interns a sample's locations (leaf first, as in both formats).
func (c *converter) stack(locs []*profile.Location) int32 {
	idx := make([]int32, len(locs))
	for i, l := range locs {
		idx[i] = c.location(l)
	}
	return c.b.Stack(idx...)
}

func (c *converter) location(l *profile.Location) int32 {
	if idx, ok := c.locations[l.ID]; ok {
		return idx
	}
	lines := make([]otlpbuild.Line, 0, len(l.Line))
	for _, ln := range l.Line {
		if ln.Function == nil || ln.Function.Name == "" && ln.Function.SystemName == "" && ln.Function.Filename == "" {
			// Go's runtime/pprof writes a line with a nameless function for
			// a PC it cannot symbolize (C code: libc, cgo libraries): that is
			// no symbolization, and the location must stay an address in
			// its mapping for the symbol store to name it.
			continue
		}
		lines = append(lines, otlpbuild.Line{Function: c.function(ln.Function), Line: ln.Line, Column: ln.Column})
	}
	idx := c.b.Location(c.mapping(l.Mapping), l.Address, "", lines...)
	c.locations[l.ID] = idx
	return idx
}

func (c *converter) mapping(m *profile.Mapping) int32 {
	if m == nil {
		return 0
	}
	if idx, ok := c.mappings[m.ID]; ok {
		return idx
	}
	// The placement (start, offset) travels to the unsymbolized frames, for
	// the query to find their addresses in the executable (symbols.VA).
	start, limit, offset := m.Start, m.Limit, m.Offset
	if start >= limit {
		// pprof allows empty ranges; OTLP wants start < limit or both zero,
		// and without a start the offset places nothing.
		start, limit, offset = 0, 0, 0
	}
	idx := c.b.Mapping(start, limit, offset, m.File, m.BuildID)
	c.mappings[m.ID] = idx
	return idx
}

func (c *converter) function(f *profile.Function) int32 {
	if f == nil {
		return 0
	}
	if idx, ok := c.functions[f.ID]; ok {
		return idx
	}
	idx := c.b.Function(f.Name, f.SystemName, f.Filename, f.StartLine)
	c.functions[f.ID] = idx
	return idx
}

// labels turns pprof labels into sample attributes (the first value of
// each key; attribute keys are unique per sample in OTLP) and, when the
// labels name a span, a link to it.
func (c *converter) labels(s *profile.Sample) (attrs []int32, link int32) {
	link = c.link(s.Label)
	for k, vs := range s.Label {
		if len(vs) == 0 || (link != 0 && (k == selftrace.TraceIDLabel || k == selftrace.SpanIDLabel)) {
			continue
		}
		attrs = append(attrs, c.b.Attr(k, vs[0]))
	}
	for k, vs := range s.NumLabel {
		if _, dup := s.Label[k]; dup || len(vs) == 0 {
			continue
		}
		v := strconv.FormatInt(vs[0], 10)
		if units := s.NumUnit[k]; len(units) > 0 && units[0] != "" {
			v += " " + units[0]
		}
		attrs = append(attrs, c.b.Attr(k, v))
	}
	return attrs, link
}

// link interns the link named by the trace_id and span_id labels, or
// returns 0 when either is missing or not a valid id.
func (c *converter) link(labels map[string][]string) int32 {
	var traceID [16]byte
	var spanID [8]byte
	if !decodeID(traceID[:], labels[selftrace.TraceIDLabel]) || !decodeID(spanID[:], labels[selftrace.SpanIDLabel]) {
		return 0
	}
	return c.b.Link(traceID, spanID)
}

// decodeID decodes the first label value, hex digits of exactly len(dst)
// bytes, into dst; it reports false for anything else and for an all-zero
// id, which OpenTelemetry reserves for "no id".
func decodeID(dst []byte, values []string) bool {
	if len(values) == 0 || len(values[0]) != 2*len(dst) {
		return false
	}
	if _, err := hex.Decode(dst, []byte(values[0])); err != nil {
		return false
	}
	for _, b := range dst {
		if b != 0 {
			return true
		}
	}
	return false
}
