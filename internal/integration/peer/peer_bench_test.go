package peer

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/dskit/services"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/benchenv"
	"github.com/flamehouse/flamehouse/internal/benchmem"
	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/ebpfagent"
	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/pyroscopetest"
	"github.com/flamehouse/flamehouse/pkg/ingest"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/query/flame"
)

func TestMain(m *testing.M) { chtest.Main(m) }

// Peer benchmark knobs and fixed parameters.
const (
	// peerReportInterval is the time one request of the sparse phase
	// covers: a minute of the service's events (the eBPF profiler reports
	// every 5 s; a Collector batches such reports before an exporter
	// writes them).
	peerReportInterval = time.Minute
	// peerMaxEventsPerRequest splits a sparse minute's events over several
	// requests (by pod) so that none exceeds the Collector's 4 MiB gRPC
	// message limit.
	peerMaxEventsPerRequest = 4000
	// peerMaxRequestBytes is the Collector's gRPC receive limit (the OTLP
	// receiver's default max_recv_msg_size_mib, 4): no generated request
	// may exceed it.
	peerMaxRequestBytes = 4 << 20
	// peerDenseNodes is the number of nodes of the dense phase's pods
	// (profilegen's k8s.node.name is node-(pod mod 10)), each with a
	// profiler sending its own 5 s reports.
	peerDenseNodes = 10
	// peerExporterTimeout bounds one exporter INSERT. The server runs the
	// INSERTs in flight side by side, so each takes about their rows
	// together over its rate: in the dense phase, 32 × 5k rows at some 10k
	// rows/s on 2 cores, past otelcoltest's 30 s when the machine is shared.
	peerExporterTimeout = 10 * time.Minute
	// peerMaxNodes is every measured flame graph's max-nodes: the default
	// of Grafana's Pyroscope datasource and of ours.
	peerMaxNodes = 16384
	// peerTopFunctions is how many of the top functions (by self) the
	// answers check compares.
	peerTopFunctions = 20
	// peerPod is the pod of the filtered queries (every phase has it).
	peerPod = "checkout-003"
	// peerCompactTimeout bounds the wait for Pyroscope's compaction of a
	// phase's data (the dense phase's 6M profiles take tens of minutes on
	// 2 cores).
	peerCompactTimeout = 2 * time.Hour
)

// BenchmarkPeer loads the same eBPF-shaped workloads four ways, over
// OTLP/gRPC with FLAMEHOUSE_PEER_SENDERS requests (default 32) in flight on
// each path, and prints a side-by-side table of each phase:
//
//   - flamehouse: Flamehouse's in-process ingest into a migrated database;
//     acknowledged once the rows are committed to ClickHouse;
//   - collector: the Flamehouse Collector distribution's flamehouse
//     exporter into the same tables (no sending queue, no retries, so an
//     acknowledgement means committed);
//   - exporter: a real Collector with the contrib ClickHouse exporter into
//     its otel_profiles table (likewise);
//   - pyroscope: Grafana Pyroscope from ../shared/pyroscope
//     (pyroscopetest: started once, each phase its own tenant), whose
//     acknowledgement means that the request's profiles are in a segment
//     written to its object store (the local filesystem) and that the
//     segment's metadata is in its metastore (or its dead-letter queue,
//     from which it is added later): queryable.
//
// The phases, each in fresh databases and a Pyroscope tenant of its own:
//
//   - sparse: profilegen's DefaultConfig at FLAMEHOUSE_PEER_RATE events/s
//     (default 10) over FLAMEHOUSE_PEER_HOURS hours (default 24), in
//     one-minute requests;
//   - dense: DefaultConfig at its real rate (10k events/s) over
//     FLAMEHOUSE_PEER_DENSE_SECONDS seconds (default 600) in 5 s reports,
//     one per node of 10 pods;
//   - cluster: the W-cluster workload (profilegen.WCluster: 100 nodes of
//     40 processes, 25.6k events/s) over FLAMEHOUSE_PEER_CLUSTER_SECONDS
//     seconds (default 60) in 5 s node reports;
//   - agent: one host's profiler (profilegen.Agent: 20 processes, 40
//     events/s) over FLAMEHOUSE_PEER_AGENT_MINUTES minutes (default 60) in
//     5 s reports of the whole host.
//
// For each phase and system it measures events per second from the first
// send to the last acknowledgement; bytes on disk per event once each has
// merged what it will (Flamehouse's tables, every one, after OPTIMIZE
// ... FINAL; Pyroscope's blocks once compacted to the last level, see
// pyroscopetest.Compact); the peak heap per request in flight of the
// ingest and of Pyroscope; and flame graph latency (p50 of
// FLAMEHOUSE_PEER_RUNS runs, default 3) over the last 1 h, 24 h and 7 d of
// the service, alone and filtered by a pod, with max-nodes 16384, through
// each system's own query API: the datasource's QueryData for Flamehouse
// (and for the exporter's table in the sparse phase), Pyroscope's
// SelectMergeStacktraces over connect. Cold is, for the datasource, a
// new datasource every run (a fresh symbol cache; its connection open);
// for Pyroscope, the first run of a query.
//
// Answers must agree, or the benchmark fails: every system's flame graph
// root over a phase's range is the workload's CPU time computed from the
// requests, every measured flame graph's root is the same in each system,
// and the top functions by self (labels, self and total values) of
// Flamehouse's top table and of Pyroscope's merged profile are the same
// (peerAnswersAgree).
func BenchmarkPeer(b *testing.B) {
	chtest.Get(b) // skips under -short before generating anything
	pyro := pyroscopetest.Start(b, pyroscopetest.Options{Tenants: true})
	sparse := newPeerWorkload(b)
	selected := peerPhaseNames(b)
	workloads := []*peerWorkload{sparse, newDenseWorkload(b, sparse), newClusterWorkload(b, sparse), newAgentWorkload(b, sparse)}
	if selected["live"] { // the agent's availability is checked before any phase runs
		if live := newLiveWorkload(b, sparse); live != nil {
			workloads = append(workloads, live)
		}
	}
	var phases []*peerPhase
	for _, w := range workloads {
		if !selected[w.name] {
			continue
		}
		p := runPeerPhase(b, w, pyro)
		if w.record != nil {
			p.checkLiveAnswers(b)
			p.live.prefix = loadPrefix(b, w, p.load)
		} else {
			p.checkAnswers(b)
		}
		phases = append(phases, p)
	}
	for b.Loop() {
		for _, p := range phases {
			for _, s := range p.querySides() {
				s.runQueries(b, p.w)
			}
		}
	}
	for _, p := range phases {
		p.checkQueryRoots(b)
	}
	report := peerReport{phases: phases, pyroscopeMeta: dirBytes(b, filepath.Join(pyro.Dir, "data"))}
	report.metrics(b)
	fmt.Print(report.String())
}

