package receiver

import (
	"math/bits"
	"sync"
)

// payloadPool holds the buffers of OTLP/gRPC payloads (a mem.BufferPool)
// in size classes an eighth of a power of two apart, so that a pooled
// payload wastes at most an eighth of its size. gRPC's default pool has
// tiers of 16 KiB, 32 KiB and 1 MiB: a 400 KiB node report would hold a
// 1 MiB buffer while it is converted and queued. Buffers of 4 KiB and
// less, and of more than 1 GiB, are not pooled.
type payloadPool struct {
	classes [maxClassExp * 8]sync.Pool
}

const (
	minPooled   = 4 << 10
	maxClassExp = 30 // 1 GiB
)

// sizeClass returns the pool class of a buffer of n bytes and the class's
// buffer size; ok is false for sizes that are not pooled.
func sizeClass(n int) (class, size int, ok bool) {
	if n <= minPooled || n > 1<<maxClassExp {
		return 0, 0, false
	}
	e := bits.Len(uint(n - 1)) // 2^(e-1) < n <= 2^e, e >= 13
	step := 1 << (e - 4)       // an eighth of 2^(e-1)
	k := (n + step - 1) / step // 9..16
	return (e-1)*8 + k - 9, k * step, true
}

// Get returns a buffer of length bytes.
func (p *payloadPool) Get(length int) *[]byte {
	class, size, ok := sizeClass(length)
	if !ok {
		b := make([]byte, length)
		return &b
	}
	if b, _ := p.classes[class].Get().(*[]byte); b != nil {
		*b = (*b)[:length]
		return b
	}
	b := make([]byte, length, size)
	return &b
}

// Put takes back a buffer that Get returned (others are left to the
// garbage collector).
func (p *payloadPool) Put(b *[]byte) {
	class, size, ok := sizeClass(cap(*b))
	if !ok || size != cap(*b) {
		return
	}
	p.classes[class].Put(b)
}
