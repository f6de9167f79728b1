// Package benchmem measures memory in benchmarks: the peak of a heap
// sampled while requests are in flight (this process's or a server's),
// and request bodies kept outside the Go heap, so that a benchmark's own
// copies of what it sends do not count as the receiving side's memory.
package benchmem

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// Peak samples a heap size while work is in flight.
type Peak struct {
	read func() (uint64, error)
	base uint64

	mu   sync.Mutex
	peak uint64
	err  error

	stop chan struct{}
	done chan struct{}
}

// Start reads the heap once as the base and then every interval until
// Stop.
func Start(read func() (uint64, error), every time.Duration) (*Peak, error) {
	base, err := read()
	if err != nil {
		return nil, err
	}
	p := &Peak{read: read, base: base, peak: base, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				v, err := read()
				p.mu.Lock()
				p.peak = max(p.peak, v)
				p.err = errors.Join(p.err, err)
				p.mu.Unlock()
			}
		}
	}()
	return p, nil
}

// Base is the heap read when sampling started.
func (p *Peak) Base() uint64 { return p.base }

// Stop ends sampling and returns how far the heap grew above its base at
// its peak.
func (p *Peak) Stop() (growth uint64, err error) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak - p.base, p.err
}

// GoHeapInuse is this process's heap in use (runtime.MemStats.HeapInuse):
// live objects and the garbage not yet collected, whose amount GOGC sets
// relative to the whole process's heap.
func GoHeapInuse() (uint64, error) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, nil
}

// goHeapLiveMetric is the runtime metric GoHeapLive reads.
const goHeapLiveMetric = "/gc/heap/live:bytes"

// GoHeapLive is this process's heap that the last garbage collection
// found live (runtime/metrics /gc/heap/live:bytes): what the process
// needs, without the garbage HeapInuse also counts.
func GoHeapLive() (uint64, error) {
	s := []metrics.Sample{{Name: goHeapLiveMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, fmt.Errorf("runtime metric %s is not supported", goHeapLiveMetric)
	}
	return s[0].Value.Uint64(), nil
}