// peerPhaseNames are the phases FLAMEHOUSE_PEER_PHASES names (a comma
// list; default all five, the live phase last: it records for
// FLAMEHOUSE_PEER_LIVE_MINUTES before it loads).
func peerPhaseNames(b *testing.B) map[string]bool {
	b.Helper()
	all := []string{"sparse", "dense", "cluster", "agent", "live"}
	names := all
	if v := os.Getenv("FLAMEHOUSE_PEER_PHASES"); v != "" {
		names = strings.Split(v, ",")
	}
	selected := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		require.Contains(b, all, n, "FLAMEHOUSE_PEER_PHASES")
		selected[n] = true
	}
	return selected
}

// peerPhase is one workload loaded into fresh databases by each path.
type peerPhase struct {
	w                                    *peerWorkload
	load                                 *peerLoad
	ours, collector, exporter, pyroscope *peerSide
	floor                                peerFloor
	top                                  map[string][]flame.Function // by side name
	live                                 *liveAnswers                // the live phase's per-service answers
}

// runPeerPhase generates a workload, loads it into a freshly migrated
// Flamehouse database, through the Flamehouse Collector distribution into
// a new database (its exporter creates the schema), through a contrib
// Collector into a fresh exporter database and into a Pyroscope tenant of
// its own, and measures each on disk.
func runPeerPhase(b *testing.B, w *peerWorkload, pyro *pyroscopetest.Server) *peerPhase {
	b.Helper()
	p := &peerPhase{
		w: w, load: w.generate(b), ours: newOursSide(b), collector: newCollectorSide(b), exporter: newExporterSide(b),
		pyroscope: newPyroscopeSide(pyro, "peer-"+w.name),
	}
	for _, s := range p.sides() { // one heavy job at a time
		s.load(b, p.load, w.senders)
		s.measureDisk(b, w)
	}
	p.floor = informationFloor(b, p.ours, p.load.events)
	return p
}

func (p *peerPhase) sides() []*peerSide {
	return []*peerSide{p.ours, p.collector, p.exporter, p.pyroscope}
}

// querySides are the sides whose query latency is measured: Flamehouse's
// tables (the Collector path writes the same ones), Pyroscope, and the
// exporter's table in the sparse phase.
func (p *peerPhase) querySides() []*peerSide {
	if p.w.name == "sparse" {
		return []*peerSide{p.ours, p.exporter, p.pyroscope}
	}
	return []*peerSide{p.ours, p.pyroscope}
}

// checkAnswers requires every side's flame graph root over the phase's
// range to be the workload's CPU time, and Flamehouse's and Pyroscope's
// top functions over it to agree.
func (p *peerPhase) checkAnswers(b *testing.B) {
	b.Helper()
	all := p.w.wholeQuery()
	for _, s := range p.sides() {
		root := s.flameRoot(b, all, p.w.queryTo)
		s.roots = map[string]int64{all.name: root}
		require.Equal(b, p.load.cpuNanos, root, "%s %s: the flame graph root over the whole range is the workload's CPU time", p.w.name, s.name)
	}
	p.top = map[string][]flame.Function{
		p.ours.name:      p.ours.topFunctions(b, all, p.w.queryTo),
		p.pyroscope.name: p.pyroscope.topFunctions(b, all, p.w.queryTo),
	}
	// Pyroscope keeps no frame kinds: it names a kernel frame bare where
	// the datasource marks it ("do_syscall_64 [kernel]"), so our labels
	// are compared without the marks (as the Pyroscope API's parity test
	// compares them).
	ours := peerAnswers{root: p.ours.roots[all.name], top: withoutMarks(p.top[p.ours.name])}
	theirs := peerAnswers{root: p.pyroscope.roots[all.name], top: p.top[p.pyroscope.name]}
	require.NoError(b, peerAnswersAgree(ours, theirs), "%s: Flamehouse's and Pyroscope's answers over the whole range", p.w.name)
}

