package convert

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/ingest/otlpwire"
	"github.com/flamehouse/flamehouse/pkg/profiletype"
)

// rowKey identifies one sample row within a profile.
type rowKey struct {
	second      int64
	stack, link int32
	attrs       int32 // attribute set id (0: none)
}

// profileState is what the converter remembers while it converts one
// profile; its maps are reused from profile to profile.
type profileState struct {
	series      *model.Series
	svc         int32
	profileType string
	factor      int64
	attrs       []model.KV // the profile's own attributes, sorted
	window      timeWindow

	rows   map[rowKey]int32 // row index in the batch
	metas  map[int32]*model.SampleMeta
	merged map[int32][]model.KV // attribute set id -> merged with attrs
}

// timeWindow is a profile's [start, start+duration) window.
type timeWindow struct {
	start, duration uint64
	checked         bool
}

// profile validates and converts one profile of a series, appending its
// rows to the batch; a profile that fails half-way leaves nothing behind.
func (c *converter) profile(p *otlpwire.Profile, series *model.Series, svc int32, cpuAsTime bool, b *model.Batch) error {
	mark := c.markRows(b)
	if err := c.convertProfile(p, series, svc, cpuAsTime, b); err != nil {
		c.rollback(b, mark)
		return err
	}
	c.listProfile(p, b, mark)
	return nil
}

// listProfile adds the profile just converted to the batch's profiles:
// its time, what its rows hold and where they are. A profile without rows
// is not listed.
func (c *converter) listProfile(p *otlpwire.Profile, b *model.Batch, mark rowsMark) {
	rows := b.Samples[mark.samples:]
	if len(rows) == 0 {
		return
	}
	lp := model.Profile{
		Series: c.ps.series, ProfileType: c.ps.profileType, TimeNanos: c.ps.window.start, DurationNanos: p.DurationNano, Period: p.Period,
		ProfileID: hexID(p.ProfileID), FirstSecond: rows[0].Timestamp, LastSecond: rows[0].Timestamp, Events: b.Events - mark.events,
	}
	for i := range rows {
		lp.FirstSecond, lp.LastSecond = min(lp.FirstSecond, rows[i].Timestamp), max(lp.LastSecond, rows[i].Timestamp)
		lp.Total += rows[i].Value
	}
	b.Profiles = append(b.Profiles, lp)
}

func (c *converter) convertProfile(p *otlpwire.Profile, series *model.Series, svc int32, cpuAsTime bool, b *model.Batch) error {
	if p.Unknown || p.SampleType.Unknown || p.PeriodType.Unknown {
		return unknownFields("profile")
	}
	if id := p.ProfileID; len(id) != 0 && (len(id) != 16 || hexID(id) == "") {
		return invalid(ReasonInvalidProfileID, "profile_id must be empty or 16 bytes, not all zero (got %d bytes)", len(id))
	}
	typeID, factor, err := c.profileTypeOf(p, cpuAsTime)
	if err != nil {
		return err
	}
	set, err := c.attributeSet(c.req.Int32Slice(p.AttributeIndices))
	if err != nil {
		return wrap(err, "attribute_indices")
	}
	start := p.TimeUnixNano
	now := c.opts.Now()
	if start == 0 {
		start = uint64(now.UnixNano())
	}
	if c.opts.MaxFutureSkew > 0 && start > uint64(now.Add(c.opts.MaxFutureSkew).UnixNano()) {
		return invalid(ReasonTimestampRange, "time_unix_nano %d is more than %s in the future", start, c.opts.MaxFutureSkew)
	}
	ps := &c.ps
	ps.series, ps.svc, ps.profileType, ps.factor = series, svc, typeID, factor
	ps.attrs = c.sets[set].kvs
	ps.window = timeWindow{start: start, duration: p.DurationNano, checked: p.TimeUnixNano != 0 && p.DurationNano != 0}
	clear(ps.rows)
	clear(ps.metas)
	clear(ps.merged)
	for si := range p.Samples {
		if err := c.sample(&p.Samples[si], b); err != nil {
			return wrap(err, fmt.Sprintf("samples[%d]", si))
		}
	}
	return nil
}

