package query

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// pprof export: a flame graph or table request's answer as a pprof
// profile. The stacks are read and named as for the flame graph (the same
// layout call, so the selection, range, span and trace filters, function
// and executable filters and frame kinds are the same), at function
// granularity; each frame becomes a location with its mapping (file and
// build id), address, and lines (function, file:line; a resolved native
// frame's inline levels as the location's several lines, innermost
// first). Function names are the labels the flame graph shows, marks
// included ("do_syscall_64 [kernel]", "[libc.so.6]" for unresolved native
// code), so that `go tool pprof -top` on the file lists the rows of the
// top-functions table.

// frameDetail is what a pprof location says of a stored frame besides its
// label.
type frameDetail struct {
	systemName, file     string
	line                 uint32
	mappingFile, buildID string
	address              uint64
	mappingStart         uint64
	mappingOffset        uint64
	// levels are a resolved native frame's inline levels, innermost
	// first, from the symbol store (nil when it did not resolve).
	levels []lineDetail
}

// lineDetail is the source line of one inline level of a resolved frame.
type lineDetail struct {
	file string
	line uint32
}

// Pprof answers a flame graph or table request as a pprof profile (see
// above): one sample per stack (per group and stack when the request is
// grouped, the group's labels as the sample's labels), the profile type's
// sample and period types, the request's range as time and duration, and
// as period the one most of the selection's profiles had (0 when no
// profile of it is listed: data written before schema version 5).
func (e *Engine) Pprof(ctx context.Context, r *Request) (*profile.Profile, error) {
	if r.Type != TypeProfile && r.Type != TypeTable && r.Type != TypeBoth {
		return nil, fmt.Errorf("%w: pprof exports the answer of a flame graph or table, not queryType %q", ErrInvalidQuery, r.Type)
	}
	if err := e.checkFilters(r); err != nil {
		return nil, err
	}
	if _, err := e.prepareTraces(ctx, r); err != nil {
		return nil, err
	}
	if err := e.scopeSeries(ctx, r); err != nil {
		return nil, err
	}
	c := *r
	c.Lines, c.details = false, true
	stacks, names, err := e.layout().stacks(ctx, &c)
	if err != nil {
		return nil, err
	}
	period, err := e.period(ctx, &c)
	if err != nil {
		return nil, err
	}
	return buildPprof(&c, stacks, names, period), nil
}