// checkQueryRoots requires every measured flame graph (each range, with and
// without the pod filter) to have the same root in every system that ran
// it.
func (p *peerPhase) checkQueryRoots(b *testing.B) {
	b.Helper()
	for _, q := range p.w.queries() {
		if q.kind != query.TypeProfile {
			continue
		}
		want := p.ours.roots[q.name]
		require.Positive(b, want, "%s %s: flamehouse's root", p.w.name, q.name)
		for _, s := range p.querySides()[1:] {
			if s.pyro != nil && q.pyro == "" {
				continue // a filter Pyroscope has no label for
			}
			require.Equal(b, want, s.roots[q.name], "%s %s: %s's flame graph root is flamehouse's", p.w.name, q.name, s.name)
		}
	}
}

// peerWorkload is one phase's data set and query ranges.
type peerWorkload struct {
	name           string            // "sparse", "dense", "cluster", "agent" or "live"
	cfg            profilegen.Config // nil record: what generates the requests
	span           time.Duration     // end - start
	podsPerRequest int               // a report's pods per request
	runs           int
	senders        int       // requests in flight while loading
	start, end     time.Time // data: [start, end)
	queryTo        time.Time // end of the query ranges, off the minute as Grafana's "now"
	// service is the measured queries' service ("checkout"; the live
	// phase's busiest); filter the second label of their "-pod" variant.
	service string
	filter  peerFilter
	// record, where set, records the phase's requests instead of
	// generating them (the live phase), and sets start, end and queryTo.
	record func(b *testing.B, w *peerWorkload) *peerLoad
}

// peerFilter is a label and value in each system's terms: the
// datasource's label name, and Pyroscope's ("" where Pyroscope has no
// such label: the filtered queries then run on Flamehouse only).
type peerFilter struct {
	ours, pyroscope, value string
}

// newPeerWorkload is the sparse phase: one-minute requests at a low rate,
// a minute split by pod when it holds more than peerMaxEventsPerRequest
// events.
func newPeerWorkload(b *testing.B) *peerWorkload {
	b.Helper()
	cfg := profilegen.DefaultConfig()
	cfg.SamplesPerSecond = benchenv.Int(b, "FLAMEHOUSE_PEER_RATE", 10)
	cfg.ReportInterval = peerReportInterval
	hours := benchenv.Int(b, "FLAMEHOUSE_PEER_HOURS", 24)
	events := int(float64(cfg.SamplesPerSecond) * cfg.ReportInterval.Seconds())
	groups := (events + peerMaxEventsPerRequest - 1) / peerMaxEventsPerRequest
	return newWorkload(b, "sparse", cfg, time.Duration(hours)*time.Hour, (cfg.Pods+groups-1)/groups, nil)
}

// newDenseWorkload is the dense phase: DefaultConfig as it is (10k
// events/s, 5 s reports) over FLAMEHOUSE_PEER_DENSE_SECONDS seconds ending
// now, with the sparse phase's senders. Each interval is sent as
// peerDenseNodes requests of a node's share of the pods, as an eBPF
// profiler on each node sends its report (the whole service's 5 s would
// fit one request too, 2.8 MiB).
func newDenseWorkload(b *testing.B, sparse *peerWorkload) *peerWorkload {
	b.Helper()
	cfg := profilegen.DefaultConfig()
	span := time.Duration(benchenv.Int(b, "FLAMEHOUSE_PEER_DENSE_SECONDS", 600)) * time.Second
	return newWorkload(b, "dense", cfg, span, cfg.Pods/peerDenseNodes, sparse)
}

// newClusterWorkload is the W-cluster phase: every node's 5 s report of its
// 40 processes over FLAMEHOUSE_PEER_CLUSTER_SECONDS seconds.
func newClusterWorkload(b *testing.B, sparse *peerWorkload) *peerWorkload {
	b.Helper()
	span := time.Duration(benchenv.Int(b, "FLAMEHOUSE_PEER_CLUSTER_SECONDS", 60)) * time.Second
	return newWorkload(b, "cluster", profilegen.WCluster(), span, profilegen.WClusterPodsPerNode, sparse)
}

// newAgentWorkload is one host's profiler: a 5 s report of the whole host
// at 40 events/s over FLAMEHOUSE_PEER_AGENT_MINUTES minutes.
func newAgentWorkload(b *testing.B, sparse *peerWorkload) *peerWorkload {
	b.Helper()
	cfg := profilegen.Agent()
	span := time.Duration(benchenv.Int(b, "FLAMEHOUSE_PEER_AGENT_MINUTES", 60)) * time.Minute
	return newWorkload(b, "agent", cfg, span, cfg.Pods, sparse)
}

// newWorkload is a phase of span ending now (at a report boundary), with
// the sparse phase's runs and senders (like is nil for the sparse phase
// itself).
func newWorkload(b *testing.B, name string, cfg profilegen.Config, span time.Duration, podsPerRequest int, like *peerWorkload) *peerWorkload {
	b.Helper()
	require.Zero(b, span%cfg.ReportInterval, "%s: the span must be a multiple of the report interval, %s", name, cfg.ReportInterval)
	end := time.Now().UTC().Truncate(cfg.ReportInterval)
	w := &peerWorkload{
		name: name, cfg: cfg, span: span, podsPerRequest: podsPerRequest,
		start: end.Add(-span), end: end, queryTo: end.Add(17 * time.Second),
		service: "checkout", filter: peerFilter{ours: "k8s_pod_name", pyroscope: "k8s.pod.name", value: peerPod},
	}
	if like == nil {
		w.runs, w.senders = benchenv.Int(b, "FLAMEHOUSE_PEER_RUNS", 3), benchenv.Int(b, "FLAMEHOUSE_PEER_SENDERS", 32)
	} else {
		w.runs, w.senders = like.runs, like.senders
	}
	return w
}

