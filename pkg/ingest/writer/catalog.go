package writer

import (
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// The catalogs tell the query editor what exists in which hour: the series
// of each profile type (profile_catalog) and the sample attribute keys and
// values (profile_sample_labels). The writer derives them from the rows it
// writes, once per hour per entry (remembered in the cache), and commits
// them before the samples. Materialized views could derive them too, but
// cost ClickHouse a GROUP BY over every inserted row; here it is a map
// lookup per row.

// catalogScope is what a catalog entry belongs to.
type catalogScope struct {
	tenant, service, profileType string
}

type catalogRow struct {
	hour   int64 // Unix seconds at the start of the hour
	scope  catalogScope
	series uint64
}

type labelRow struct {
	hour  int64
	scope catalogScope
	kv    model.KV
}

// catalogs are the catalog rows a write adds, and their cache keys.
type catalogs struct {
	series []catalogRow
	labels []labelRow
	keys   []cachedEntry
	taken  map[uint64]bool
}

// cachedEntry is a cache key and the period (hours since 1970) it is for.
type cachedEntry struct {
	key    uint64
	period int32
}

// newCatalogs collects the catalog rows of a group of requests that were
// not written yet this hour.
func (w *Writer) newCatalogs(ps []*pending) *catalogs {
	c := &catalogs{taken: map[uint64]bool{}}
	type seriesKey struct {
		hour int64
		meta *model.SampleMeta
	}
	type labelKey struct {
		hour  int64
		scope int
		kv    model.KV
	}
	scopes := map[catalogScope]int{}
	metaScope := map[*model.SampleMeta]int{}
	scopeList := []catalogScope{}
	seenSeries := map[seriesKey]bool{}
	seenLabels := map[labelKey]bool{}
	for _, p := range ps {
		for i := range p.batch.Samples {
			s := &p.batch.Samples[i]
			hour := s.Timestamp - s.Timestamp%3600
			sk := seriesKey{hour, s.Meta}
			if !seenSeries[sk] {
				seenSeries[sk] = true
				scope := catalogScope{s.Meta.Series.Tenant, s.Meta.Series.Service, s.Meta.ProfileType}
				c.addSeries(w.cache, catalogRow{hour: hour, scope: scope, series: s.Meta.Series.ID})
			}
			if len(s.Attributes) == 0 {
				continue
			}
			id, ok := metaScope[s.Meta]
			if !ok {
				scope := catalogScope{s.Meta.Series.Tenant, s.Meta.Series.Service, s.Meta.ProfileType}
				if id, ok = scopes[scope]; !ok {
					id = len(scopeList)
					scopes[scope] = id
					scopeList = append(scopeList, scope)
				}
				metaScope[s.Meta] = id
			}
			for _, kv := range s.Attributes {
				lk := labelKey{hour, id, kv}
				if !seenLabels[lk] {
					seenLabels[lk] = true
					c.addLabel(w.cache, labelRow{hour: hour, scope: scopeList[id], kv: kv})
				}
			}
		}
	}
	return c
}

func hourPeriod(hour int64) int32 { return int32(hour / 3600) }

func (c *catalogs) addSeries(cache *symbolCache, r catalogRow) {
	key := cacheKey(kindCatalog, r.scope.tenant, r.scope.service+"\x00"+r.scope.profileType, r.series^uint64(r.hour))
	if !c.remember(cache, key, hourPeriod(r.hour)) {
		return
	}
	c.series = append(c.series, r)
}

func (c *catalogs) addLabel(cache *symbolCache, r labelRow) {
	key := cacheKey(kindLabel, r.scope.tenant, r.scope.service+"\x00"+r.scope.profileType+"\x00"+r.kv.Key+"\x00"+r.kv.Value, uint64(r.hour))
	if !c.remember(cache, key, hourPeriod(r.hour)) {
		return
	}
	c.labels = append(c.labels, r)
}

// remember notes a key to cache once written; false when already cached
// or already taken by this write. Keys include the period, so an entry of
// another hour is another key.
func (c *catalogs) remember(cache *symbolCache, key uint64, period int32) bool {
	if c.taken[key] || cache.has(key, period) {
		return false
	}
	c.taken[key] = true
	c.keys = append(c.keys, cachedEntry{key, period})
	return true
}

func (c *catalogs) rememberAll(cache *symbolCache) {
	for _, e := range c.keys {
		cache.put(e.key, e.period)
	}
}

func catalogRows(rows []catalogRow) *rowSet {
	return &rowSet{table: schema.Catalog, rows: len(rows), cols: []column{
		{name: "Hour", kind: colDateTime, num: func(i int) uint64 { return uint64(rows[i].hour) }},
		{name: "TenantId", kind: colLC, str: func(i int) string { return rows[i].scope.tenant }},
		{name: "ProfileType", kind: colLC, str: func(i int) string { return rows[i].scope.profileType }},
		{name: "ServiceName", kind: colLC, str: func(i int) string { return rows[i].scope.service }},
		{name: "SeriesId", kind: colUInt64, num: func(i int) uint64 { return rows[i].series }},
	}}
}

func labelRows(rows []labelRow) *rowSet {
	return &rowSet{table: schema.SampleLabels, rows: len(rows), cols: []column{
		{name: "Hour", kind: colDateTime, num: func(i int) uint64 { return uint64(rows[i].hour) }},
		{name: "TenantId", kind: colLC, str: func(i int) string { return rows[i].scope.tenant }},
		{name: "ProfileType", kind: colLC, str: func(i int) string { return rows[i].scope.profileType }},
		{name: "ServiceName", kind: colLC, str: func(i int) string { return rows[i].scope.service }},
		{name: "Key", kind: colLC, str: func(i int) string { return rows[i].kv.Key }},
		{name: "Value", kind: colString, str: func(i int) string { return rows[i].kv.Value }},
	}}
}
