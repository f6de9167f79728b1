package receiver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSizeClassesWasteAtMostAnEighth(t *testing.T) {
	prevClass, prevSize := -1, 0
	for n := minPooled + 1; n <= 64<<20; n += 1 + n/97 {
		class, size, ok := sizeClass(n)
		require.True(t, ok, n)
		require.GreaterOrEqual(t, size, n)
		require.LessOrEqual(t, size-n, n/8, "size %d for %d bytes", size, n)
		require.GreaterOrEqual(t, class, prevClass, "classes grow with the size")
		if class == prevClass {
			require.Equal(t, prevSize, size, "a class has one size")
		}
		again, same, _ := sizeClass(size)
		require.Equal(t, class, again, "a class's own size maps to it")
		require.Equal(t, size, same)
		prevClass, prevSize = class, size
	}
	for _, n := range []int{0, 1, minPooled, 1<<maxClassExp + 1} {
		_, _, ok := sizeClass(n)
		require.False(t, ok, n)
	}
	class, _, _ := sizeClass(1 << maxClassExp)
	require.Less(t, class, len(payloadPool{}.classes))
}

func TestPayloadPoolReusesBuffersOfAClass(t *testing.T) {
	var p payloadPool
	_, size, _ := sizeClass(400 << 10)
	reused := false
	// sync.Pool may drop what it is given (on a GC, and at random under
	// the race detector): one of a few round trips must reuse the buffer.
	for range 20 {
		b := p.Get(400 << 10)
		require.Len(t, *b, 400<<10)
		require.Equal(t, size, cap(*b))
		p.Put(b)
		c := p.Get(390 << 10) // same class, new length
		require.Len(t, *c, 390<<10)
		require.Equal(t, size, cap(*c))
		if &(*b)[:1][0] == &(*c)[:1][0] {
			reused = true
			break
		}
	}
	require.True(t, reused)
	foreign := make([]byte, 10, size+1)
	p.Put(&foreign) // not a class size: not kept
	require.NotEqual(t, size+1, cap(*p.Get(400 << 10)))
	small := p.Get(100)
	require.Len(t, *small, 100)
}