// frameDetails reads the details of frames by id (in chunks; all frames
// of the filter's services when many are asked for), keeping those of
// want.
func (e *Engine) frameDetails(ctx context.Context, f *filter, want []uint64) (map[uint64]*frameDetail, error) {
	out := make(map[uint64]*frameDetail, len(want))
	if len(want) == 0 {
		return out, nil
	}
	pr, err := e.probe(ctx)
	if err != nil {
		return nil, err
	}
	wanted := make(map[uint64]bool, len(want))
	for _, id := range want {
		wanted[id] = true
	}
	return out, e.lookup(ctx, f, schema.Frames, slices.Clone(want), func(chunk []uint64) error {
		var p params
		rows, err := e.Conn.Query(ctx, frameDetailsSQL(&p, e.Tables, e.Tenant, f, chunk, pr.placement), p.args...)
		if err != nil {
			return fmt.Errorf("load frame details: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id uint64
			d := &frameDetail{}
			if err := rows.Scan(&id, &d.systemName, &d.file, &d.line, &d.mappingFile, &d.buildID, &d.address, &d.mappingStart, &d.mappingOffset); err != nil {
				return err
			}
			if wanted[id] {
				out[id] = d
			}
		}
		return rows.Err()
	})
}

// frameDetailsSQL reads what a pprof location needs of frames by id (nil:
// every frame of the filter's services): system name, file, line, mapped
// file, build id, address and, with placement (schema version 3), the
// mapping's start and file offset.
func frameDetailsSQL(p *params, tables schema.Config, tenant string, f *filter, ids []uint64, placement bool) string {
	mapping := "toUInt64(0), toUInt64(0)"
	if placement {
		mapping = "MappingStart, MappingOffset"
	}
	q := "SELECT FrameId, SystemName, FileName, Line, toString(MappingFile), toString(BuildId), Address, " + mapping +
		" FROM " + tables.Qualified(schema.Frames) + " WHERE TenantId = " + p.str(tenant) + servicesCond(p, f)
	if ids != nil {
		q += " AND FrameId IN " + p.u64s(ids)
	}
	return q
}

// inlineLevels notes in details the inline levels of the native frames
// that resolve (innermost first, as a pprof location lists its lines), the
// levels res.name shows: those with a function name.
func (rs *resolution) inlineLevels(natives map[uint64]nativeFrame, details map[uint64]*frameDetail) {
	if rs == nil {
		return
	}
	for id, n := range natives {
		d := details[id]
		t, i := rs.lookup(n)
		if d == nil || t == nil {
			continue
		}
		for lv := t.first[i]; lv < t.first[i+1]; lv++ {
			if t.funcs[lv] != "" {
				d.levels = append(d.levels, lineDetail{file: t.files[lv], line: t.lines[lv]})
			}
		}
	}
}

// pprofBuilder assembles a profile's functions, locations and mappings,
// each once.
type pprofBuilder struct {
	p         *profile.Profile
	names     *flame.Names
	ids       *nameIDs
	details   map[uint64]*frameDetail
	functions map[functionKey]*profile.Function
	locations map[locationKey]*profile.Location
	mappings  map[mappingKey]*profile.Mapping
}

type functionKey struct{ name, systemName, file string }

// locationKey is a location: a stored frame shown under a label entry
// (nameIDs: a label id, or a negative id of several inline levels; a
// native frame is marked in some stacks only), or a collapsed run (frame
// 0 and the run's label).
type locationKey struct {
	frame uint64
	entry int32
}

type mappingKey struct {
	file, buildID string
	start, offset uint64
}

// buildPprof turns an answer's stacks into a profile.
func buildPprof(r *Request, stacks []stackValue, fn *frameNames, period int64) *profile.Profile {
	names := flame.NewNames(len(fn.labels))
	pt := r.ProfileType
	b := &pprofBuilder{
		p: &profile.Profile{
			SampleType:        []*profile.ValueType{{Type: pt.SampleType, Unit: pt.SampleUnit}},
			DefaultSampleType: pt.SampleType,
			TimeNanos:         r.From.UnixNano(),
			DurationNanos:     int64(r.To.Sub(r.From)),
			Period:            period,
			Comments:          []string{pprofComment(r)},
		},
		names: names, details: fn.details,
		functions: map[functionKey]*profile.Function{}, locations: map[locationKey]*profile.Location{}, mappings: map[mappingKey]*profile.Mapping{},
	}
	if pt.PeriodType != "" {
		b.p.PeriodType = &profile.ValueType{Type: pt.PeriodType, Unit: pt.PeriodUnit}
	}
	p := newPather(names, shapeOf(r), fn)
	b.ids = p.ids
	groupBy := flameGroupBy(r)
	var locs []*profile.Location
	var path []int32
	for _, s := range stacks {
		locs, path = b.stack(p, s.frames, locs[:0], path[:0])
		if !p.keeps(path, 0) {
			continue
		}
		sample := &profile.Sample{Location: slices.Clone(locs), Value: []int64{s.value}}
		if len(groupBy) > 0 && int(s.group) < len(fn.groupValues) {
			sample.Label = map[string][]string{}
			for i, l := range groupBy {
				sample.Label[l] = []string{fn.groupValues[s.group][i]}
			}
		}
		b.p.Sample = append(b.p.Sample, sample)
	}
	return b.p
}

// pprofComment describes the request a profile answers.
func pprofComment(r *Request) string {
	parts := []string{"flamehouse " + r.ProfileType.ID}
	if len(r.Matchers) > 0 {
		ms := make([]string, len(r.Matchers))
		for i, m := range r.Matchers {
			ms[i] = m.String()
		}
		parts = append(parts, "{"+strings.Join(ms, ", ")+"}")
	}
	parts = append(parts, r.From.UTC().Format(time.RFC3339)+" to "+r.To.UTC().Format(time.RFC3339))
	return strings.Join(parts, " ")
}

// stack appends a stack's locations, leaf first as pprof orders them, and
// its label path (root first, as the flame graph's) for the leaf filter.
func (b *pprofBuilder) stack(p *pather, frames []uint64, locs []*profile.Location, path []int32) ([]*profile.Location, []int32) {
	v := p.view
	mixed := v != nil && v.mixed(frames)
	last := kindCode
	for _, f := range frames {
		e, ok := b.ids.ids[f]
		if !ok {
			e = b.names.ID("unknown")
		}
		frame := f
		if v != nil {
			var action frameAction
			var kind frameKind
			action, kind, last = v.act(v.kinds[f], mixed, last)
			switch action {
			case actionSkip:
				continue
			case actionCollapse:
				frame, e = 0, v.collapsed[kind]
			case actionMarkNative:
				e = v.markedNative(e)
			}
		}
		locs = append(locs, b.location(frame, e))
		path = b.ids.appendEntry(path, e)
	}
	slices.Reverse(locs)
	return locs, path
}

// location returns the location of a frame shown under a label entry.
func (b *pprofBuilder) location(frame uint64, entry int32) *profile.Location {
	k := locationKey{frame: frame, entry: entry}
	if l, ok := b.locations[k]; ok {
		return l
	}
	var labels []int32
	if entry < 0 {
		labels = b.ids.multi[-entry-1]
	} else {
		labels = []int32{entry}
	}
	d := b.details[frame]
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1)}
	if d != nil {
		l.Address = d.address
		l.Mapping = b.mapping(d)
	}
	// Lines innermost first; labels are root first.
	for i := len(labels) - 1; i >= 0; i-- {
		k := functionKey{name: b.names.Label(labels[i])}
		var line uint32
		if d != nil {
			k.file, line = d.lineOf(len(labels)-1-i, len(labels))
			if len(d.levels) == 0 {
				k.systemName = d.systemName
			}
		}
		l.Line = append(l.Line, profile.Line{Function: b.function(k), Line: int64(line)})
	}
	b.locations[k] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// lineOf is the file and line of level i (innermost first) of a frame
