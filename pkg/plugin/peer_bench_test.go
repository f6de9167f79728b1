package plugin

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
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

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/query"
)

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
)

// BenchmarkPeer loads the same eBPF-shaped workloads three ways: into
// Flamehouse's tables through its in-process ingest, into the same tables
// through the Flamehouse Collector distribution's flamehouse exporter, and
// into the contrib ClickHouse exporter's otel_profiles table through a real
// Collector, all over OTLP/gRPC with acknowledgements that mean committed,
// with FLAMEHOUSE_PEER_SENDERS requests (default 32) in flight on each
// path, and prints a side-by-side table of each phase. Each phase loads
// fresh databases:
//
//   - sparse: profilegen's DefaultConfig at FLAMEHOUSE_PEER_RATE events/s
//     (default 10) over FLAMEHOUSE_PEER_HOURS hours (default 24), in
//     one-minute requests. It compares bytes on disk per event after
//     OPTIMIZE ... FINAL, ingest throughput, and the datasource's flame
//     graph and top-table latency over the last hour and the whole range
//     (p50 of FLAMEHOUSE_PEER_RUNS runs, default 3, with a fresh symbol
//     cache per query and warm).
//   - dense: DefaultConfig at its real rate (10k events/s) over
//     FLAMEHOUSE_PEER_DENSE_SECONDS seconds (default 600), in 5 s reports
//     as the workload's profilers send them: one per node of 10 pods. It
//     compares bytes on disk per event and ingest throughput.
//
// Query latency is measured on the ingest's and the exporter's tables (the
// Collector path writes the ingest's tables). In either phase every path
// must return the workload's CPU time, computed from the requests, as the
// whole range's flame graph root.
func BenchmarkPeer(b *testing.B) {
	chtest.Get(b) // skips under -short before generating anything
	sparse := runPeerPhase(b, newPeerWorkload(b))
	dense := runPeerPhase(b, newDenseWorkload(b, sparse.w))
	for _, s := range dense.sides() {
		root := s.flameRoot(b, dense.w.start, dense.w.queryTo)
		s.roots = map[string]int64{"flame-" + dense.w.allName(): root}
		require.Equal(b, dense.load.cpuNanos, root, "%s: the dense phase's flame graph root is its CPU time", s.name)
	}
	for b.Loop() {
		for _, s := range sparse.querySides() {
			s.runQueries(b, sparse.w)
		}
	}
	all := "flame-" + sparse.w.allName()
	sparse.collector.roots = map[string]int64{all: sparse.collector.flameRoot(b, sparse.w.start, sparse.w.queryTo)}
	for _, s := range sparse.sides() {
		require.Equal(b, sparse.load.cpuNanos, s.roots[all], "%s: the whole range's flame graph root is the workload's CPU time", s.name)
	}
	report := peerReport{sparse: sparse, dense: dense}
	report.metrics(b)
	fmt.Print(report.String())
}

// peerPhase is one workload loaded into fresh databases by each path.
type peerPhase struct {
	w                         *peerWorkload
	load                      *peerLoad
	ours, collector, exporter *peerSide
}

// runPeerPhase generates a workload, loads it into a freshly migrated
// Flamehouse database, through the Flamehouse Collector distribution into
// a new database (its exporter creates the schema) and through a contrib
// Collector into a fresh exporter database, and measures each on disk.
func runPeerPhase(b *testing.B, w *peerWorkload) *peerPhase {
	b.Helper()
	p := &peerPhase{w: w, load: w.generate(b), ours: newOursSide(b), collector: newCollectorSide(b), exporter: newExporterSide(b)}
	for _, s := range p.sides() { // one heavy job at a time
		s.load(b, p.load, w.senders)
		s.measureDisk(b)
	}
	return p
}

func (p *peerPhase) sides() []*peerSide { return []*peerSide{p.ours, p.collector, p.exporter} }

// querySides are the sides whose query latency is measured: one per schema.
func (p *peerPhase) querySides() []*peerSide { return []*peerSide{p.ours, p.exporter} }

