package receiver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
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

	"github.com/flamehouse/flamehouse/internal/benchenv"
	"github.com/flamehouse/flamehouse/internal/benchmem"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
)

// preMarshaledCodec sends pre-marshaled requests as they are, so that the
// benchmark's senders (which share the machine) cost no marshaling.
type preMarshaledCodec struct{}

func (preMarshaledCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (preMarshaledCodec) Unmarshal(data []byte, v any) error {
	return proto.Unmarshal(data, v.(proto.Message))
}
func (preMarshaledCodec) Name() string { return "proto" }

// sender exports raw payloads over OTLP/gRPC.
type sender struct {
	cc *grpc.ClientConn
}

func newSender(b *testing.B, addr string) *sender {
	b.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20), grpc.ForceCodec(preMarshaledCodec{})))
	require.NoError(b, err)
	b.Cleanup(func() { _ = cc.Close() })
	return &sender{cc: cc}
}

// httpSender exports raw payloads over OTLP/HTTP (protobuf bodies of a
// declared length, the Collector's otlphttp exporter's shape).
type httpSender struct {
	client *http.Client
	url    string
}

func (s *httpSender) export(body []byte) (time.Duration, error) {
	t0 := time.Now()
	resp, err := s.client.Post(s.url, contentProtobuf, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	return time.Since(t0), err
}

// exporter is a benchmark's sender: OTLP/gRPC (sender) or OTLP/HTTP.
type exporter interface {
	export(body []byte) (time.Duration, error)
}

// newExporter returns the sender of FLAMEHOUSE_E2E_PROTOCOL: "grpc" (the
// default) or "http".
func newExporter(b *testing.B, r *Receiver) exporter {
	b.Helper()
	switch p := os.Getenv("FLAMEHOUSE_E2E_PROTOCOL"); p {
	case "", "grpc":
		return newSender(b, r.GRPCAddress())
	case "http":
		t := &http.Transport{MaxIdleConnsPerHost: 1000}
		b.Cleanup(t.CloseIdleConnections)
		return &httpSender{client: &http.Client{Transport: t}, url: "http://" + r.HTTPAddress() + ProfilesPath}
	default:
		b.Fatalf("FLAMEHOUSE_E2E_PROTOCOL=%q: use grpc or http", p)
		return nil
	}
}

func (s *sender) export(body []byte) (time.Duration, error) {
	var resp collectorpb.ExportProfilesServiceResponse
	t0 := time.Now()
	err := s.cc.Invoke(context.Background(), exportMethod, body, &resp)
	if err == nil && resp.GetPartialSuccess().GetRejectedProfiles() > 0 {
		err = fmt.Errorf("rejected: %s", resp.GetPartialSuccess().GetErrorMessage())
	}
	return time.Since(t0), err
}

// latencies collects acknowledgement times.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	b.Helper()
	slices.Sort(l.d)
	if n := len(l.d); n > 0 {
		b.ReportMetric(float64(l.d[n/2].Milliseconds()), "ack-p50-ms")
		b.ReportMetric(float64(l.d[n*99/100].Milliseconds()), "ack-p99-ms")
	}
}

// heapPeak samples the heap in use while requests are in flight, and
// counts what they allocate.
type heapPeak struct {
	before runtime.MemStats
	peak   *benchmem.Peak
}

func startHeapPeak(b *testing.B) *heapPeak {
	b.Helper()
	h := &heapPeak{}
	runtime.GC()
	runtime.ReadMemStats(&h.before)
	var err error
	h.peak, err = benchmem.Start(benchmem.GoHeapInuse, 20*time.Millisecond)
	require.NoError(b, err)
	return h
}

// report prints allocations per payload byte and the peak heap growth per
// payload byte of the requests in flight at once.
func (h *heapPeak) report(b *testing.B, requests, inFlight, payload int) {
	b.Helper()
	growth, err := h.peak.Stop()
	require.NoError(b, err)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if requests > 0 {
		b.ReportMetric(float64(after.TotalAlloc-h.before.TotalAlloc)/float64(requests)/float64(payload), "alloc/payload")
	}
	if growth > 0 {
		b.ReportMetric(float64(growth)/float64(inFlight*payload), "peak-heap/payload")
	}
}

// The W-cluster workload (profilegen.WCluster).
const (
	clusterNodes = profilegen.WClusterNodes
	podsPerNode  = profilegen.WClusterPodsPerNode
)

// clusterReports marshals the node reports of n intervals (generated once
// per process: the benchmark function runs more than once), kept outside
// the Go heap (benchmem.OffHeap).
func clusterReports(b *testing.B, n int) (bodies [][]byte, eventsPerReport, bytesPerReport int) {
	b.Helper()
	reportsMu.Lock()
	defer reportsMu.Unlock()
	if c, ok := reportsCache[n]; ok {
		return c.bodies, c.events, c.bytes
	}
	cfg := profilegen.WCluster()
	g := profilegen.New(cfg)
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Minute)
	total := 0
	for i := range n {
		for _, req := range g.NodeReports(start.Add(time.Duration(i)*cfg.ReportInterval), podsPerNode) {
			body, err := proto.Marshal(req)
			require.NoError(b, err)
			bodies = append(bodies, body)
			total += len(body)
		}
	}
	bodies, err := benchmem.OffHeap(bodies)
	require.NoError(b, err)
	reportsCache[n] = cachedReports{bodies, g.Events() / clusterNodes, total / len(bodies)}
	return bodies, g.Events() / clusterNodes, total / len(bodies)
}

