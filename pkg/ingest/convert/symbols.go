package convert

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// attrSet is a resolved list of sample or profile attribute indices.
type attrSet struct {
	indices []int32    // aliases the request
	kvs     []model.KV // sorted by key
	err     error
}

// attributeSet resolves a list of attribute indices into a set id (an
// index of c.sets; 0 is the empty set). Keys must be unique within the
// list. Equal lists resolve once per request.
func (c *converter) attributeSet(indices []int32) (int32, error) {
	if len(indices) == 0 {
		return 0, nil
	}
	if slices.Equal(indices, c.sets[c.lastSet].indices) { // samples of a profile often share their list
		return c.lastSet, c.sets[c.lastSet].err
	}
	var buf [64]byte
	key := buf[:0]
	for _, i := range indices {
		key = binary.LittleEndian.AppendUint32(key, uint32(i))
	}
	h := xxhash.Sum64(key)
	id, ok := c.setIDs[h]
	if !ok || !slices.Equal(indices, c.sets[id].indices) {
		kvs, err := c.resolveAttributeSet(indices)
		id = int32(len(c.sets))
		c.sets = append(c.sets, attrSet{indices: indices, kvs: kvs, err: err})
		if !ok { // on a hash collision the list is resolved again each time: correct, and rare
			c.setIDs[h] = id
		}
	}
	c.lastSet = id
	return id, c.sets[id].err
}

func (c *converter) resolveAttributeSet(indices []int32) ([]model.KV, error) {
	out := make([]model.KV, 0, len(indices))
	for _, idx := range indices {
		key, value, err := c.attribute(idx)
		if err != nil {
			return nil, err
		}
		if key != "" {
			out = append(out, model.KV{Key: key, Value: value})
		}
	}
	slices.SortFunc(out, func(a, b model.KV) int { return strings.Compare(a.Key, b.Key) })
	for i := 1; i < len(out); i++ {
		if out[i].Key == out[i-1].Key {
			return nil, invalid(ReasonDuplicateAttribute, "attribute key %q appears twice", out[i].Key)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// usedStack is a stack that an accepted sample of a service refers to.
type usedStack struct {
	svc, stack int32
}

// usage records which stacks each service's samples use, so that a
// request's symbols are emitted once per service and stack.
type usage struct {
	services  []model.ServiceKey
	serviceID map[model.ServiceKey]int32
	// stackSvc is, per stack index, 1 + the service that used it last.
	stackSvc []int32
	used     []usedStack
}

func newUsage(stacks int) usage {
	return usage{serviceID: map[model.ServiceKey]int32{}, stackSvc: make([]int32, stacks)}
}

// serviceIndex numbers a series' service within the request.
func (u *usage) serviceIndex(s *model.Series) int32 {
	k := model.ServiceKey{Tenant: s.Tenant, Service: s.Service}
	id, ok := u.serviceID[k]
	if !ok {
		id = int32(len(u.services))
		u.services = append(u.services, k)
		u.serviceID[k] = id
	}
	return id
}

// use records that a service's sample refers to a stack.
func (u *usage) use(svc, stack int32) {
	if stack == 0 {
		stack = -1 // the empty stack has no dictionary entry
	} else if u.stackSvc[stack] == svc+1 {
		return
	}
	if stack > 0 {
		u.stackSvc[stack] = svc + 1
	}
	u.used = append(u.used, usedStack{svc: svc, stack: stack})
}

// unuse forgets the uses recorded after mark (a rejected profile's).
func (u *usage) unuse(mark int) {
	for _, s := range u.used[mark:] {
		if s.stack > 0 {
			u.stackSvc[s.stack] = 0
		}
	}
	u.used = u.used[:mark]
}

// emitSymbols adds the stacks and frames that accepted samples use to the
// batch, once per service (a frame shared by several locations may still
// appear more than once).
func (c *converter) emitSymbols(b *model.Batch) {
	slices.SortStableFunc(c.used, func(a, b usedStack) int { return int(a.svc) - int(b.svc) })
	locSvc := make([]int32, len(c.locs)) // 1 + the service whose frames were emitted last
	var sym *model.Symbols
	for i, u := range c.used {
		if i == 0 || u.svc != c.used[i-1].svc {
			sym = b.ServiceSymbols(c.services[u.svc])
		}
		if u.stack < 0 {
			sym.Stacks = append(sym.Stacks, model.Stack{ID: emptyStack.id})
			continue
		}
		s := &c.stacks[u.stack]
		sym.Stacks = append(sym.Stacks, model.Stack{ID: s.id, FrameIDs: c.stackIDs[s.start : s.start+s.n : s.start+s.n]})
		c.emitFrames(sym, u, s, locSvc)
	}
}

// emitFrames adds the frames of a stack's locations not yet emitted for
// the service, root first, up to the stack's (possibly cut) length.
func (c *converter) emitFrames(sym *model.Symbols, u usedStack, s *stackEntry, locSvc []int32) {
	left := int(s.n)
	if s.truncated {
		left--
		sym.Frames = append(sym.Frames, &truncatedFrame)
	}
	locs := c.req.Int32Slice(c.dict.Stacks[u.stack].LocationIndices)
	for i := len(locs) - 1; i >= 0 && left > 0; i-- {
		l := &c.locs[locs[i]]
		n := min(int(l.n), left)
		left -= n
		if n == int(l.n) { // a cut location is not marked: its other frames may be needed later
			if locSvc[locs[i]] == u.svc+1 {
				continue
			}
			locSvc[locs[i]] = u.svc + 1
		}
		for j := l.start; j < l.start+uint32(n); j++ {
			sym.Frames = append(sym.Frames, &c.frames[j])
		}
	}
}

// reserveRows sizes the batch's sample rows for the request's samples.
func (c *converter) reserveRows(b *model.Batch) {
	n := 0
	for ri := range c.req.Resources {
		for si := range c.req.Resources[ri].Scopes {
			for pi := range c.req.Resources[ri].Scopes[si].Profiles {
				n += len(c.req.Resources[ri].Scopes[si].Profiles[pi].Samples)
			}
		}
	}
	b.Samples = make([]model.Sample, 0, n)
}