// peerWorkload is one phase's data set and query ranges.
type peerWorkload struct {
	name           string // "sparse" or "dense"
	cfg            profilegen.Config
	span           time.Duration // end - start
	podsPerRequest int           // a report's pods per request
	runs           int
	senders        int       // requests in flight while loading
	start, end     time.Time // data: [start, end)
	queryTo        time.Time // end of the query ranges, off the minute as Grafana's "now"
}

// newPeerWorkload is the sparse phase: one-minute requests at a low rate,
// a minute split by pod when it holds more than peerMaxEventsPerRequest
// events.
func newPeerWorkload(b *testing.B) *peerWorkload {
	b.Helper()
	cfg := profilegen.DefaultConfig()
	cfg.SamplesPerSecond = benchEnv(b, "FLAMEHOUSE_PEER_RATE", 10)
	cfg.ReportInterval = peerReportInterval
	hours := benchEnv(b, "FLAMEHOUSE_PEER_HOURS", 24)
	events := int(float64(cfg.SamplesPerSecond) * cfg.ReportInterval.Seconds())
	groups := (events + peerMaxEventsPerRequest - 1) / peerMaxEventsPerRequest
	end := time.Now().UTC().Truncate(time.Minute)
	span := time.Duration(hours) * time.Hour
	return &peerWorkload{
		name: "sparse", cfg: cfg, span: span, podsPerRequest: (cfg.Pods + groups - 1) / groups,
		runs: benchEnv(b, "FLAMEHOUSE_PEER_RUNS", 3), senders: benchEnv(b, "FLAMEHOUSE_PEER_SENDERS", 32),
		start: end.Add(-span), end: end, queryTo: end.Add(17 * time.Second),
	}
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
	seconds := benchEnv(b, "FLAMEHOUSE_PEER_DENSE_SECONDS", 600)
	span := time.Duration(seconds) * time.Second
	require.Zero(b, span%cfg.ReportInterval, "FLAMEHOUSE_PEER_DENSE_SECONDS must be a multiple of the report interval, %s", cfg.ReportInterval)
	end := time.Now().UTC().Truncate(cfg.ReportInterval)
	return &peerWorkload{
		name: "dense", cfg: cfg, span: span, podsPerRequest: cfg.Pods / peerDenseNodes, runs: sparse.runs, senders: sparse.senders,
		start: end.Add(-span), end: end, queryTo: end.Add(17 * time.Second),
	}
}

// spanName is the data's time span: "24h", "120s".
func (w *peerWorkload) spanName() string {
	if w.span%time.Hour == 0 {
		return fmt.Sprintf("%dh", w.span/time.Hour)
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
}

// generate writes the workload's requests to a file, each prefixed by its
// length, so that both paths send the same bytes and the senders do not
// pay for generating them.
func (w *peerWorkload) generate(b *testing.B) *peerLoad {
	b.Helper()
	t0 := time.Now()
	l := &peerLoad{file: filepath.Join(b.TempDir(), "requests.bin")}
	f, err := os.Create(l.file)
	require.NoError(b, err)
	defer func() { require.NoError(b, f.Close()) }()
	out := bufio.NewWriterSize(f, 1<<20)
	g := profilegen.New(w.cfg)
	for at := w.start; at.Before(w.end); at = at.Add(w.cfg.ReportInterval) {
		for _, req := range g.NodeReports(at, w.podsPerRequest) {
			require.NoError(b, l.add(out, req))
		}
	}
	require.NoError(b, out.Flush())
	l.took = time.Since(t0)
	return l
}

// add appends one request to the file and counts what it holds.
func (l *peerLoad) add(out io.Writer, req *collectorpb.ExportProfilesServiceRequest) error {
	body, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("marshal a request: %w", err)
	}
	if len(body) > peerMaxRequestBytes {
		return fmt.Errorf("a request of %d bytes exceeds the Collector's 4 MiB gRPC receive limit: split the reports by pod", len(body))
	}
	l.maxBody = max(l.maxBody, len(body))
	st := countRequest(req)
	l.requests++
	l.events += st.events
	l.samples += st.samples
	l.cpuNanos += st.cpuNanos
	l.payload += int64(len(body))
	if err := binary.Write(out, binary.LittleEndian, uint32(len(body))); err != nil {
		return fmt.Errorf("write the request file: %w", err)
	}
	_, err = out.Write(body)
	return err
}