// spanName is the data's time span: "24h", "120s".
func (w *peerWorkload) spanName() string {
	if w.span%time.Hour == 0 {
		return fmt.Sprintf("%dh", w.span/time.Hour)
	}
	if w.span%time.Minute == 0 {
		return fmt.Sprintf("%dm", w.span/time.Minute)
	}
	return fmt.Sprintf("%ds", w.span/time.Second)
}

// peerLoad is the generated data: marshaled requests in a file, and what
// they hold.
type peerLoad struct {
	file     string
	requests int
	maxBody  int   // largest marshaled request
	events   int64 // eBPF events (timestamps)
	samples  int64 // OTLP samples: the exporter's rows
	cpuNanos int64 // events × period
	payload  int64 // marshaled bytes
	took     time.Duration
	pids     map[int64]bool        // the processes (process.pid) of the requests
	prefix   *peerLoad             // the live phase's first peerLivePrefix (nil: none)
	services map[string]serviceCPU // the live phase's CPU time by service
}

// meanBody is the mean marshaled request size.
func (l *peerLoad) meanBody() float64 { return float64(l.payload) / float64(l.requests) }

// generate writes the workload's requests to a file, each prefixed by its
// length, so that every path gets the same bytes and the senders do not
// pay for generating them.
func (w *peerWorkload) generate(b *testing.B) *peerLoad {
	b.Helper()
	if w.record != nil {
		return w.record(b, w)
	}
	t0 := time.Now()
	l := newPeerLoad(b)
	g := profilegen.New(w.cfg)
	require.NoError(b, writeFile(l.file, func(out io.Writer) error {
		for at := w.start; at.Before(w.end); at = at.Add(w.cfg.ReportInterval) {
			for _, req := range g.NodeReports(at, w.podsPerRequest) {
				body, err := proto.Marshal(req)
				if err != nil {
					return fmt.Errorf("marshal a request: %w", err)
				}
				if err := l.add(out, body, ebpfagent.TallyRequest(req)); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	l.took = time.Since(t0)
	return l
}

// writeFile creates a file and writes it through a buffer with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(f, 1<<20)
	if err := write(out); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := out.Flush(); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// newPeerLoad is an empty request file in the benchmark's temporary
// directory.
func newPeerLoad(b *testing.B) *peerLoad {
	b.Helper()
	return &peerLoad{file: filepath.Join(b.TempDir(), "requests.bin"), pids: map[int64]bool{}}
}

// add appends one marshaled request to the file and counts what it holds
// (its tally, ebpfagent.TallyRequest's).
func (l *peerLoad) add(out io.Writer, body []byte, tally ebpfagent.Tally) error {
	if len(body) > peerMaxRequestBytes {
		return fmt.Errorf("a request of %d bytes exceeds the Collector's 4 MiB gRPC receive limit: split the reports by pod", len(body))
	}
	l.maxBody = max(l.maxBody, len(body))
	l.requests++
	for k, c := range tally {
		l.events += c.Events
		l.samples += c.Samples
		l.cpuNanos += c.EventsTimesPeriod
		l.pids[k.PID] = true
	}
	l.payload += int64(len(body))
	if err := binary.Write(out, binary.LittleEndian, uint32(len(body))); err != nil {
		return fmt.Errorf("write the request file: %w", err)
	}
	_, err := out.Write(body)
	return err
}

// bodies maps the request file outside the Go heap (so that the senders'
// bodies do not count in the ingest's heap) and streams its bodies, slices
// of the mapping, into a channel; the returned function releases the
// mapping once the senders are done.
func (l *peerLoad) bodies(ctx context.Context) (bodies <-chan []byte, release func() error, err error) {
	data, release, err := benchmem.MapFile(l.file)
	if err != nil {
		return nil, nil, err
	}
	out := make(chan []byte)
	go func() {
		defer close(out)
		for len(data) >= 4 {
			n := int(binary.LittleEndian.Uint32(data))
			body := data[4 : 4+n : 4+n]
			data = data[4+n:]
			select {
			case out <- body:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, release, nil
}

// exportMethod is ProfilesService/Export's full gRPC method name.
const exportMethod = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

// rawCodec sends pre-marshaled requests as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return proto.Marshal(v.(proto.Message)) // gRPC passes messages
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	return proto.Unmarshal(data, v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// peerSide is one system: where its data goes and what was measured.
type peerSide struct {
	name string
	addr string // OTLP/gRPC endpoint

	// A ClickHouse side: its database, and the one table that the disk
	// measurement is limited to ("": every table of the database); a
	// datasource on it.
	db       string
	table    string
	conn     clickhouse.Conn
	ds       *plugin.Datasource
	settings map[string]any // ds's, for a new one (coldDatasource)

	// A Pyroscope side: the server and the phase's tenant.
	pyro   *pyroscopetest.Server
	tenant string
	blocks []pyroscopetest.Block

	// inuse and live read the heap of the process that ingests (nil: not
	// measured), every heapEvery while loading: the heap in use (live
	// objects and the garbage not yet collected, as much as GOGC lets
	// grow over the whole process's heap) and the heap its last garbage
	// collection found live. settle, where the process is this one,
	// collects its garbage, so that the heap it keeps after the load
	// (caches of stacks, frames and series) can be told from what the
	// requests in flight took.
	inuse, live *heapGauge
	heapEvery   time.Duration
	settle      func()

	loadTook, optimizeTook time.Duration
	rows                   int64 // sample rows stored
	disk                   []tableDisk
	lat                    map[string][]time.Duration
	roots                  map[string]int64
}

// newOursSide is Flamehouse's ingest with production defaults (batching,
// flush interval) on a migrated database, and a datasource on it; its
// heap is this process's (the senders' bodies are outside the Go heap).
func newOursSide(b *testing.B) *peerSide {
	b.Helper()
	conn, tables := plugintest.Migrated(b)
	cfg := ingest.DefaultConfig()
	cfg.Receiver.GRPCListenAddress, cfg.Receiver.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Writer.MinBatchSamples = peerMinBatchSamples(b)
	in, err := ingest.New(cfg, tables, conn, chtest.Get(b).NativeInserter(b), slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(b, err)
	require.NoError(b, services.StartAndAwaitRunning(context.Background(), in))
	b.Cleanup(func() { _ = services.StopAndAwaitTerminated(context.Background(), in) })
	settings := plugintest.EmbeddedSettings(b, tables.Database)
	settings["profiles"].(map[string]any)["schema"] = "flamehouse" // built by EmbeddedSettings
	return &peerSide{
		name: "flamehouse", addr: in.GRPCAddress(), db: tables.Database, conn: conn,
		ds: plugintest.Instance(b, settings, nil), settings: settings,
		inuse: &heapGauge{read: benchmem.GoHeapInuse}, live: &heapGauge{read: benchmem.GoHeapLive},
		heapEvery: 20 * time.Millisecond, settle: func() { runtime.GC(); runtime.GC() },
	}
}

// peerMinBatchSamples is both Flamehouse paths' writer min_batch_samples:
// FLAMEHOUSE_PEER_MIN_BATCH_SAMPLES, by default the writer's default.
// The 32 sparse requests in flight hold 19,200 rows, below the default:
// the writers then start when the senders go quiet (quiet_interval).
func peerMinBatchSamples(b *testing.B) int {
	return benchenv.Int(b, "FLAMEHOUSE_PEER_MIN_BATCH_SAMPLES", writer.DefaultConfig().MinBatchSamples)
}

// newCollectorSide is the Flamehouse Collector distribution with the
// flamehouse exporter as the ingest is configured: Native inserts over HTTP,
// the writer's production defaults (500 ms flush), no retention (as
// migrated), no sending queue and no retries, so that an acknowledgement
// means committed, as on the other paths. It writes into a new database,
// whose schema the exporter creates.
func newCollectorSide(b *testing.B) *peerSide {
	b.Helper()
	srv := chtest.Get(b)
	bin := otelcoltest.BuildDistribution(b)
	db := srv.NewDatabase(b)
	exp := otelcoltest.FlamehouseExporter(srv, db)
	exp["timeout"] = peerExporterTimeout.String()
	exp["writer"] = map[string]any{"flush_interval": "500ms", "min_batch_samples": peerMinBatchSamples(b)}
	exp["retention"] = map[string]any{"samples": "0s", "minute": "0s", "hour": "0s"}
	col := otelcoltest.Start(b, bin, otelcoltest.Config{
		Exporters: map[string]any{"flamehouse": exp},
		Pipelines: map[string]otelcoltest.Pipeline{"profiles": {Exporters: []string{"flamehouse"}}},
	})
	settings := plugintest.EmbeddedSettings(b, db)
	settings["profiles"].(map[string]any)["schema"] = "flamehouse" // built by EmbeddedSettings
	return &peerSide{
		name: "collector", addr: col.GRPCEndpoint, db: db, conn: srv.Open(b),
		ds: plugintest.Instance(b, settings, nil), settings: settings,
	}
}

// newExporterSide is a Collector with the ClickHouse exporter writing into
// a database of its own, and a datasource reading its table.
func newExporterSide(b *testing.B) *peerSide {
	b.Helper()
	srv := chtest.Get(b)
	bin := otelcoltest.Build(b, otelcoltest.ClickHouseCollector)
	db := srv.NewDatabase(b)
	exp := otelcoltest.ClickHouseExporter(srv, db)
	exp["timeout"] = peerExporterTimeout.String()
	// clickhouse-go waits for a free pooled connection up to its dial
	// timeout (30 s): with 32 exports in flight on a busy machine that is
	// too short as well ("acquire conn timeout").
	exp["connection_params"] = map[string]any{"dial_timeout": peerExporterTimeout.String()}
	col := otelcoltest.Start(b, bin, otelcoltest.Config{
		Exporters: map[string]any{"clickhouse": exp},
		Pipelines: map[string]otelcoltest.Pipeline{"profiles": {Exporters: []string{"clickhouse"}}},
	})
	settings := plugintest.OTelSettings(b, db, query.DefaultOTelTable)
	return &peerSide{
		name: "exporter", addr: col.GRPCEndpoint, db: db, table: query.DefaultOTelTable, conn: srv.Open(b),
		ds: plugintest.Instance(b, settings, nil), settings: settings,
	}
}

// newPyroscopeSide is a tenant of the Pyroscope server; its heap is the
// server's, read from its metrics.
func newPyroscopeSide(srv *pyroscopetest.Server, tenant string) *peerSide {
	return &peerSide{
		name: "pyroscope", addr: srv.HTTPAddr, pyro: srv, tenant: tenant,
		inuse:     &heapGauge{read: pyroscopeGauge(srv.HeapInuse)},
		live:      &heapGauge{read: pyroscopeGauge(srv.HeapLive)},
		heapEvery: 200 * time.Millisecond,
	}
}

// pyroscopeGauge reads one of the Pyroscope server's heap gauges.
func pyroscopeGauge(read func(context.Context) (uint64, error)) func() (uint64, error) {
	return func() (uint64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return read(ctx)
	}
}

// heapGauge is one reading of the ingesting process's heap and what it
// showed during a load.
type heapGauge struct {
	read   func() (uint64, error)
	peak   *benchmem.Peak
	growth uint64 // peak while loading, above its level before
	kept   uint64 // after the load (settled), above its level before
}

// perRequest is the peak growth while loading, less what stays after it
// (kept: 0 where the heap cannot be settled), per request in flight, in
// multiples of the mean request (NaN when not measured).
func (g *heapGauge) perRequest(l *peerLoad, senders int) float64 {
	if g == nil {
		return nan
	}
	return float64(g.growth-min(g.growth, g.kept)) / (float64(senders) * l.meanBody())
}

// growthMB is the peak growth in MB (NaN when not measured).
func (g *heapGauge) growthMB() float64 {
	if g == nil {
		return nan
	}
	return float64(g.growth) / 1e6
}

// gauges are the side's heap gauges that are measured.
func (s *peerSide) gauges() []*heapGauge {
	var gs []*heapGauge
	for _, g := range []*heapGauge{s.inuse, s.live} {
		if g != nil {
			gs = append(gs, g)
		}
	}
	return gs
}

// load sends every request with senders in flight and times it until the
// last acknowledgement, sampling the ingesting process's heap meanwhile.
func (s *peerSide) load(b *testing.B, l *peerLoad, senders int) {
	b.Helper()
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20), grpc.ForceCodec(rawCodec{})))
	require.NoError(b, err)
	defer func() { _ = cc.Close() }()
	ctx, cancel := context.WithCancel(pyroscopetest.OutgoingTenant(context.Background(), s.tenant))
	defer cancel()
	if len(s.gauges()) > 0 {
		runtime.GC()
	}
	for _, g := range s.gauges() {
		g.peak, err = benchmem.Start(g.read, s.heapEvery)
		require.NoError(b, err, "%s: read the heap", s.name)
	}
	t0 := time.Now()
	bodies, release, err := l.bodies(ctx)
	require.NoError(b, err)
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for range senders {
		wg.Go(func() {
			for body := range bodies {
				if err := export(ctx, cc, body); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	s.loadTook = time.Since(t0)
	close(errs)
	for err := range errs {
		require.NoError(b, err, "%s: export", s.name)
	}
	require.NoError(b, release())
	for _, g := range s.gauges() {
		g.growth, err = g.peak.Stop()
		require.NoError(b, err, "%s: read the heap", s.name)
	}
	if s.settle != nil {
		s.settle()
		for _, g := range s.gauges() {
			after, err := g.read()
			require.NoError(b, err, "%s: read the heap", s.name)
			g.kept = after - min(after, g.peak.Base())
		}
	}
}

// export sends one pre-marshaled request and fails on a partial success.
func export(ctx context.Context, cc *grpc.ClientConn, body []byte) error {
	var resp collectorpb.ExportProfilesServiceResponse
	if err := cc.Invoke(ctx, exportMethod, body, &resp); err != nil {
		return err
	}
	if ps := resp.GetPartialSuccess(); ps.GetRejectedProfiles() > 0 {
		return fmt.Errorf("%d profiles rejected: %s", ps.GetRejectedProfiles(), ps.GetErrorMessage())
	}
	return nil
}

// tableDisk is one table's active parts, or one Pyroscope block.
type tableDisk struct {
	table              string
	rows, bytes, plain int64 // rows, bytes on disk, uncompressed bytes
	// projection is the part of bytes its projections take (the by_series
	// projections of the rollups kept by series, schema version 6).
	projection int64
}

// measureDisk merges what the side stored and measures it: a ClickHouse
// side's tables after OPTIMIZE TABLE ... FINAL, from system.parts; a
// Pyroscope side's blocks of the phase once compacted to the last level.
func (s *peerSide) measureDisk(b *testing.B, w *peerWorkload) {
	b.Helper()
	if s.pyro != nil {
		s.measureBlocks(b, w)
		return
	}
	ctx := context.Background()
	tables := []string{s.table}
	if s.table == "" {
		require.NoError(b, s.conn.QueryRow(ctx, "SELECT groupArray(name) FROM system.tables WHERE database = ? AND engine LIKE '%MergeTree'", s.db).Scan(&tables))
	}
	t0 := time.Now()
	for _, t := range tables {
		require.NoError(b, s.conn.Exec(ctx, "OPTIMIZE TABLE "+s.db+"."+t+" FINAL"), "optimize %s", t)
	}
	s.optimizeTook = time.Since(t0)
	// A part's bytes_on_disk counts its projections' parts, which are
	// listed apart too.
	rows, err := s.conn.Query(ctx, "SELECT p.table, toInt64(sum(p.rows)), toInt64(sum(p.bytes_on_disk)), toInt64(sum(p.data_uncompressed_bytes)), "+
		"toInt64(sum(ifNull(j.bytes, 0))) FROM system.parts AS p LEFT JOIN (SELECT table, parent_name, sum(bytes_on_disk) AS bytes "+
		"FROM system.projection_parts WHERE database = ? AND active GROUP BY table, parent_name) AS j ON p.table = j.table AND p.name = j.parent_name "+
		"WHERE p.database = ? AND p.active AND has(?, p.table) GROUP BY p.table ORDER BY p.table", s.db, s.db, tables)
	require.NoError(b, err)
	defer rows.Close()
	for rows.Next() {
		var d tableDisk
		require.NoError(b, rows.Scan(&d.table, &d.rows, &d.bytes, &d.plain, &d.projection))
		s.disk = append(s.disk, d)
		if d.table == query.DefaultOTelTable || strings.HasSuffix(d.table, "profile_samples") {
			s.rows = d.rows
		}
	}
	require.NoError(b, rows.Err())
}

// measureBlocks waits for Pyroscope to compact the phase's data to the
// last level and measures its blocks' objects on disk: their size must be
// what the metastore records.
func (s *peerSide) measureBlocks(b *testing.B, w *peerWorkload) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), peerCompactTimeout)
	defer cancel()
	t0 := time.Now()
	blocks, err := s.pyro.Compact(ctx, s.tenant, w.compactSelector(), w.start, w.end)
	require.NoError(b, err, "pyroscope %s: compact", w.name)
	s.optimizeTook = time.Since(t0)
	s.blocks = blocks
	for _, blk := range blocks {
		fi, err := os.Stat(blk.Path)
		require.NoError(b, err, "pyroscope %s: block %s", w.name, blk.ID)
		require.Equal(b, int64(blk.Size), fi.Size(), "pyroscope %s: block %s on disk is what the metastore records", w.name, blk.ID)
		s.disk = append(s.disk, tableDisk{table: fmt.Sprintf("block %s (level %d)", blk.ID, blk.Level), rows: 1, bytes: fi.Size()})
	}
}

// diskBytes is the side's bytes on disk in all measured tables or blocks.
func (s *peerSide) diskBytes() int64 {
	var n int64
	for _, d := range s.disk {
		n += d.bytes
	}
	return n
}

// dirBytes is the size of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	require.NoError(b, filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) { // deleted meanwhile
				return nil
			}
			return err
		}
		n += fi.Size()
		return nil
	}))
	return n
}

// peerQuery is one measured query.
type peerQuery struct {
	name, kind string
	from       time.Time
	limit      int // a table's rows (0: the datasource's default)
	// ours and pyro are its label selector in the datasource's and in
	// Pyroscope's terms (pyro "": not run on Pyroscope).
	ours, pyro string
}

// allName names the whole range ("whole-24h" by default).
func (w *peerWorkload) allName() string { return "whole-" + w.spanName() }

// queries are the measured queries: flame graphs over the last 1 h, 24 h
// and 7 d of the service, alone and filtered by a pod, and the top table
// over the last 1 h and 24 h (not on Pyroscope, which has no such query).
func (w *peerWorkload) queries() []peerQuery {
	var qs []peerQuery
	ours, pyro := w.serviceSelectors()
	oursPod, pyroPod := w.filteredSelectors()
	for _, r := range []struct {
		name string
		span time.Duration
	}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}} {
		qs = append(qs,
			peerQuery{name: "flame-" + r.name, kind: query.TypeProfile, from: w.end.Add(-r.span), ours: ours, pyro: pyro},
			peerQuery{name: "flame-" + r.name + "-pod", kind: query.TypeProfile, from: w.end.Add(-r.span), ours: oursPod, pyro: pyroPod})
	}
	return append(qs,
		peerQuery{name: "table-1h", kind: query.TypeTable, from: w.end.Add(-time.Hour), ours: ours},
		peerQuery{name: "table-24h", kind: query.TypeTable, from: w.end.Add(-24 * time.Hour), ours: ours})
}