func (c *converter) profileTypeOf(p *otlpwire.Profile, cpuAsTime bool) (string, int64, error) {
	var names [4]string
	for i, idx := range [...]int32{
		p.SampleType.TypeStrindex, p.SampleType.UnitStrindex,
		p.PeriodType.TypeStrindex, p.PeriodType.UnitStrindex,
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
	id, factor := profiletype.ID(names[0], names[1], names[2], names[3], p.Period, cpuAsTime)
	return id, factor, nil
}

// sample validates one sample and adds its events to the profile's rows.
func (c *converter) sample(s *otlpwire.Sample, b *model.Batch) error {
	if s.Unknown {
		return unknownFields("sample")
	}
	values, stamps := c.req.Int64Slice(s.Values), c.req.Uint64Slice(s.TimestampsUnixNano)
	switch {
	case len(values) == 0 && len(stamps) == 0:
		return invalid(ReasonInvalidSampleShape, "a sample needs values or timestamps_unix_nano")
	case len(values) > 0 && len(stamps) > 0 && len(values) != len(stamps):
		return invalid(ReasonInvalidSampleShape, "values (%d) and timestamps_unix_nano (%d) must have the same length", len(values), len(stamps))
	case len(stamps) == 0 && len(values) != 1:
		return invalid(ReasonInvalidSampleShape, "a sample without timestamps must have exactly one value, got %d", len(values))
	}
	stack, err := c.stack(s.StackIndex)
	if err != nil {
		return err
	}
	meta, err := c.meta(s.LinkIndex)
	if err != nil {
		return err
	}
	set, err := c.attributeSet(c.req.Int32Slice(s.AttributeIndices))
	if err != nil {
		return wrap(err, "attribute_indices")
	}
	c.use(c.ps.svc, s.StackIndex)
	attrs := c.mergedAttributes(set)
	w := &c.ps.window
	k := rowKey{stack: s.StackIndex, link: s.LinkIndex, attrs: set}
	row := model.Sample{StackID: stack.id, Meta: meta, Attributes: attrs}
	if len(stamps) == 0 {
		k.second = int64(w.start / 1e9)
		row.Timestamp, row.Value = k.second, values[0]*c.ps.factor
		c.addRow(b, k, row)
		b.Events++
		return nil
	}
	last := int32(-1)
	for i, ts := range stamps {
		if w.checked && (ts < w.start || ts-w.start >= w.duration) {
			return invalid(ReasonTimestampRange, "timestamp %d is outside the profile's window [%d, %d)", ts, w.start, w.start+w.duration)
		}
		v := int64(1)
		if len(values) > 0 {
			v = values[i]
		}
		v *= c.ps.factor
		second := int64(ts / 1e9)
		if last >= 0 && b.Samples[last].Timestamp == second {
			b.Samples[last].Value += v // the common case: events of one second in a row
			continue
		}
		k.second = second
		row.Timestamp, row.Value = second, v
		last = c.addRow(b, k, row)
	}
	b.Events += int64(len(stamps))
	return nil
}

// addRow adds a row's value to the profile's row with the same key, or
// appends it, and returns the row's index.
func (c *converter) addRow(b *model.Batch, k rowKey, row model.Sample) int32 {
	if i, ok := c.ps.rows[k]; ok {
		b.Samples[i].Value += row.Value
		return i
	}
	i := int32(len(b.Samples))
	b.Samples = append(b.Samples, row)
	c.ps.rows[k] = i
	return i
}

// meta returns the shared part of the profile's rows with a trace link.
func (c *converter) meta(link int32) (*model.SampleMeta, error) {
	if m, ok := c.ps.metas[link]; ok {
		return m, nil
	}
	traceID, spanID, err := c.link(link)
	if err != nil {
		return nil, err
	}
	m := &model.SampleMeta{Series: c.ps.series, ProfileType: c.ps.profileType, TraceID: traceID, SpanID: spanID}
	c.ps.metas[link] = m
	return m, nil
}

// mergedAttributes merges the profile's attributes into a sample's
// attribute set (the sample wins), once per set and profile.
func (c *converter) mergedAttributes(set int32) []model.KV {
	sample := c.sets[set].kvs
	switch {
	case len(c.ps.attrs) == 0:
		return sample
	case len(sample) == 0:
		return c.ps.attrs
	}
	if m, ok := c.ps.merged[set]; ok {
		return m
	}
	m := mergeKVs(c.ps.attrs, sample)
	c.ps.merged[set] = m
	return m
}

// mergeKVs merges two key-sorted attribute lists; b wins on equal keys.
func mergeKVs(a, b []model.KV) []model.KV {
	out := make([]model.KV, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch cmp := strings.Compare(a[i].Key, b[j].Key); {
		case cmp < 0:
			out = append(out, a[i])
			i++
		case cmp > 0:
			out = append(out, b[j])
			j++
		default:
			out = append(out, b[j])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// rowsMark records the batch and usage state before a profile.
type rowsMark struct {
	samples int
	events  int64
	used    int
}

func (c *converter) markRows(b *model.Batch) rowsMark {
	return rowsMark{samples: len(b.Samples), events: b.Events, used: len(c.used)}
}

// rollback drops what a rejected profile added.
func (c *converter) rollback(b *model.Batch, m rowsMark) {
	clear(b.Samples[m.samples:]) // release what the dropped rows point to
	b.Samples = b.Samples[:m.samples]
	b.Events = m.events
	c.unuse(m.used)
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
