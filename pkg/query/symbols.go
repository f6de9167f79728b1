package query

import (
	"maps"
	"sync"
)

// Symbols caches what never changes for an id: a stack's frame ids and a
// frame's label (ids are content hashes). Repeated queries — dashboards
// refreshing, a user narrowing a selector — then read only the sums per
// stack from ClickHouse. It is bounded: when full it starts over. Entries
// are kept per tenant. Safe for concurrent use; lookups take the lock once
// per query, not per id.
//
// The label of an unsymbolized frame is the one it was stored with
// ("[libc.so.6]"); what a query needs to resolve it from the symbol store
// (its build id, address and mapping) is cached next to it, and the
// resolution itself is made again by every query (Resolver), so that a
// cached label never hides symbols uploaded later.
type Symbols struct {
	mu     sync.Mutex
	stacks map[string]map[uint64][]uint64
	// labels are keyed by labelKey: tenant and granularity.
	labels map[labelKey]map[uint64]string
	// natives are the unsymbolized frames with a build id, per tenant;
	// buildIDs their build ids.
	natives  map[string]map[uint64]nativeFrame
	buildIDs map[string]map[string]bool
	// kinds are the kinds of frames that are not kindCode, per tenant.
	kinds     map[string]map[uint64]frameKind
	frameIDs  int // frame ids held by stacks
	labelsLen int
	maxIDs    int
	maxLabels int
}

// labelKey names a set of cached labels: a tenant's, at function or line
// granularity.
type labelKey struct {
	tenant string
	lines  bool
}

// NewSymbols returns a cache holding up to maxFrameIDs frame ids of stacks
// (8 bytes each) and maxLabels frame labels.
func NewSymbols(maxFrameIDs, maxLabels int) *Symbols {
	return &Symbols{
		stacks: map[string]map[uint64][]uint64{}, labels: map[labelKey]map[uint64]string{}, natives: map[string]map[uint64]nativeFrame{},
		buildIDs: map[string]map[string]bool{}, kinds: map[string]map[uint64]frameKind{}, maxIDs: maxFrameIDs, maxLabels: maxLabels,
	}
}

// stacksOf puts the cached frame ids of stacks into out and returns the
// ids it does not hold.
func (s *Symbols) stacksOf(tenant string, ids []uint64, out map[uint64][]uint64) (missing []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cached := s.stacks[tenant]
	for _, id := range ids {
		if fr, ok := cached[id]; ok {
			out[id] = fr
		} else {
			missing = append(missing, id)
		}
	}
	return missing
}

// addStack caches a stack's frame ids (the slice is kept).
func (s *Symbols) addStack(tenant string, id uint64, frames []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frameIDs+len(frames) > s.maxIDs {
		clear(s.stacks)
		s.frameIDs = 0
	}
	cached := s.stacks[tenant]
	if cached == nil {
		cached = map[uint64][]uint64{}
		s.stacks[tenant] = cached
	}
	if _, ok := cached[id]; !ok {
		cached[id] = frames
		s.frameIDs += len(frames)
	}
}

// labelsOf puts the cached label of each frame id (distinct ids) into
// fn's labels, its kind into fn's kinds, and what resolves the
// unsymbolized ones into natives, and returns the ids it does not hold.
func (s *Symbols) labelsOf(key labelKey, ids []uint64, fn *frameNames, natives map[uint64]nativeFrame) (missing []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cached := s.labels[key]
	cachedNatives := s.natives[key.tenant]
	cachedKinds := s.kinds[key.tenant]
	for _, id := range ids {
		l, ok := cached[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		fn.labels[id] = l
		if len(cachedNatives) > 0 {
			if n, ok := cachedNatives[id]; ok {
				natives[id] = n
			}
		}
		if len(cachedKinds) > 0 {
			if k, ok := cachedKinds[id]; ok {
				fn.setKind(id, k)
			}
		}
	}
	return missing
}

// hasLabels reports whether the cache holds any frame label of a tenant at
// a granularity.
func (s *Symbols) hasLabels(key labelKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.labels[key]) > 0
}

// cachedFrame is what the cache keeps of a frame: its label, its kind and,
// for an unsymbolized frame with a build id (native.buildID != ""), what
// resolves it.
type cachedFrame struct {
	id     uint64
	label  string
	kind   frameKind
	native nativeFrame
}

// addLabels caches frames' labels, kinds and natives, under one lock (a
// lookup adds thousands at once; a new tenant's map is made for them).
func (s *Symbols) addLabels(key labelKey, frames []cachedFrame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range frames {
		if s.labelsLen >= s.maxLabels {
			clear(s.labels)
			clear(s.natives)
			clear(s.buildIDs)
			clear(s.kinds)
			s.labelsLen = 0
		}
		cached := s.labels[key]
		if cached == nil {
			cached = make(map[uint64]string, len(frames))
			s.labels[key] = cached
		}
		if _, ok := cached[f.id]; !ok {
			s.labelsLen++
		}
		cached[f.id] = f.label
		if f.kind != kindCode {
			kinds := s.kinds[key.tenant]
			if kinds == nil {
				kinds = map[uint64]frameKind{}
				s.kinds[key.tenant] = kinds
			}
			kinds[f.id] = f.kind
		}
		if f.native.buildID != "" {
			natives := s.natives[key.tenant]
			if natives == nil {
				natives = map[uint64]nativeFrame{}
				s.natives[key.tenant] = natives
			}
			natives[f.id] = f.native
			builds := s.buildIDs[key.tenant]
			if builds == nil {
				builds = map[string]bool{}
				s.buildIDs[key.tenant] = builds
			}
			builds[f.native.buildID] = true
		}
	}
}

// buildIDsOf is a copy of the build ids of a tenant's cached native
// frames.
func (s *Symbols) buildIDsOf(tenant string) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.buildIDs[tenant])
}
