package flame

import (
	"math"
	"slices"
)

// index32 converts a slice length or index to the int32 of a label, node or
// stack id.
func index32(n int) int32 {
	if n < 0 || n > math.MaxInt32 {
		panic("flame: more than 2^31 labels, stacks or nodes")
	}
	return int32(n)
}

// appendDoubling appends v, doubling the capacity when full: append's
// growth for large slices copies more often.
func appendDoubling[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(cap(s), 16))
	}
	return append(s, v)
}