// wholeQuery is the flame graph over the phase's whole range: of the
// service, or of every process the live phase recorded.
func (w *peerWorkload) wholeQuery() peerQuery {
	q := peerQuery{name: "flame-" + w.allName(), kind: query.TypeProfile, from: w.start, ours: "{}", pyro: "{}"}
	if w.record == nil {
		q.ours, q.pyro = w.serviceSelectors()
	}
	return q
}

// serviceSelectors select the measured service: service.name is
// service_name in both systems.
func (w *peerWorkload) serviceSelectors() (ours, pyro string) {
	sel := `{service_name=` + strconv.Quote(w.service) + `}`
	return sel, sel
}

// filteredSelectors select the measured service and the filter's label:
// Pyroscope keeps resource attributes' names ("k8s.pod.name", quoted as a
// UTF-8 label name); pyro is "" where it has no such label.
func (w *peerWorkload) filteredSelectors() (ours, pyro string) {
	f := w.filter
	ours = `{service_name=` + strconv.Quote(w.service) + `, ` + f.ours + `=` + strconv.Quote(f.value) + `}`
	if f.pyroscope != "" {
		pyro = `{service_name=` + strconv.Quote(w.service) + `, ` + strconv.Quote(f.pyroscope) + `=` + strconv.Quote(f.value) + `}`
	}
	return ours, pyro
}