type cachedReports struct {
	bodies        [][]byte
	events, bytes int
}

var (
	reportsMu    sync.Mutex
	reportsCache = map[int]cachedReports{}
)

// BenchmarkEndToEnd sends node reports of the W-cluster workload over
// OTLP/gRPC into the embedded engine on the same machine; a request is
// acknowledged only once its rows are committed, so an acknowledgement
// means queryable. The senders share the machine but send pre-marshaled
// bytes, kept outside the Go heap. Every report is sent once before
// timing, so that its stacks, frames and series are written (they are
// written once a day; the steady state writes samples).
//
//   - throughput: one sender per node (100; FLAMEHOUSE_E2E_SENDERS sets
//     fewer or more; FLAMEHOUSE_E2E_CONVERSIONS sets the receiver's
//     max_concurrent_conversions; FLAMEHOUSE_E2E_MAX_BATCH and
//     FLAMEHOUSE_E2E_WRITES the writer's max_batch_samples and
//     max_concurrent_writes; FLAMEHOUSE_E2E_PROTOCOL=http sends over
//     OTLP/HTTP instead of gRPC), each sending its next report once the
//     last one is acknowledged; one b.N is one 5 s interval of all 100
//     nodes.
//     Sustained samples/s, acknowledgement latency and memory per request.
//   - latency: the real pace, one node report every 50 ms;
//     received-to-queryable latency.
func BenchmarkEndToEnd(b *testing.B) {
	b.Run("throughput", benchThroughput)
	b.Run("latency", benchLatency)
}

func benchThroughput(b *testing.B) {
	senders := benchenv.Int(b, "FLAMEHOUSE_E2E_SENDERS", clusterNodes) // every node sends on its own
	cfg := DefaultConfig()                                             // production defaults, but for FLAMEHOUSE_E2E_CONVERSIONS
	cfg.MaxConcurrentConversions = benchenv.Int(b, "FLAMEHOUSE_E2E_CONVERSIONS", cfg.MaxConcurrentConversions)
	wcfg := writer.DefaultConfig() // but for FLAMEHOUSE_E2E_MAX_BATCH and FLAMEHOUSE_E2E_WRITES
	wcfg.MaxBatchSamples = benchenv.Int(b, "FLAMEHOUSE_E2E_MAX_BATCH", wcfg.MaxBatchSamples)
	wcfg.MaxConcurrentWrites = benchenv.Int(b, "FLAMEHOUSE_E2E_WRITES", wcfg.MaxConcurrentWrites)
	env := newEnvWith(b, cfg, wcfg)
	bodies, events, payload := clusterReports(b, 4)
	s := newExporter(b, env.r)
	warmUp(b, s, bodies) // every report the loop sends: its symbols are written before timing
	var lat latencies
	heap := startHeapPeak(b)
	b.ResetTimer()
	total := b.N * clusterNodes
	var next atomic.Int64
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				d, err := s.export(bodies[i%len(bodies)])
				if err != nil {
					b.Error(err)
					return
				}
				lat.add(d)
			}
		})
	}
	wg.Wait()
	elapsed := b.Elapsed()
	heap.report(b, len(lat.d), senders, payload)
	b.ReportMetric(float64(events*len(lat.d))/elapsed.Seconds(), "samples/s")
	b.ReportMetric(float64(payload)/float64(events), "wire-bytes/sample")
	lat.report(b)
	var parts uint64 // what the inserts leave the engine to merge, at the end of the run
	require.NoError(b, env.conn.QueryRow(context.Background(),
		"SELECT count() FROM system.parts WHERE database = ? AND active", env.tables.Database).Scan(&parts))
	b.ReportMetric(float64(parts), "active-parts")
}

func benchLatency(b *testing.B) {
	env := newEnvWith(b, DefaultConfig(), writer.DefaultConfig())
	bodies, events, _ := clusterReports(b, 2)
	s := newSender(b, env.r.GRPCAddress())
	warmUp(b, s, bodies[:clusterNodes])
	var lat latencies
	var wg sync.WaitGroup
	tick := time.NewTicker(profilegen.WCluster().ReportInterval / clusterNodes)
	defer tick.Stop()
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		body := bodies[i%len(bodies)]
		wg.Go(func() {
			d, err := s.export(body)
			if err != nil {
				b.Error(err)
				return
			}
			lat.add(d)
		})
	}
	wg.Wait()
	b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "samples/s")
	lat.report(b)
}

// warmUp sends each node's first report, so that its symbols are written.
func warmUp(b *testing.B, s exporter, bodies [][]byte) {
	b.Helper()
	var wg sync.WaitGroup
	for _, body := range bodies {
		wg.Go(func() {
			_, err := s.export(body)
			require.NoError(b, err)
		})
	}
	wg.Wait()
}
