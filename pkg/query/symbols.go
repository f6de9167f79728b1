package query

import "sync"

// Symbols caches what never changes for an id: a stack's frame ids and a
// frame's label (ids are content hashes). Repeated queries — dashboards
// refreshing, a user narrowing a selector — then read only the sums per
// stack from ClickHouse. It is bounded: when full it starts over. Entries
// are kept per tenant. Safe for concurrent use; lookups take the lock once
// per query, not per id.
type Symbols struct {
	mu        sync.Mutex
	stacks    map[string]map[uint64][]uint64
	labels    map[string]map[uint64]string
	frameIDs  int // frame ids held by stacks
	labelsLen int
	maxIDs    int
	maxLabels int
}

// NewSymbols returns a cache holding up to maxFrameIDs frame ids of stacks
// (8 bytes each) and maxLabels frame labels.
func NewSymbols(maxFrameIDs, maxLabels int) *Symbols {
	return &Symbols{stacks: map[string]map[uint64][]uint64{}, labels: map[string]map[uint64]string{}, maxIDs: maxFrameIDs, maxLabels: maxLabels}
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

// labelsOf puts the cached label of every frame of the stacks into labels
// and returns the frame ids it does not hold, each once.
func (s *Symbols) labelsOf(tenant string, stacks []stackValue, labels map[uint64]string) (missing []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cached := s.labels[tenant]
	absent := map[uint64]bool{}
	for _, st := range stacks {
		for _, id := range st.frames {
			if _, ok := labels[id]; ok || absent[id] {
				continue
			}
			if l, ok := cached[id]; ok {
				labels[id] = l
				continue
			}
			absent[id] = true
			missing = append(missing, id)
		}
	}
	return missing
}

// addLabel caches a frame's label.
func (s *Symbols) addLabel(tenant string, id uint64, label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.labelsLen >= s.maxLabels {
		clear(s.labels)
		s.labelsLen = 0
	}
	cached := s.labels[tenant]
	if cached == nil {
		cached = map[uint64]string{}
		s.labels[tenant] = cached
	}
	if _, ok := cached[id]; !ok {
		s.labelsLen++
	}
	cached[id] = label
}