// compactSelector selects the phase's data in Pyroscope's metastore: the
// service, or every service of the live phase.
func (w *peerWorkload) compactSelector() string {
	if w.record != nil {
		return `{service_name=~".+"}`
	}
	ours, _ := w.serviceSelectors()
	return ours
}

// runQueries times each query: on a ClickHouse side runs times on a new
// datasource ("-cold", coldDatasource) and runs times with the cache the previous
// run filled; on Pyroscope once ("-cold", its first run of the query) and
// then runs times. It keeps each flame graph's root.
func (s *peerSide) runQueries(b *testing.B, w *peerWorkload) {
	b.Helper()
	s.lat = map[string][]time.Duration{}
	if s.roots == nil {
		s.roots = map[string]int64{}
	}
	for _, q := range w.queries() {
		if s.pyro != nil && (q.kind != query.TypeProfile || q.pyro == "") {
			continue
		}
		for _, warm := range []bool{false, true} {
			name, runs := q.name, w.runs
			if !warm {
				name += "-cold"
				if s.pyro != nil {
					runs = 1
				}
			}
			for range runs {
				if !warm && s.ds != nil {
					s.ds.Dispose()
					s.ds = coldDatasource(b, s.settings)
				}
				t0 := time.Now()
				root := s.queryOnce(b, q, w.queryTo)
				s.lat[name] = append(s.lat[name], time.Since(t0))
				if q.kind == query.TypeProfile {
					s.roots[q.name] = root
				}
			}
		}
	}
}

