package query

import "sync"

// Symbols caches what never changes for an id: a stack's frame ids and a
// frame's label (ids are content hashes). Repeated queries — dashboards
// refreshing, a user narrowing a selector — then read only the sums per
// stack from ClickHouse. It is bounded: when full it starts over. Safe
// for concurrent use.
type Symbols struct {
	mu        sync.Mutex
	stacks    map[symbolKey][]uint64
	labels    map[symbolKey]string
	frameIDs  int // frame ids held by stacks
	maxIDs    int
	maxLabels int
}

type symbolKey struct {
	tenant string
	id     uint64
}

// NewSymbols returns a cache holding up to maxFrameIDs frame ids of stacks
// (8 bytes each) and maxLabels frame labels.
func NewSymbols(maxFrameIDs, maxLabels int) *Symbols {
	return &Symbols{stacks: map[symbolKey][]uint64{}, labels: map[symbolKey]string{}, maxIDs: maxFrameIDs, maxLabels: maxLabels}
}

// stack returns a cached stack's frame ids.
func (s *Symbols) stack(tenant string, id uint64) ([]uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.stacks[symbolKey{tenant, id}]
	return f, ok
}

// addStack caches a stack's frame ids (the slice is kept).
func (s *Symbols) addStack(tenant string, id uint64, frames []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frameIDs+len(frames) > s.maxIDs {
		clear(s.stacks)
		s.frameIDs = 0
	}
	k := symbolKey{tenant, id}
	if _, ok := s.stacks[k]; !ok {
		s.stacks[k] = frames
		s.frameIDs += len(frames)
	}
}

// label returns a cached frame label.
func (s *Symbols) label(tenant string, id uint64) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.labels[symbolKey{tenant, id}]
	return l, ok
}

// addLabel caches a frame's label.
func (s *Symbols) addLabel(tenant string, id uint64, label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.labels) >= s.maxLabels {
		clear(s.labels)
	}
	s.labels[symbolKey{tenant, id}] = label
}
