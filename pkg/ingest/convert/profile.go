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
	second int64
	stack  int32
	link   int32
	attrs  *attributeSetResult
}

// profileRows are a profile's rows before they join the batch: a profile
// that fails half-way leaves nothing behind.
type profileRows struct {
	profileType string
	keys        []sampleKey // first-seen order, for deterministic output
	values      map[sampleKey]int64
	// merged holds profile attributes merged with each sample attribute set.
	merged map[*attributeSetResult]map[string]string
	stacks map[int32]*stackFrames
	links  map[int32][2]string
	events int64
}

// profile validates and converts one profile of a series.
func (c *converter) profile(p *pb.Profile, cpuAsTime bool) (*profileRows, error) {
	if hasUnknown(p) || hasUnknown(p.GetSampleType()) || hasUnknown(p.GetPeriodType()) {
		return nil, unknownFields("profile")
	}
	if id := p.GetProfileId(); len(id) != 0 && (len(id) != 16 || hexID(id) == "") {
		return nil, invalid(ReasonInvalidProfileID, "profile_id must be empty or 16 bytes, not all zero (got %d bytes)", len(id))
	}
	typeID, factor, err := c.profileTypeOf(p, cpuAsTime)
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
		profileType: typeID, values: make(map[sampleKey]int64, len(p.GetSamples())),
		merged: map[*attributeSetResult]map[string]string{}, stacks: map[int32]*stackFrames{}, links: map[int32][2]string{},
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

func (c *converter) profileTypeOf(p *pb.Profile, cpuAsTime bool) (string, int64, error) {
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
	id, factor := profileType(names[0], names[1], names[2], names[3], p.GetPeriod(), cpuAsTime)
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
	attrs := c.attributeSetOf(s.GetAttributeIndices())
	if attrs.err != nil {
		return wrap(attrs.err, "attribute_indices")
	}
	if _, ok := rows.merged[attrs]; !ok {
		rows.merged[attrs] = mergeAttributes(profileAttrs, attrs.attrs)
	}
	rows.stacks[s.GetStackIndex()] = stack
	k := sampleKey{stack: s.GetStackIndex(), link: s.GetLinkIndex(), attrs: attrs}
	if len(stamps) == 0 {
		k.second = int64(w.start / 1e9) //nolint:gosec // G115: nanoseconds / 1e9 fits
		rows.add(k, values[0]*factor)
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
		k.second = int64(ts / 1e9) //nolint:gosec // G115: nanoseconds / 1e9 fits
		rows.add(k, v*factor)
	}
	return nil
}

// add adds one event's value to its row.
func (r *profileRows) add(k sampleKey, v int64) {
	cur, seen := r.values[k]
	if !seen {
		r.keys = append(r.keys, k)
	}
	r.values[k] = cur + v
	r.events++
}

// mergeAttributes merges profile and sample attributes; the sample wins.
func mergeAttributes(profile, sample map[string]string) map[string]string {
	switch {
	case len(profile) == 0:
		return sample
	case len(sample) == 0:
		return profile
	}
	merged := make(map[string]string, len(profile)+len(sample))
	for k, v := range profile {
		merged[k] = v
	}
	for k, v := range sample {
		merged[k] = v
	}
	return merged
}

// addTo moves a profile's rows into the batch.
func (r *profileRows) addTo(b *model.Batch, series *model.Series) {
	if b.Samples == nil {
		b.Samples = make([]model.Sample, 0, len(r.keys))
	}
	metas := map[int32]*model.SampleMeta{}
	sorted := map[*attributeSetResult][]model.KV{}
	for _, k := range r.keys {
		meta := metas[k.link]
		if meta == nil {
			link := r.links[k.link]
			meta = &model.SampleMeta{Series: series, ProfileType: r.profileType, TraceID: link[0], SpanID: link[1]}
			metas[k.link] = meta
		}
		kvs, ok := sorted[k.attrs]
		if !ok {
			kvs = model.SortedKVs(r.merged[k.attrs])
			sorted[k.attrs] = kvs
		}
		b.Samples = append(b.Samples, model.Sample{Timestamp: k.second, StackID: r.stacks[k.stack].id, Value: r.values[k], Meta: meta, Attributes: kvs})
	}
	sym := b.ServiceSymbols(model.ServiceKey{Tenant: series.Tenant, Service: series.Service})
	for _, s := range r.stacks {
		if _, ok := sym.Stacks[s.id]; ok {
			continue
		}
		sym.Stacks[s.id] = &model.Stack{ID: s.id, FrameIDs: s.ids}
		for _, f := range s.frames {
			sym.Frames[f.ID] = f
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