// coldDatasource is a new datasource from JSON settings, as Grafana
// creates one when the plugin starts: nothing cached (stacks, frame
// labels, symbol tables, answers). A health check, which must pass, opens
// its connection and learns its user's tenant first, so that the time of a
// query on it is the query's own.
func coldDatasource(b *testing.B, settings map[string]any) *plugin.Datasource {
	b.Helper()
	ds := plugintest.Instance(b, settings, nil)
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(b, err)
	require.Equal(b, backend.HealthStatusOk, res.Status, res.Message)
	return ds
}

// queryOnce runs a query and returns its flame graph's root (0 for a
// table).
func (s *peerSide) queryOnce(b *testing.B, q peerQuery, to time.Time) int64 {
	b.Helper()
	if s.pyro != nil {
		return s.pyroscopeFlameRoot(b, q, to)
	}
	r := plugintest.Query(b, s.ds, peerQueryJSON(q), q.from, to)
	require.NoError(b, r.Error, "%s %s", s.name, q.name)
	require.NotEmpty(b, r.Frames, "%s %s", s.name, q.name)
	require.Positive(b, r.Frames[0].Rows(), "%s %s", s.name, q.name)
	if q.kind == query.TypeProfile {
		return plugintest.FlameRootValue(r)
	}
	return 0
}