// requestStats is what one request holds.
type requestStats struct {
	samples, events, cpuNanos int64
}

// countRequest counts a request's samples and events and its CPU time
// (events × period), from the request alone.
func countRequest(req *collectorpb.ExportProfilesServiceRequest) requestStats {
	var st requestStats
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				for _, s := range p.GetSamples() {
					n := int64(len(s.GetTimestampsUnixNano()))
					st.samples++
					st.events += n
					st.cpuNanos += n * p.GetPeriod()
				}
			}
		}
	}
	return st
}

// bodies streams the request file's bodies into a channel.
func (l *peerLoad) bodies(ctx context.Context, buffer int) (<-chan []byte, <-chan error) {
	out, errc := make(chan []byte, buffer), make(chan error, 1)
	go func() {
		defer close(out)
		errc <- readBodies(ctx, l.file, out)
	}()
	return out, errc
}

func readBodies(ctx context.Context, file string, out chan<- []byte) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	in := bufio.NewReaderSize(f, 1<<20)
	for {
		var n uint32
		if err := binary.Read(in, binary.LittleEndian, &n); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the request file: %w", err)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(in, body); err != nil {
			return fmt.Errorf("read the request file: %w", err)
		}
		select {
		case out <- body:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
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

// peerSide is one schema: where its data goes and what was measured.
type peerSide struct {
	name string
	addr string // OTLP/gRPC endpoint
	db   string
	// table limits the disk measurement to one table ("": every table of
	// the database).
	table string
	conn  clickhouse.Conn
	f     *fixture

	loadTook, optimizeTook time.Duration
	rows                   int64 // sample rows stored
	disk                   []tableDisk
	lat                    map[string][]time.Duration
	roots                  map[string]int64
}

// newOursSide is Flamehouse's ingest with production defaults (batching,
// flush interval) on a migrated database, and a datasource on it.
func newOursSide(b *testing.B) *peerSide {
	b.Helper()
	conn, tables := migrated(b)
	cfg := ingest.DefaultConfig()
	cfg.Receiver.GRPCListenAddress, cfg.Receiver.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Writer.MinBatchSamples = peerMinBatchSamples(b)
	in, err := ingest.New(cfg, tables, conn, chtest.Get(b).NativeInserter(b), slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(b, err)
	require.NoError(b, services.StartAndAwaitRunning(context.Background(), in))
	b.Cleanup(func() { _ = services.StopAndAwaitTerminated(context.Background(), in) })
	settings := embeddedSettings(b, tables.Database)
	settings["profiles"].(map[string]any)["schema"] = "flamehouse" // built by embeddedSettings
	return &peerSide{
		name: "flamehouse", addr: in.GRPCAddress(), db: tables.Database, conn: conn,
		f: &fixture{ds: instance(b, settings, nil), ingest: in},
	}
}

// peerMinBatchSamples is both Flamehouse paths' writer min_batch_samples:
// FLAMEHOUSE_PEER_MIN_BATCH_SAMPLES, by default the writer's default.
// The 32 sparse requests in flight hold 19,200 rows, below the default:
// the writers then start when the senders go quiet (quiet_interval).
func peerMinBatchSamples(b *testing.B) int {
	return benchEnv(b, "FLAMEHOUSE_PEER_MIN_BATCH_SAMPLES", writer.DefaultConfig().MinBatchSamples)
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
	settings := embeddedSettings(b, db)
	settings["profiles"].(map[string]any)["schema"] = "flamehouse" // built by embeddedSettings
	return &peerSide{
		name: "collector", addr: col.GRPCEndpoint, db: db, conn: srv.Open(b),
		f: &fixture{ds: instance(b, settings, nil)},
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
	return &peerSide{
		name: "exporter", addr: col.GRPCEndpoint, db: db, table: query.DefaultOTelTable, conn: srv.Open(b),
		f: &fixture{ds: instance(b, otelSettings(b, db, query.DefaultOTelTable), nil)},
	}
}

// load sends every request with senders in flight and times it until the
// last acknowledgement.
func (s *peerSide) load(b *testing.B, l *peerLoad, senders int) {
	b.Helper()
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20), grpc.ForceCodec(rawCodec{})))
	require.NoError(b, err)
	defer func() { _ = cc.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	bodies, readErr := l.bodies(ctx, senders)
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
	require.NoError(b, <-readErr)
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

// tableDisk is one table's active parts.
type tableDisk struct {
	table              string
	rows, bytes, plain int64 // rows, bytes on disk, uncompressed bytes
}

// measureDisk merges every table of the side (OPTIMIZE TABLE ... FINAL)
// and reads its active parts' size from system.parts.
func (s *peerSide) measureDisk(b *testing.B) {
	b.Helper()
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
	rows, err := s.conn.Query(ctx, "SELECT table, toInt64(sum(rows)), toInt64(sum(bytes_on_disk)), toInt64(sum(data_uncompressed_bytes)) "+
		"FROM system.parts WHERE database = ? AND active AND has(?, table) GROUP BY table ORDER BY table", s.db, tables)
	require.NoError(b, err)
	defer rows.Close()
	for rows.Next() {
		var d tableDisk
		require.NoError(b, rows.Scan(&d.table, &d.rows, &d.bytes, &d.plain))
		s.disk = append(s.disk, d)
		if d.table == query.DefaultOTelTable || strings.HasSuffix(d.table, "profile_samples") {
			s.rows = d.rows
		}
	}
	require.NoError(b, rows.Err())
}

// diskBytes is the side's bytes on disk in all measured tables.
func (s *peerSide) diskBytes() int64 {
	var n int64
	for _, d := range s.disk {
		n += d.bytes
	}
	return n
}

// peerQuery is one measured query.
type peerQuery struct {
	name, kind string
	from       time.Time
}

// allName names the whole range ("whole-24h" by default).
func (w *peerWorkload) allName() string { return "whole-" + w.spanName() }

func (w *peerWorkload) queries() []peerQuery {
	return []peerQuery{
		{"flame-last-1h", query.TypeProfile, w.queryTo.Add(-time.Hour)},
		{"table-last-1h", query.TypeTable, w.queryTo.Add(-time.Hour)},
		{"flame-" + w.allName(), query.TypeProfile, w.start},
		{"table-" + w.allName(), query.TypeTable, w.start},
	}
}

// runQueries times each query runs times with a fresh symbol cache
// ("-cold") and then with the cache the previous run filled.
func (s *peerSide) runQueries(b *testing.B, w *peerWorkload) {
	b.Helper()
	s.lat, s.roots = map[string][]time.Duration{}, map[string]int64{}
	for _, q := range w.queries() {
		js := peerQueryJSON(q.kind)
		for _, warm := range []bool{false, true} {
			name := q.name
			if !warm {
				name += "-cold"
			}
			for range w.runs {
				if !warm {
					s.f.ds.symbols = query.NewSymbols(cachedFrameIDs, cachedLabels)
				}
				t0 := time.Now()
				r := s.f.query(b, js, q.from, w.queryTo)
				s.lat[name] = append(s.lat[name], time.Since(t0))
				require.NoError(b, r.Error, "%s %s", s.name, name)
				require.Positive(b, r.Frames[0].Rows(), "%s %s", s.name, name)
				if q.kind == query.TypeProfile {
					s.roots[q.name] = flameRootValue(r)
				}
			}
		}
	}
}

// peerQueryJSON is the measured query of a kind.
func peerQueryJSON(kind string) map[string]any {
	return map[string]any{"queryType": kind, "profileTypeId": cpuType, "labelSelector": `{service_name="checkout"}`, "maxNodes": 16384}
}

// flameRoot runs the flame graph query over [from, to) once and returns
// its root's value.
func (s *peerSide) flameRoot(b *testing.B, from, to time.Time) int64 {
	b.Helper()
	r := s.f.query(b, peerQueryJSON(query.TypeProfile), from, to)
	require.NoError(b, r.Error, "%s flame graph", s.name)
	require.Positive(b, r.Frames[0].Rows(), "%s flame graph", s.name)
	return flameRootValue(r)
}

// flameRootValue is a flame graph response's root value.
func flameRootValue(r backend.DataResponse) int64 {
	v, _ := r.Frames[0].Fields[1].ConcreteAt(0)
	return v.(int64) // the value field is int64
}

// p50 is a query's median time in milliseconds.
func (s *peerSide) p50(name string) float64 {
	d := slices.Clone(s.lat[name])
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}

// throughput is events per second from the first send to the last
// acknowledgement.
func (s *peerSide) throughput(l *peerLoad) float64 {
	return float64(l.events) / s.loadTook.Seconds()
}

// peerReport renders the comparison.
type peerReport struct {
	sparse, dense *peerPhase
}

// metrics reports the comparison as benchmark metrics: each phase's bytes
// per event, ingest throughput and data volume, prefixed with its name, and
// the sparse phase's query latency.
func (r *peerReport) metrics(b *testing.B) {
	b.Helper()
	for _, p := range []*peerPhase{r.sparse, r.dense} {
		events := float64(p.load.events)
		for _, s := range p.sides() {
			b.ReportMetric(float64(s.diskBytes())/events, p.w.name+"-"+s.name+"-bytes/event")
			b.ReportMetric(s.throughput(p.load), p.w.name+"-"+s.name+"-events/s")
		}
		b.ReportMetric(float64(p.exporter.diskBytes())/float64(p.ours.diskBytes()), p.w.name+"-bytes-ratio")
		b.ReportMetric(p.collector.throughput(p.load)/p.exporter.throughput(p.load), p.w.name+"-collector/exporter-events")
		b.ReportMetric(p.collector.throughput(p.load)/p.ours.throughput(p.load), p.w.name+"-collector/flamehouse-events")
		b.ReportMetric(events, p.w.name+"-events")
		b.ReportMetric(float64(p.load.samples), p.w.name+"-exporter-rows")
	}
	w := r.sparse.w
	all := "flame-" + w.allName()
	for _, s := range r.sparse.querySides() {
		b.ReportMetric(s.p50(all+"-cold"), s.name+"-"+all+"-ms")
		b.ReportMetric(s.p50("flame-last-1h-cold"), s.name+"-flame-last-1h-ms")
	}
	b.ReportMetric(r.sparse.exporter.p50(all+"-cold")/r.sparse.ours.p50(all+"-cold"), all+"-ratio")
}

// String is the side-by-side tables, one per phase.
func (r *peerReport) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nPeer benchmark: Flamehouse tables (ingest; Flamehouse Collector) vs the exporter's otel_profiles\n")
	fmt.Fprintf(&sb, "loading: %d requests in flight on each path, fresh databases per phase; queries (sparse, one per schema): p50 of %d runs\n",
		r.sparse.w.senders, r.sparse.w.runs)
	r.sparse.table(&sb, func(row func(string, float64, float64, float64)) {
		o, c, e, w := r.sparse.ours, r.sparse.collector, r.sparse.exporter, r.sparse.w
		for _, q := range w.queries() {
			for _, suffix := range []string{"-cold", ""} {
				row("p50 ms "+q.name+suffix, o.p50(q.name+suffix), math.NaN(), e.p50(q.name+suffix))
			}
		}
		for _, q := range w.queries() {
			if q.kind == query.TypeProfile {
				cr := math.NaN()
				if v, ok := c.roots[q.name]; ok {
					cr = float64(v) / 1e9
				}
				row("root "+q.name+" (CPU s)", float64(o.roots[q.name])/1e9, cr, float64(e.roots[q.name])/1e9)
			}
		}
	})
	r.dense.table(&sb, func(row func(string, float64, float64, float64)) {
		name := "flame-" + r.dense.w.allName()
		d := r.dense
		row("root "+name+" (CPU s)", float64(d.ours.roots[name])/1e9, float64(d.collector.roots[name])/1e9, float64(d.exporter.roots[name])/1e9)
	})
	return sb.String()
}

// table writes a phase's workload, its side-by-side table (more adds the
// phase's own rows) and its parts. The ratios compare the exporter and the
// Collector path with Flamehouse's ingest.
func (p *peerPhase) table(sb *strings.Builder, more func(row func(string, float64, float64, float64))) {
	w, l, o, c, e := p.w, p.load, p.ours, p.collector, p.exporter
	fmt.Fprintf(sb, "\n%s: %s at %d events/s (profilegen DefaultConfig: %d pods, %d stacks), %s requests of %d pods\n",
		w.name, w.spanName(), w.cfg.SamplesPerSecond, w.cfg.Pods, w.cfg.Stacks, w.cfg.ReportInterval, w.podsPerRequest)
	fmt.Fprintf(sb, "data: %d events in %d OTLP samples (the exporter's rows), %d requests (largest %.2f MiB), %.1f MB marshaled, CPU time %s; generated in %s\n\n",
		l.events, l.samples, l.requests, float64(l.maxBody)/(1<<20), float64(l.payload)/1e6, time.Duration(l.cpuNanos), l.took.Round(time.Second))
	cell := func(v float64) string {
		if math.IsNaN(v) {
			return fmt.Sprintf("%14s", "-")
		}
		return fmt.Sprintf("%14.*f", prec(v), v)
	}
	ratioCell := func(a, b float64) string {
		if math.IsNaN(a) || math.IsNaN(b) {
			return fmt.Sprintf("%10s", "-")
		}
		return fmt.Sprintf("%10.2f", ratio(a, b))
	}
	row := func(label string, fh, col, exp float64) {
		fmt.Fprintf(sb, "%-34s %s %s %s %s %s\n", label, cell(fh), cell(col), cell(exp), ratioCell(exp, fh), ratioCell(col, fh))
	}
	fmt.Fprintf(sb, "%-34s %14s %14s %14s %10s %10s\n", w.name+" "+w.spanName(), "flamehouse", "collector", "exporter", "exp/fh", "col/fh")
	row("sample rows stored", float64(o.rows), float64(c.rows), float64(e.rows))
	row("bytes on disk (MB)", float64(o.diskBytes())/1e6, float64(c.diskBytes())/1e6, float64(e.diskBytes())/1e6)
	row("bytes on disk per event", float64(o.diskBytes())/float64(l.events), float64(c.diskBytes())/float64(l.events), float64(e.diskBytes())/float64(l.events))
	row("ingest: load time (s)", o.loadTook.Seconds(), c.loadTook.Seconds(), e.loadTook.Seconds())
	row("ingest: events/s until acked", o.throughput(l), c.throughput(l), e.throughput(l))
	row("OPTIMIZE ... FINAL (s)", o.optimizeTook.Seconds(), c.optimizeTook.Seconds(), e.optimizeTook.Seconds())
	more(row)
	fmt.Fprintf(sb, "collector events/s: %.2f× the exporter's, %.2f× the ingest's\n", ratio(c.throughput(l), e.throughput(l)), ratio(c.throughput(l), o.throughput(l)))
	fmt.Fprintf(sb, "\nparts after OPTIMIZE ... FINAL (%s %s):\n", w.name, w.spanName())
	for _, s := range p.sides() {
		for _, d := range s.disk {
			fmt.Fprintf(sb, "  %-10s %-34s %12d rows %10.2f MB on disk %10.2f MB uncompressed %8.2f B/event\n",
				s.name, d.table, d.rows, float64(d.bytes)/1e6, float64(d.plain)/1e6, float64(d.bytes)/float64(l.events))
		}
	}
}

// prec picks decimals for a value in the table.
func prec(v float64) int {
	if v >= 100 || v == float64(int64(v)) {
		return 0
	}
	return 2
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
