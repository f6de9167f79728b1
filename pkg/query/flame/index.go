package flame

import "math/bits"

// childIndex is an open-addressing hash table (linear probing) from
// (parent, label) to the child node's id. Slots are 12 bytes and hold the
// key, so a lookup usually costs one cache miss. Node 0 (the root) is never
// a child, so node == 0 marks an empty slot.
type childIndex struct {
	slots []childSlot
	shift uint // 64 - log2(len(slots))
	used  int
}

type childSlot struct {
	parent, label, node int32
}

const (
	minIndexSlots = 1 << 10
	fibonacciHash = 0x9E3779B97F4A7C15 // 2^64 / golden ratio
)

// findOrInsert returns the node stored for (parent, label), storing next
// there first if there is none.
func (ix *childIndex) findOrInsert(parent, label, next int32) int32 {
	if 2*(ix.used+1) > len(ix.slots) {
		ix.grow()
	}
	mask := len(ix.slots) - 1
	for i := ix.home(parent, label); ; i = (i + 1) & mask {
		slot := &ix.slots[i]
		switch {
		case slot.node == 0:
			*slot = childSlot{parent: parent, label: label, node: next}
			ix.used++
			return next
		case slot.parent == parent && slot.label == label:
			return slot.node
		}
	}
}

// home is the slot where probing for (parent, label) starts.
func (ix *childIndex) home(parent, label int32) int {
	key := uint64(uint32(parent))<<32 | uint64(uint32(label))
	return int((key * fibonacciHash) >> ix.shift) //nolint:gosec // below len(slots)
}

// grow doubles the table (or allocates it) and re-inserts every entry.
func (ix *childIndex) grow() {
	old := ix.slots
	size := max(2*len(old), minIndexSlots)
	ix.slots = make([]childSlot, size)
	ix.shift = uint(64 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for _, slot := range old {
		if slot.node == 0 {
			continue
		}
		i := ix.home(slot.parent, slot.label)
		for ix.slots[i].node != 0 {
			i = (i + 1) & mask
		}
		ix.slots[i] = slot
	}
}