// shown as n levels: from the symbol store when the frame resolved into
// as many levels, else the stored frame's when it is shown as one level.
func (d *frameDetail) lineOf(i, n int) (file string, line uint32) {
	switch {
	case len(d.levels) == n:
		return d.levels[i].file, d.levels[i].line
	case n == 1 && len(d.levels) == 0:
		return d.file, d.line
	}
	return "", 0
}

// function returns the function of a key, made once.
func (b *pprofBuilder) function(k functionKey) *profile.Function {
	if f, ok := b.functions[k]; ok {
		return f
	}
	f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: k.name, SystemName: k.systemName, Filename: k.file}
	if f.SystemName == "" {
		f.SystemName = f.Name
	}
	b.functions[k] = f
	b.p.Function = append(b.p.Function, f)
	return f
}

// mapping returns the mapping of a frame's mapped file and build id (nil
// when it names neither).
func (b *pprofBuilder) mapping(d *frameDetail) *profile.Mapping {
	if d.mappingFile == "" && d.buildID == "" {
		return nil
	}
	k := mappingKey{file: d.mappingFile, buildID: d.buildID, start: d.mappingStart, offset: d.mappingOffset}
	if m, ok := b.mappings[k]; ok {
		return m
	}
	m := &profile.Mapping{
		ID: uint64(len(b.p.Mapping) + 1), Start: k.start, Offset: k.offset, File: k.file, BuildID: k.buildID,
		// Every location has its lines: nothing is left for pprof to
		// symbolize.
		HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true,
	}
	b.mappings[k] = m
	b.p.Mapping = append(b.p.Mapping, m)
	return m
}

// PprofFileName names a request's pprof file:
// flamehouse-<profile type name>-<service>-<start, UTC>.pb.gz, the service
// of an exact service_name matcher ("all" without one), unsafe characters
// as "_".
func PprofFileName(r *Request) string {
	service := "all"
	for _, m := range r.Matchers {
		if isServiceName(m.Name) && m.Op == selector.Equal {
			service = m.Value
		}
	}
	return pprofFileName(r.ProfileType.Name, service, r.From)
}

// pprofFileName is a pprof file's name from its profile type's name, its
// service and its start.
func pprofFileName(typeName, service string, start time.Time) string {
	name := "flamehouse-" + typeName + "-" + service + "-" + start.UTC().Format("20060102T150405Z")
	return strings.Map(func(c rune) rune {
		if c == '-' || c == '.' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			return c
		}
		return '_'
	}, name) + ".pb.gz"
}
