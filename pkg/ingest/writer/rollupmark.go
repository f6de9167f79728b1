package writer

import (
	"encoding/binary"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// Minute rollup marks (schema version 7, schema.MinuteRollupColumn). A
// per-minute rollup row sums the raw rows of one minute, stack and series;
// where an insert's rows of a service seldom share such a key (one host's
// many processes at a few dozen events a second), the rollup would keep
// nearly as many rows as the raw table and cost more bytes than it saves
// reads. The writer therefore decides per insert and service whether the
// per-minute rollups hold its rows: they do when the rows merge at least
// MinuteRollupMinMerge to one into minute keys. Rows left out are read
// from the raw table by queries (the mark tells which), so the decision
// changes bytes and read work, never answers. It is made from the insert's
// rows alone, so a retried insert marks its rows as the first attempt did.

// markGroup is what decides a row's mark: tenant, service, profile type.
type markGroup struct{ tenant, service, profileType string }

// markCount counts one group's rows and distinct minute keys; seed sets
// the group's key hashes apart from another group's.
type markCount struct {
	rows, keys int
	seed       uint64
}

// minuteKeys holds the minute keys seen in one insert, hashed; pooled, as
// an insert of many rows would otherwise grow a new map each time.
var minuteKeys = sync.Pool{New: func() any { return map[uint64]struct{}{} }}

// minuteRollupMarks returns, for every sample of ps in insert order,
// whether the per-minute rollups hold it: its group's rows number at least
// minMerge times its distinct (minute, stack, series) keys. minMerge <= 1
// marks every row (every group merges at least one to one).
func minuteRollupMarks(ps []*pending, minMerge float64) []bool {
	n := 0
	for _, p := range ps {
		n += len(p.batch.Samples)
	}
	marks := make([]bool, 0, n)
	if minMerge <= 1 {
		for range n {
			marks = append(marks, true)
		}
		return marks
	}
	groups := map[markGroup]int{}
	var counts []markCount
	rowGroup := make([]int, 0, n)
	keys := minuteKeys.Get().(map[uint64]struct{}) // the pool holds only these
	defer func() {
		clear(keys)
		minuteKeys.Put(keys)
	}()
	var last *model.SampleMeta
	lastGroup := 0
	var buf [24]byte
	eachSample(ps, func(s *model.Sample) {
		if s.Meta != last {
			g := markGroup{s.Meta.Series.Tenant, s.Meta.Series.Service, s.Meta.ProfileType}
			id, ok := groups[g]
			if !ok {
				id = len(counts)
				groups[g] = id
				counts = append(counts, markCount{seed: xxhash.Sum64String(g.tenant + "\x00" + g.service + "\x00" + g.profileType)})
			}
			last, lastGroup = s.Meta, id
		}
		rowGroup = append(rowGroup, lastGroup)
		c := &counts[lastGroup]
		c.rows++
		k := xxhash.Sum64(minuteKey(buf[:0], s)) ^ c.seed
		if _, seen := keys[k]; !seen {
			keys[k] = struct{}{}
			c.keys++
		}
	})
	for _, g := range rowGroup {
		c := counts[g]
		marks = append(marks, float64(c.rows) >= minMerge*float64(c.keys))
	}
	return marks
}

// minuteKey appends the bytes of a row's per-minute rollup key within its
// group: its minute, stack and series.
func minuteKey(b []byte, s *model.Sample) []byte {
	b = binary.LittleEndian.AppendUint64(b, floorMinute(s.Timestamp))
	b = binary.LittleEndian.AppendUint64(b, s.StackID)
	return binary.LittleEndian.AppendUint64(b, s.Meta.Series.ID)
}

// floorMinute is the start of a timestamp's minute (Unix seconds), as
// toStartOfMinute computes it for the DateTime the row is stored as.
func floorMinute(sec int64) uint64 {
	t := uint64(clampDateTime(sec))
	return t - t%60
}
