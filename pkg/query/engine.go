package query

import (
	"context"
	"encoding/binary"
	"fmt"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// Engine runs queries against the Flamehouse tables.
type Engine struct {
	Conn   clickhouse.Conn
	Tables schema.Config
	// Tenant is the tenant whose rows the datasource reads.
	Tenant string
}

// framesPerLookup bounds the frame ids of one lookup (they travel as a
// parameter in the request line); past framesByService frames of known
// services, all of the services' frames are read instead.
const (
	framesPerLookup = 10000
	framesByService = 1000
)

// Run answers a request with its frames.
func (e *Engine) Run(ctx context.Context, r *Request) (data.Frames, error) {
	keys, err := e.sampleKeys(ctx, r)
	if err != nil {
		return nil, err
	}
	var frames data.Frames
	if r.Type != TypeMetrics {
		f, err := e.stacksFrame(ctx, r, keys)
		if err != nil {
			return nil, err
		}
		frames = append(frames, f)
	}
	if r.Type == TypeMetrics || r.Type == TypeBoth {
		series, err := e.series(ctx, r, keys)
		if err != nil {
			return nil, err
		}
		frames = append(frames, series...)
	}
	return frames, nil
}

// sampleKeys finds which attribute keys of the request's labels are
// sample attributes in its time range; the others are read from the
// series.
func (e *Engine) sampleKeys(ctx context.Context, r *Request) (map[string]bool, error) {
	var candidates []string
	for _, m := range r.Matchers {
		if !isServiceName(m.Name) && promotedColumns[labelName(m.Name)] == "" {
			candidates = append(candidates, attributeKeys(m.Name)...)
		}
	}
	for _, g := range r.GroupBy {
		if !isServiceName(g) && promotedColumns[labelName(g)] == "" {
			candidates = append(candidates, attributeKeys(g)...)
		}
	}
	known := map[string]bool{}
	if len(candidates) == 0 {
		return known, nil
	}
	var p params
	q := sampleKeysSQL(&p, e.Tables, e.Tenant, r.ProfileType.ID, r.From.Unix(), ceilSecond(r.To), candidates)
	rows, err := e.Conn.Query(ctx, q, p.args...)
	if err != nil {
		return nil, fmt.Errorf("look up sample attribute keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		known[k] = true
	}
	return known, rows.Err()
}

// stackValue is one stack's summed value and frame ids, root first.
type stackValue struct {
	value  int64
	frames []uint64
}

// stacksFrame answers a profile or table query.
func (e *Engine) stacksFrame(ctx context.Context, r *Request, keys map[string]bool) (*data.Frame, error) {
	stacks, f, err := e.stacks(ctx, r, keys)
	if err != nil {
		return nil, err
	}
	labels, err := e.frameLabels(ctx, f, stacks)
	if err != nil {
		return nil, err
	}
	names := flame.NewNames()
	ids := make(map[uint64]int32, len(labels))
	for id, label := range labels {
		ids[id] = names.ID(label)
	}
	unit := flame.Unit(r.ProfileType.SampleUnit)
	path := make([]int32, 0, 64)
	if r.Type == TypeTable {
		fns := flame.NewFunctions(names)
		for _, s := range stacks {
			fns.Add(resolve(path, s.frames, ids, names), s.value)
		}
		return flame.TableFrame(fns.Top(r.Limit), unit), nil
	}
	tree := flame.NewTree(names)
	for _, s := range stacks {
		tree.Add(resolve(path, s.frames, ids, names), s.value)
	}
	return tree.Frame(r.MaxNodes, unit), nil
}

// resolve turns frame ids into label ids; a frame that is not stored
// shows as "unknown".
func resolve(path []int32, frames []uint64, ids map[uint64]int32, names *flame.Names) []int32 {
	path = path[:0]
	for _, f := range frames {
		id, ok := ids[f]
		if !ok {
			id = names.ID("unknown")
		}
		path = append(path, id)
	}
	return path
}

// stacks sums the request's values per stack.
func (e *Engine) stacks(ctx context.Context, r *Request, keys map[string]bool) ([]stackValue, *filter, error) {
	var p params
	f := buildFilter(&p, e.Tables, e.Tenant, r, keys)
	segs := plan(r.From.Unix(), ceilSecond(r.To), f.needsRaw, 1)
	rows, err := e.Conn.Query(ctx, stacksSQL(&p, e.Tables, e.Tenant, f, segs), p.args...)
	if err != nil {
		return nil, nil, fmt.Errorf("sum samples per stack: %w", err)
	}
	defer rows.Close()
	var out []stackValue
	var ids []uint64 // one backing array for every stack's frame ids
	var packed string
	for rows.Next() {
		var id uint64
		var s stackValue
		if err := rows.Scan(&id, &s.value, &packed); err != nil {
			return nil, nil, err
		}
		if len(packed)%8 != 0 {
			return nil, nil, fmt.Errorf("stack %d: frame ids of %d bytes", id, len(packed))
		}
		start := len(ids)
		for i := 0; i < len(packed); i += 8 {
			ids = append(ids, binary.LittleEndian.Uint64([]byte(packed[i:i+8])))
		}
		s.frames = ids[start:len(ids):len(ids)]
		out = append(out, s)
	}
	return out, f, rows.Err()
}

// frameLabels names every frame of the stacks.
func (e *Engine) frameLabels(ctx context.Context, f *filter, stacks []stackValue) (map[uint64]string, error) {
	seen := map[uint64]bool{}
	var ids []uint64
	for _, s := range stacks {
		for _, id := range s.frames {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	labels := make(map[uint64]string, len(ids))
	if len(f.services) > 0 && len(ids) > framesByService {
		// Many frames of known services: all of the services' frames in one
		// lookup cost less than the ids in chunks.
		return labels, e.loadFrames(ctx, f, nil, labels)
	}
	slices.Sort(ids)
	for chunk := range slices.Chunk(ids, framesPerLookup) {
		if err := e.loadFrames(ctx, f, chunk, labels); err != nil {
			return nil, err
		}
	}
	return labels, nil
}

func (e *Engine) loadFrames(ctx context.Context, f *filter, ids []uint64, labels map[uint64]string) error {
	var p params
	rows, err := e.Conn.Query(ctx, framesSQL(&p, e.Tables, e.Tenant, f, ids), p.args...)
	if err != nil {
		return fmt.Errorf("load frames: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uint64
		var label string
		if err := rows.Scan(&id, &label); err != nil {
			return err
		}
		labels[id] = label
	}
	return rows.Err()
}

// series answers a metrics query: one frame per group, the top Limit
// groups by total.
func (e *Engine) series(ctx context.Context, r *Request, keys map[string]bool) (data.Frames, error) {
	var p params
	f := buildFilter(&p, e.Tables, e.Tenant, r, keys)
	groups, seriesCols, groupRaw := groupExprs(&p, r.GroupBy, keys)
	step := int64(r.Step / time.Second)
	from, to := floorTo(r.From.Unix(), step), ceilSecond(r.To)
	segs := plan(from, to, f.needsRaw || groupRaw, step)
	rows, err := e.Conn.Query(ctx, seriesSQL(&p, e.Tables, e.Tenant, f, segs, step, groups, seriesCols, groupRaw), p.args...)
	if err != nil {
		return nil, fmt.Errorf("sum samples per interval: %w", err)
	}
	defer rows.Close()
	acc := newSeriesAccumulator(r)
	for rows.Next() {
		var t, v int64
		labels := make([]string, len(groups))
		dest := []any{&t}
		for i := range labels {
			dest = append(dest, &labels[i])
		}
		dest = append(dest, &v)
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		acc.add(labels, t, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return acc.frames(), nil
}

// ceilSecond is the end of a range in whole seconds (exclusive).
func ceilSecond(t time.Time) int64 {
	if t.Nanosecond() > 0 {
		return t.Unix() + 1
	}
	return t.Unix()
}

// FrameLabel names a frame at function granularity, as pprof -top does:
// the function name, else its system name, else, for unsymbolized code,
// the mapped file's base name in brackets ("[libc.so.6]"), else the file,
// else the address.
func FrameLabel(f *model.Frame) string {
	switch {
	case f.FunctionName != "":
		return f.FunctionName
	case f.SystemName != "":
		return f.SystemName
	case f.MappingFile != "":
		return "[" + path.Base(f.MappingFile) + "]"
	case f.FileName != "":
		return f.FileName
	}
	return "0x" + strconv.FormatUint(f.Address, 16)
}
