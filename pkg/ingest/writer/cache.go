package writer

import (
	"encoding/binary"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// Kinds of metadata rows the cache remembers.
const (
	kindSeries byte = iota + 1
	kindStack
	kindFrame
	kindCatalog
	kindLabel
)

// cacheKey hashes a metadata row's identity: kind, tenant, service, id.
func cacheKey(kind byte, tenant, service string, id uint64) uint64 {
	var arr [128]byte
	b := append(arr[:0], kind)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(tenant)))
	b = append(b, tenant...)
	b = append(b, service...)
	b = binary.LittleEndian.AppendUint64(b, id)
	return xxhash.Sum64(b)
}

// symbolCache remembers which metadata rows were written in which period
// (days since 1970 for series, stacks and frames, hours for the catalogs),
// so that each is written once per period it is seen. It
// is bounded: when full it starts over, which only costs rewriting rows
// that ReplacingMergeTree deduplicates anyway.
type symbolCache struct {
	mu   sync.Mutex
	max  int
	days map[uint64]int32
}

func newSymbolCache(size int) *symbolCache {
	return &symbolCache{max: size, days: make(map[uint64]int32, min(size, 1<<16))}
}

func (c *symbolCache) has(key uint64, day int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.days[key]
	return ok && d == day
}

// known marks, under one lock, which keys are cached for the period.
func (c *symbolCache) known(keys []uint64, day int32, known []bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range keys {
		d, ok := c.days[k]
		known[i] = ok && d == day
	}
}

func (c *symbolCache) put(key uint64, day int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.days) >= c.max {
		clear(c.days)
	}
	c.days[key] = day
}

func (c *symbolCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.days)
}
