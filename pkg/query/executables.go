package query

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// The Executables view (queryType executables): the executables — mapped
// files, by build id — whose code the selection's stacks run, each with
// its share of the samples, how much of its code has names, and where the
// names come from. Modelled on Elastic devfiler's Executables tab.

// Symbol sources of the Executables view.
const (
	SourceUpload     = symbols.SourceUpload     // symbols uploaded (CLI or HTTP)
	SourceDebuginfod = symbols.SourceDebuginfod // symbols fetched from a debuginfod server
	SourceHost       = symbols.SourceHost       // symbols found on the ingest's machine by build id
	SourceOnHost     = "on host"                // the profiler sent names (no symbols stored)
	SourceNone       = "none"                   // neither: frames are addresses
)

// LinkExecutableFlameGraph is on the executables frame's executable field.
const LinkExecutableFlameGraph = "Flame graph of this executable"

// exeKey identifies an executable of the view: its mapped file and build
// id (either may be empty).
type exeKey struct{ file, buildID string }

// viewKey is the row of the view a frame's executable is counted in: its
// build id when it has one (an executable mapped under several names is
// one file: the eBPF profiler sends a mapping's base name, other senders
// its path), else its mapped file.
func (k exeKey) viewKey() exeKey {
	if k.buildID != "" {
		return exeKey{buildID: k.buildID}
	}
	return k
}

// exeSum is what the view shows of one executable.
type exeSum struct {
	// key is the row's viewKey; file is the name it shows, the longest
	// of the names it was mapped under (a path over a base name).
	key  exeKey
	file string
	// value is the total of the stacks through it, each counted once.
	value int64
	// frames are its distinct frames, named those the sender named,
	// resolved those the symbol store names.
	frames, named, resolved int64
	// lastSeen is the latest time it was seen (Unix seconds): the time of a
	// raw sample, the start of a rollup's minute or hour.
	lastSeen int64
}

// executableSums are a selection's executables and its total.
type executableSums struct {
	total int64
	exes  []*exeSum
	// stored are the symbol store's executables of their build ids.
	stored map[string]*executable
	// byFile, on the exporter's table (no build ids), is set: its links
	// filter by mapping file only.
	byFile bool
}

// executableSumsSQL sums values per stack with the latest time each was
// seen.
func executableSumsSQL(p *params, tables schema.Config, f *filter, segs []segment) string {
	return "SELECT StackId, sum(Value), toInt64(max(toUnixTimestamp(Timestamp))) FROM (" +
		union(p, tables, f, segs, "StackId, Value, Timestamp") + ") GROUP BY StackId"
}

// exeFramesSQL reads the executable of frames by id (all frames of the
// filter's services when ids is nil) that have a mapping file or build
// id: whether the sender named them, and what resolves them.
func exeFramesSQL(p *params, tables schema.Config, tenant string, f *filter, ids []uint64, placement bool) string {
	mapping := "toUInt64(0), toUInt64(0)"
	if placement {
		mapping = "MappingStart, MappingOffset"
	}
	q := "SELECT FrameId, toString(MappingFile), toString(BuildId), NOT (" + unsymbolizedSQL + "), Address, " + mapping + " FROM " +
		tables.Qualified(schema.Frames) + " WHERE TenantId = " + p.str(tenant) + servicesCond(p, f) + " AND (MappingFile != '' OR BuildId != '')"
	if ids != nil {
		q += " AND FrameId IN " + p.u64s(ids)
	}
	return q
}

// exeFrame is a frame of an executable.
type exeFrame struct {
	key    exeKey
	named  bool
	native nativeFrame
}

// distinctFrames are the frames of the stacks, each once, and the set of
// them.
func distinctFrames(ids []uint64, stackFrames map[uint64][]uint64) ([]uint64, map[uint64]bool) {
	var distinct []uint64
	known := map[uint64]bool{}
	for _, id := range ids {
		for _, fr := range stackFrames[id] {
			if !known[fr] {
				known[fr] = true
				distinct = append(distinct, fr)
			}
		}
	}
	return distinct, known
}