// peerQueryJSON is a measured query for the datasource.
func peerQueryJSON(q peerQuery) map[string]any {
	js := map[string]any{"queryType": q.kind, "profileTypeId": plugintest.CPUType, "labelSelector": q.ours, "maxNodes": peerMaxNodes}
	if q.limit > 0 {
		js["limit"] = q.limit
	}
	return js
}

// flameRoot runs a flame graph query over [q.from, to) once and returns
// its root's value.
func (s *peerSide) flameRoot(b *testing.B, q peerQuery, to time.Time) int64 {
	b.Helper()
	return s.queryOnce(b, q, to)
}

// topFunctions is the side's top functions by self of a flame graph
// query's selector over [q.from, to): the datasource's top table, or
// Pyroscope's merged profile labelled as the datasource labels frames.
func (s *peerSide) topFunctions(b *testing.B, q peerQuery, to time.Time) []flame.Function {
	b.Helper()
	if s.pyro != nil {
		return s.pyroscopeTop(b, q.pyro, q.from, to)
	}
	r := plugintest.Query(b, s.ds, peerQueryJSON(peerQuery{kind: query.TypeTable, limit: peerTopFunctions, ours: q.ours}), q.from, to)
	require.NoError(b, r.Error, "%s top table", s.name)
	fr := r.Frames[0]
	fns := make([]flame.Function, fr.Rows())
	for i := range fns {
		label, _ := fr.Fields[0].ConcreteAt(i)
		self, _ := fr.Fields[1].ConcreteAt(i)
		total, _ := fr.Fields[2].ConcreteAt(i)
		fns[i] = flame.Function{Label: label.(string), Self: self.(int64), Total: total.(int64)} // TableFrame's field types
	}
	return fns
}

// p50 is a query's median time in milliseconds (NaN when not measured).
func (s *peerSide) p50(name string) float64 {
	d := slices.Clone(s.lat[name])
	if len(d) == 0 {
		return nan
	}
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}

// throughput is events per second from the first send to the last
// acknowledgement.
func (s *peerSide) throughput(l *peerLoad) float64 {
	return float64(l.events) / s.loadTook.Seconds()
}
