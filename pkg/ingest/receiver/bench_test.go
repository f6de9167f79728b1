package receiver

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
)

// BenchmarkEndToEnd sends eBPF-shaped reports (the W-service workload: one
// service, 100 pods, 50k stacks) over OTLP/gRPC from concurrent senders
// into the embedded engine, each acknowledged only once committed. It
// reports sustained samples/s, the received-to-queryable latency (an
// acknowledgement means the rows are queryable) and memory per request.
func BenchmarkEndToEnd(b *testing.B) {
	const senders = 4
	env := newEnv(b, func(c *Config) { c.RequestTimeout = 60 * time.Second })
	cfg := profilegen.DefaultConfig()
	g := profilegen.New(cfg)
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Minute)
	reports := make([]*collectorpb.ExportProfilesServiceRequest, 8)
	payload := 0
	for i := range reports {
		reports[i] = g.Report(start.Add(time.Duration(i) * cfg.ReportInterval))
		payload += proto.Size(reports[i])
	}
	payload /= len(reports)
	cc, err := grpc.NewClient(env.r.GRPCAddress(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	require.NoError(b, err)
	defer func() { _ = cc.Close() }()
	client := collectorpb.NewProfilesServiceClient(cc)

	var (
		mu        sync.Mutex
		latencies []time.Duration
		next      atomic.Int64
		peakHeap  atomic.Uint64
	)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	stopSampling := make(chan struct{})
	go func() { // sample the heap while requests are in flight
		var m runtime.MemStats
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peakHeap.Load() {
					peakHeap.Store(m.HeapInuse)
				}
			}
		}
	}()
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for range senders {
			wg.Go(func() {
				i := next.Add(1)
				req := reports[int(i)%len(reports)]
				t0 := time.Now()
				_, err := client.Export(context.Background(), req)
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				latencies = append(latencies, time.Since(t0))
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	close(stopSampling)
	elapsed := b.Elapsed()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	requests := len(latencies)
	events := float64(g.Events()) * float64(requests)
	slices.Sort(latencies)
	b.ReportMetric(events/elapsed.Seconds(), "samples/s")
	if requests > 0 {
		b.ReportMetric(float64(latencies[requests/2].Milliseconds()), "ack-p50-ms")
		b.ReportMetric(float64(latencies[requests*99/100].Milliseconds()), "ack-p99-ms")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(requests)/float64(payload), "alloc/payload")
	}
	if peak := peakHeap.Load(); peak > before.HeapInuse {
		b.ReportMetric(float64(peak-before.HeapInuse)/float64(senders*payload), "peak-heap/payload")
	}
	b.ReportMetric(float64(payload)/float64(g.Events()), "wire-bytes/sample")
}