// exeTally sums the view's executables, a row per view key.
type exeTally struct {
	out  *executableSums
	sums map[exeKey]*exeSum
}

// of is the row of an executable, added on first sight; it shows the
// longest of the names the executable was mapped under (the least in
// byte order among equally long ones).
func (t *exeTally) of(k exeKey) *exeSum {
	s := t.sums[k.viewKey()]
	if s == nil {
		s = &exeSum{key: k.viewKey(), file: k.file}
		t.sums[k.viewKey()] = s
		t.out.exes = append(t.out.exes, s)
	}
	if len(k.file) > len(s.file) || (len(k.file) == len(s.file) && k.file < s.file) {
		s.file = k.file
	}
	return s
}

// addStacks adds each stack's value to the total and to each executable
// it runs through, once per stack.
func (t *exeTally) addStacks(stacks stackSums, stackFrames map[uint64][]uint64, frames map[uint64]*exeFrame) {
	inStack := map[exeKey]bool{}
	for i, id := range stacks.ids {
		t.out.total += stacks.values[i]
		clear(inStack)
		for _, fr := range stackFrames[id] {
			if x := frames[fr]; x != nil && !inStack[x.key.viewKey()] {
				inStack[x.key.viewKey()] = true
				s := t.of(x.key)
				s.value += stacks.values[i]
				s.lastSeen = max(s.lastSeen, stacks.seen[i])
			}
		}
	}
}

// countFrames counts the executables' frames of the stacks (known) and
// those the sender named; it returns the unnamed native frames, which the
// symbol store may resolve, and the build ids seen.
func (t *exeTally) countFrames(frames map[uint64]*exeFrame, known map[uint64]bool) (map[uint64]nativeFrame, map[string]bool) {
	natives := map[uint64]nativeFrame{}
	buildIDs := map[string]bool{}
	for id, x := range frames {
		if !known[id] {
			continue // a frame of the services that none of the stacks has
		}
		s := t.of(x.key)
		s.frames++
		switch {
		case x.named:
			s.named++
		case x.native.buildID != "":
			natives[id] = x.native
		}
		if x.key.buildID != "" {
			buildIDs[x.key.buildID] = true
		}
	}
	return natives, buildIDs
}

// countResolved counts the native frames the symbol store names.
func (t *exeTally) countResolved(ctx context.Context, e *Engine, natives map[uint64]nativeFrame, frames map[uint64]*exeFrame) error {
	res, err := e.resolution(ctx, natives, nil)
	if err != nil || res == nil {
		return err
	}
	for id, n := range natives {
		if found, _ := res.lookup(n); found != nil {
			t.sums[frames[id].key.viewKey()].resolved++
		}
	}
	return nil
}

// storedExecutables are the symbol store's executables of the build ids
// (those spelled as build ids).
func (e *Engine) storedExecutables(ctx context.Context, buildIDs map[string]bool) (map[string]*executable, error) {
	list := make([]string, 0, len(buildIDs))
	for id := range buildIDs {
		if buildIDPattern.MatchString(id) {
			list = append(list, id)
		}
	}
	slices.Sort(list)
	return e.executables(ctx, list)
}

