package flame

import (
	"cmp"
	"math"
	"slices"
)

// sortKey is a stack being sorted, with the key of the two labels a radix
// pass orders it by.
type sortKey struct {
	prefix uint64
	stack  int32
}

// minRadixSort is the number of stacks below which a comparison sort beats
// a radix pass.
const minRadixSort = 64

// sortedStacks returns the stack indexes in lexicographic order of labels.
func (t *Tree) sortedStacks() []int32 {
	keys := make([]sortKey, len(t.values))
	for i := range keys {
		keys[i].stack = index32(i)
	}
	t.sortFrom(0, keys, make([]sortKey, len(keys)))
	order := make([]int32, len(keys))
	for i, key := range keys {
		order[i] = key.stack
	}
	return order
}

// sortFrom sorts stacks that share their first depth labels (an MSD radix
// sort) by their next two labels, then each run of equal keys from depth+2
// on. Keys settle most comparisons without reading the stacks again. buf
// is scratch space as long as keys.
func (t *Tree) sortFrom(depth int, keys, buf []sortKey) {
	for i := range keys {
		keys[i].prefix = prefixKey(t.stack(keys[i].stack)[depth:])
	}
	if len(keys) < minRadixSort {
		slices.SortFunc(keys, func(a, b sortKey) int {
			if a.prefix != b.prefix {
				return cmp.Compare(a.prefix, b.prefix)
			}
			return slices.Compare(t.stack(a.stack)[depth:], t.stack(b.stack)[depth:])
		})
		return
	}
	radixSort(keys, buf)
	for start := 0; start < len(keys); {
		end := start + 1
		for end < len(keys) && keys[end].prefix == keys[start].prefix {
			end++
		}
		switch {
		case end-start == 1:
		case keys[start].prefix&math.MaxUint32 == 0:
			// The stacks end within these two labels (or hold the label
			// that collides with an absent one): compare them whole.
			run := keys[start:end]
			slices.SortFunc(run, func(a, b sortKey) int {
				return slices.Compare(t.stack(a.stack)[depth:], t.stack(b.stack)[depth:])
			})
		default:
			t.sortFrom(depth+2, keys[start:end], buf[start:end])
		}
		start = end
	}
}

// radixSort sorts keys by prefix, a byte at a time from the least
// significant (each pass stable), skipping the bytes all keys share. buf
// is scratch space as long as keys.
func radixSort(keys, buf []sortKey) {
	if len(keys) < 2 {
		return
	}
	var counts [8][256]int
	for _, key := range keys {
		for b := range counts {
			counts[b][digit(key.prefix, b)]++
		}
	}
	sorted := keys
	for b := range counts {
		if counts[b][digit(keys[0].prefix, b)] == len(keys) {
			continue
		}
		starts := &counts[b]
		next := 0
		for digit, count := range starts {
			starts[digit] = next
			next += count
		}
		for _, key := range sorted {
			d := digit(key.prefix, b)
			buf[starts[d]] = key
			starts[d]++
		}
		sorted, buf = buf, sorted
	}
	if &sorted[0] != &keys[0] {
		copy(keys, sorted)
	}
}

// digit is byte b of a key, the least significant first.
func digit(prefix uint64, b int) uint64 {
	return prefix >> (8 * b) & 0xff
}

// prefixKey packs the first two labels of a stack so that keys order like
// the labels: an absent label sorts first (label math.MinInt32 collides
// with it, which sortFrom settles by comparing whole stacks).
func prefixKey(stack []int32) uint64 {
	var key uint64
	for i := range 2 {
		key <<= 32
		if i < len(stack) {
			key |= uint64(uint32(stack[i]) ^ 1<<31) // reinterpreting the bits is the point: flipping the sign bit orders them like the int32
		}
	}
	return key
}

// sharedPrefixes returns, for each stack in order, how many leading labels
// it shares with the one before it.
func (t *Tree) sharedPrefixes(order []int32) []int {
	shared := make([]int, len(order))
	for i := 1; i < len(order); i++ {
		shared[i] = commonPrefix(t.stack(order[i-1]), t.stack(order[i]))
	}
	return shared
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
