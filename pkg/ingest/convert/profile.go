package convert

import (
	"fmt"
	"strconv"
	"strings"

	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// sampleKey identifies one sample row within a profile.
type sampleKey struct {
	second  int64
	stack   int32
	link    int32
	attrKey string
}

// profileRows are a profile's rows before they join the batch: a profile
// that fails half-way leaves nothing behind.
type profileRows struct {
	profileType string
	keys        []sampleKey // first-seen order, for deterministic output
	values      map[sampleKey]int64
	attrs       map[string]map[string]string
	stacks      map[int32]*stackFrames
	links       map[int32][2]string
	events      int64
}

// profile validates and converts one profile of a series.
func (c *converter) profile(p *pb.Profile) (*profileRows, error) {
	if hasUnknown(p) || hasUnknown(p.GetSampleType()) || hasUnknown(p.GetPeriodType()) {
		return nil, unknownFields("profile")
	}
	if id := p.GetProfileId(); len(id) != 0 && (len(id) != 16 || hexID(id) == "") {
		return nil, invalid(ReasonInvalidProfileID, "profile_id must be empty or 16 bytes, not all zero (got %d bytes)", len(id))
	}
	typeID, factor, err := c.profileTypeOf(p)
	if err != nil {
		return nil, err
	}
	profileAttrs, err := c.attributeSet(p.GetAttributeIndices(), "attribute_indices")
	if err != nil {
		return nil, err
	}
	start := p.GetTimeUnixNano()
	if start == 0 {
		start = uint64(c.opts.Now().UnixNano()) //nolint:gosec // G115: the clock is after 1970
	}
	futureLimit := uint64(c.opts.Now().Add(c.opts.MaxFutureSkew).UnixNano()) //nolint:gosec // G115: see above
	if c.opts.MaxFutureSkew > 0 && start > futureLimit {
		return nil, invalid(ReasonTimestampRange, "time_unix_nano %d is more than %s in the future", start, c.opts.MaxFutureSkew)
	}
	rows := &profileRows{
		profileType: typeID, values: map[sampleKey]int64{}, attrs: map[string]map[string]string{},
		stacks: map[int32]*stackFrames{}, links: map[int32][2]string{},
	}
	window := timeWindow{start: start, duration: p.GetDurationNano(), checked: p.GetTimeUnixNano() != 0 && p.GetDurationNano() != 0}
	for si, s := range p.GetSamples() {
		if err := c.sample(s, rows, profileAttrs, factor, window); err != nil {
			return nil, wrap(err, fmt.Sprintf("samples[%d]", si))
		}
	}
	return rows, nil
}

// timeWindow is a profile's [start, start+duration) window.
type timeWindow struct {
	start, duration uint64
	checked         bool
}

func (c *converter) profileTypeOf(p *pb.Profile) (string, int64, error) {
	names := make([]string, 4)
	for i, idx := range []int32{
		p.GetSampleType().GetTypeStrindex(), p.GetSampleType().GetUnitStrindex(),
		p.GetPeriodType().GetTypeStrindex(), p.GetPeriodType().GetUnitStrindex(),
	} {
		s, err := c.str(idx, "value type strindex")
		if err != nil {
			return "", 0, wrap(err, "sample_type/period_type")
		}
		names[i] = s
	}
	if names[0] == "" {
		return "", 0, invalid(ReasonInvalidValueType, "sample_type has no type: every profile names what its values measure")
	}
	id, factor := profileType(names[0], names[1], names[2], names[3], p.GetPeriod(), c.opts.CPUSamplesAsTime)
	return id, factor, nil
}

// sample validates one sample and adds its events to the rows.
func (c *converter) sample(s *pb.Sample, rows *profileRows, profileAttrs map[string]string, factor int64, w timeWindow) error {
	if hasUnknown(s) {
		return unknownFields("sample")
	}
	values, stamps := s.GetValues(), s.GetTimestampsUnixNano()
	switch {
	case len(values) == 0 && len(stamps) == 0:
		return invalid(ReasonInvalidSampleShape, "a sample needs values or timestamps_unix_nano")
	case len(values) > 0 && len(stamps) > 0 && len(values) != len(stamps):
		return invalid(ReasonInvalidSampleShape, "values (%d) and timestamps_unix_nano (%d) must have the same length", len(values), len(stamps))
	case len(stamps) == 0 && len(values) != 1:
		return invalid(ReasonInvalidSampleShape, "a sample without timestamps must have exactly one value, got %d", len(values))
	}
	stack, err := c.stack(s.GetStackIndex())
	if err != nil {
		return err
	}
	if _, ok := rows.links[s.GetLinkIndex()]; !ok {
		traceID, spanID, err := c.link(s.GetLinkIndex())
		if err != nil {
			return err
		}
		rows.links[s.GetLinkIndex()] = [2]string{traceID, spanID}
	}
	attrKey, err := c.sampleAttributes(s, rows, profileAttrs)
	if err != nil {
		return err
	}
	rows.stacks[s.GetStackIndex()] = stack
	add := func(ts uint64, v int64) {
		k := sampleKey{second: int64(ts / 1e9), stack: s.GetStackIndex(), link: s.GetLinkIndex(), attrKey: attrKey} //nolint:gosec // G115: nanoseconds / 1e9 fits
		if _, seen := rows.values[k]; !seen {
			rows.keys = append(rows.keys, k)
		}
		rows.values[k] += v * factor
		rows.events++
	}
	if len(stamps) == 0 {
		add(w.start, values[0])
		return nil
	}
	for i, ts := range stamps {
		if w.checked && (ts < w.start || ts-w.start >= w.duration) {
			return invalid(ReasonTimestampRange, "timestamp %d is outside the profile's window [%d, %d)", ts, w.start, w.start+w.duration)
		}
		v := int64(1)
		if len(values) > 0 {
			v = values[i]
		}
		add(ts, v)
	}
	return nil
}

// sampleAttributes merges profile and sample attributes (the sample wins)
// and returns the key that groups equal sets.
func (c *converter) sampleAttributes(s *pb.Sample, rows *profileRows, profileAttrs map[string]string) (string, error) {
	own, err := c.attributeSet(s.GetAttributeIndices(), "attribute_indices")
	if err != nil {
		return "", err
	}
	if len(own) == 0 && len(profileAttrs) == 0 {
		return "", nil
	}
	merged := own
	if len(profileAttrs) > 0 {
		merged = make(map[string]string, len(own)+len(profileAttrs))
		for k, v := range profileAttrs {
			merged[k] = v
		}
		for k, v := range own {
			merged[k] = v
		}
	}
	key := model.AttributesKey(merged)
	if _, ok := rows.attrs[key]; !ok {
		rows.attrs[key] = merged
	}
	return key, nil
}

// addTo moves a profile's rows into the batch.
func (r *profileRows) addTo(b *model.Batch, series *model.Series) {
	for _, k := range r.keys {
		link := r.links[k.link]
		stack := r.stacks[k.stack]
		b.Samples = append(b.Samples, model.Sample{
			Timestamp: k.second, ProfileType: r.profileType, StackID: stack.id, Series: series,
			Value: r.values[k], TraceID: link[0], SpanID: link[1], Attributes: r.attrs[k.attrKey],
		})
	}
	for _, s := range r.stacks {
		key := model.StackKey{Tenant: series.Tenant, Service: series.Service, ID: s.id}
		if _, ok := b.Stacks[key]; ok {
			continue
		}
		b.Stacks[key] = &model.Stack{ID: s.id, FrameIDs: s.ids}
		for _, f := range s.frames {
			b.Frames[model.FrameKey{Tenant: series.Tenant, Service: series.Service, ID: f.ID}] = f
		}
	}
	b.Events += r.events
}

// Summary renders rejections for a partial_success message, bounded so
// that a request with thousands of bad profiles gets a short answer.
func (r *Result) Summary(maxLen int) string {
	if len(r.Rejected) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(r.Rejected)) + " of " + strconv.Itoa(r.Profiles) + " profiles rejected: ")
	for i, rej := range r.Rejected {
		part := rej.String()
		if i > 0 {
			part = "; " + part
		}
		if b.Len()+len(part) > maxLen {
			fmt.Fprintf(&b, "; and %d more", len(r.Rejected)-i)
			break
		}
		b.WriteString(part)
	}
	return b.String()
}

// ReasonCounts counts rejections by reason, for metrics.
func (r *Result) ReasonCounts() map[Reason]int {
	out := map[Reason]int{}
	for _, rej := range r.Rejected {
		out[rej.Reason]++
	}
	return out
}