// loadExeFrames reads the executables of frames into frames.
func (e *Engine) loadExeFrames(ctx context.Context, f *filter, ids []uint64, placement bool, frames map[uint64]*exeFrame) error {
	var p params
	rows, err := e.Conn.Query(ctx, exeFramesSQL(&p, e.Tables, e.Tenant, f, ids, placement), p.args...)
	if err != nil {
		return fmt.Errorf("load frames: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uint64
		x := &exeFrame{}
		if err := rows.Scan(&id, &x.key.file, &x.key.buildID, &x.named, &x.native.address, &x.native.mappingStart, &x.native.mappingOffset); err != nil {
			return err
		}
		if !x.named {
			x.native.buildID = x.key.buildID
		}
		frames[id] = x
	}
	return rows.Err()
}

// executablesView answers an executables query: a table of the
// selection's executables, the largest share of samples first.
func (e *Engine) executablesView(ctx context.Context, l layout, r *Request) (*data.Frame, error) {
	sums, err := l.executables(ctx, r)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(sums.exes, func(a, b *exeSum) int {
		if c := cmp.Compare(b.value, a.value); c != 0 {
			return c
		}
		if c := strings.Compare(a.file, b.file); c != 0 {
			return c
		}
		return strings.Compare(a.key.buildID, b.key.buildID)
	})
	if len(sums.exes) > r.Limit {
		sums.exes = sums.exes[:r.Limit]
	}
	return executablesFrame(r, sums, e.linkTarget(r)), nil
}

// source is where an executable's names come from: the symbol store's
// row, else the sender when it named some of its frames.
func (s *executableSums) source(x *exeSum) string {
	if st := s.stored[x.key.buildID]; st != nil && x.key.buildID != "" {
		if st.source == SourceDebuginfod || st.source == SourceHost {
			return st.source
		}
		return SourceUpload
	}
	if x.named > 0 {
		return SourceOnHost
	}
	return SourceNone
}

// executablesFrame renders the view. Each executable links to the flame
// graph of the stacks through it: the query's selection with the row's
// build id, or without one its mapping file (Grafana fills them in from
// the row: the hidden field mappingFileFilter is the file of rows without
// a build id, "" for the others, whose frames may have been mapped under
// other names).
func executablesFrame(r *Request, sums *executableSums, target linkTarget) *data.Frame {
	n := len(sums.exes)
	names, files, buildIDs, sources := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	filters := make([]string, n)
	shares, symbolized := make([]float64, n), make([]float64, n)
	values, frames := make([]int64, n), make([]int64, n)
	seen := make([]time.Time, n)
	for i, x := range sums.exes {
		names[i], files[i], buildIDs[i] = path.Base(x.file), x.file, x.key.buildID
		if x.file == "" {
			names[i] = x.key.buildID
		}
		if x.key.buildID == "" || sums.byFile {
			filters[i] = x.file
		}
		values[i], frames[i] = x.value, x.frames
		if sums.total > 0 {
			shares[i] = float64(x.value) / float64(sums.total)
		}
		if x.frames > 0 {
			symbolized[i] = float64(x.named+x.resolved) / float64(x.frames)
		}
		sources[i] = sums.source(x)
		seen[i] = time.Unix(x.lastSeen, 0).UTC()
	}
	query := profileQuery(r.ProfileType.ID, r.Matchers, r.SpanIDs, r.TraceID)
	query["mappingFile"] = "${__data.fields.mappingFileFilter}"
	if !sums.byFile {
		query["buildId"] = "${__data.fields.buildId}"
	}
	named := func(f *data.Field, title string) *data.Field {
		if f.Config == nil {
			f.Config = &data.FieldConfig{}
		}
		f.Config.DisplayNameFromDS = title
		return f
	}
	frame := data.NewFrame("executables",
		named(data.NewField("executable", nil, names).SetConfig(&data.FieldConfig{Links: target.links(LinkExecutableFlameGraph, query, true)}), "Executable"),
		named(data.NewField("buildId", nil, buildIDs), "Build ID"),
		named(data.NewField("samples", nil, shares).SetConfig(&data.FieldConfig{Unit: "percentunit"}), "Samples"),
		named(data.NewField("value", nil, values).SetConfig(&data.FieldConfig{Unit: flame.Unit(r.ProfileType.SampleUnit)}), "Value"),
		named(data.NewField("symbolized", nil, symbolized).SetConfig(&data.FieldConfig{Unit: "percentunit"}), "Symbolized"),
		named(data.NewField("frames", nil, frames), "Frames"),
		named(data.NewField("source", nil, sources), "Symbol source"),
		named(data.NewField("lastSeen", nil, seen), "Last seen"),
		named(data.NewField("mappingFile", nil, files), "Mapping file"),
		data.NewField("mappingFileFilter", nil, filters).SetConfig(&data.FieldConfig{Custom: map[string]any{"hidden": true}}),
	)
	return frame.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTable, Custom: map[string]any{"flamehouse": "executables"}})
}
