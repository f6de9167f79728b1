package plugin

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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/dskit/services"
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
	"github.com/flamehouse/flamehouse/pkg/query"
)

// Peer benchmark knobs and fixed parameters.
const (
	// peerReportInterval is the time one request covers: a minute of the
	// service's events (the eBPF profiler reports every 5 s; a Collector
	// batches such reports before an exporter writes them).
	peerReportInterval = time.Minute
	// peerMaxEventsPerRequest splits a minute's events over several
	// requests (by pod) so that none exceeds the Collector's 4 MiB gRPC
	// message limit.
	peerMaxEventsPerRequest = 4000
)

// BenchmarkPeer loads the same eBPF-shaped workload (profilegen's
// DefaultConfig at FLAMEHOUSE_PEER_RATE events/s, default 10, over
// FLAMEHOUSE_PEER_HOURS hours, default 24, in one-minute requests) into
// Flamehouse's tables through its in-process ingest and into the contrib
// ClickHouse exporter's otel_profiles table through a real Collector, both
// over OTLP/gRPC with acknowledgements that mean committed, and compares:
// bytes on disk per event after OPTIMIZE ... FINAL, ingest throughput, and
// the datasource's flame graph and top-table latency over the last hour
// and the whole range (p50 of FLAMEHOUSE_PEER_RUNS runs, default 3, with
// a fresh symbol cache per query and warm). FLAMEHOUSE_PEER_SENDERS
// requests (default 32) are in flight on either path while loading. Both schemas must return the
// workload's CPU time, computed from the requests, as the whole range's
// flame graph root. It prints a side-by-side table.
func BenchmarkPeer(b *testing.B) {
	chtest.Get(b) // skips under -short before generating anything
	w := newPeerWorkload(b)
	load := w.generate(b)
	sides := []*peerSide{newOursSide(b), newExporterSide(b)}
	for _, s := range sides { // one heavy job at a time
		s.load(b, load, w.senders)
		s.measureDisk(b)
	}
	for b.Loop() {
		for _, s := range sides {
			s.runQueries(b, w)
		}
	}
	for _, s := range sides {
		require.Equal(b, load.cpuNanos, s.roots["flame-"+w.allName()], "%s: the whole range's flame graph root is the workload's CPU time", s.name)
	}
	report := peerReport{w: w, load: load, ours: sides[0], exporter: sides[1]}
	report.metrics(b)
	fmt.Print(report.String())
}

// peerWorkload is the benchmark's data set and query ranges.
type peerWorkload struct {
	cfg        profilegen.Config
	hours      int
	runs       int
	senders    int       // requests in flight while loading
	start, end time.Time // data: [start, end)
	queryTo    time.Time // end of both query ranges, off the minute as Grafana's "now"
}

func newPeerWorkload(b *testing.B) *peerWorkload {
	b.Helper()
	cfg := profilegen.DefaultConfig()
	cfg.SamplesPerSecond = benchEnv(b, "FLAMEHOUSE_PEER_RATE", 10)
	cfg.ReportInterval = peerReportInterval
	hours := benchEnv(b, "FLAMEHOUSE_PEER_HOURS", 24)
	end := time.Now().UTC().Truncate(time.Minute)
	return &peerWorkload{
		cfg: cfg, hours: hours, runs: benchEnv(b, "FLAMEHOUSE_PEER_RUNS", 3), senders: benchEnv(b, "FLAMEHOUSE_PEER_SENDERS", 32),
		start: end.Add(-time.Duration(hours) * time.Hour), end: end, queryTo: end.Add(17 * time.Second),
	}
}

// peerLoad is the generated data: marshaled requests in a file, and what
// they hold.
type peerLoad struct {
	file     string
	requests int
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
	groups := (g.Events() + peerMaxEventsPerRequest - 1) / peerMaxEventsPerRequest
	podsPerRequest := (w.cfg.Pods + groups - 1) / groups
	for at := w.start; at.Before(w.end); at = at.Add(w.cfg.ReportInterval) {
		for _, req := range g.NodeReports(at, podsPerRequest) {
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
	st := countRequest(req)
	l.requests++
	l.events += st.events
	l.samples += st.samples
	l.cpuNanos += st.cpuNanos
	l.payload += int64(len(body))
	if err := binary.Write(out, binary.LittleEndian, uint32(len(body))); err != nil { //nolint:gosec // G115: requests are far below 4 GiB
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
	return proto.Marshal(v.(proto.Message)) //nolint:forcetypeassert // gRPC passes messages
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	return proto.Unmarshal(data, v.(proto.Message)) //nolint:forcetypeassert // as above
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
	in, err := ingest.New(cfg, tables, conn, chtest.Get(b).NativeInserter(b), slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(b, err)
	require.NoError(b, services.StartAndAwaitRunning(context.Background(), in))
	b.Cleanup(func() { _ = services.StopAndAwaitTerminated(context.Background(), in) })
	settings := embeddedSettings(b, tables.Database)
	settings["profiles"].(map[string]any)["schema"] = "flamehouse" //nolint:forcetypeassert // built by embeddedSettings
	return &peerSide{
		name: "flamehouse", addr: in.GRPCAddress(), db: tables.Database, conn: conn,
		f: &fixture{ds: instance(b, settings, nil), ingest: in},
	}
}

// newExporterSide is a Collector with the ClickHouse exporter writing into
// a database of its own, and a datasource reading its table.
func newExporterSide(b *testing.B) *peerSide {
	b.Helper()
	srv := chtest.Get(b)
	bin := otelcoltest.Build(b, otelcoltest.ClickHouseCollector)
	db := srv.NewDatabase(b)
	col := otelcoltest.Start(b, bin, otelcoltest.Config{
		Exporters: map[string]any{"clickhouse": otelcoltest.ClickHouseExporter(srv, db)},
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
func (w *peerWorkload) allName() string { return fmt.Sprintf("whole-%dh", w.hours) }

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
		js := map[string]any{"queryType": q.kind, "profileTypeId": cpuType, "labelSelector": `{service_name="checkout"}`, "maxNodes": 16384}
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
					v, _ := r.Frames[0].Fields[1].ConcreteAt(0)
					s.roots[q.name] = v.(int64) //nolint:forcetypeassert // the value field is int64
				}
			}
		}
	}
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
	w              *peerWorkload
	load           *peerLoad
	ours, exporter *peerSide
}

// metrics reports the comparison as benchmark metrics.
func (r *peerReport) metrics(b *testing.B) {
	b.Helper()
	events := float64(r.load.events)
	all := "flame-" + r.w.allName()
	for _, s := range []*peerSide{r.ours, r.exporter} {
		b.ReportMetric(float64(s.diskBytes())/events, s.name+"-bytes/event")
		b.ReportMetric(s.throughput(r.load), s.name+"-events/s")
		b.ReportMetric(s.p50(all+"-cold"), s.name+"-"+all+"-ms")
		b.ReportMetric(s.p50("flame-last-1h-cold"), s.name+"-flame-last-1h-ms")
	}
	b.ReportMetric(float64(r.exporter.diskBytes())/float64(r.ours.diskBytes()), "bytes-ratio")
	b.ReportMetric(r.exporter.p50(all+"-cold")/r.ours.p50(all+"-cold"), all+"-ratio")
	b.ReportMetric(events, "events")
	b.ReportMetric(float64(r.load.samples), "exporter-rows")
}

// String is the side-by-side table.
func (r *peerReport) String() string {
	var sb strings.Builder
	w, l, o, e := r.w, r.load, r.ours, r.exporter
	fmt.Fprintf(&sb, "\nPeer benchmark: Flamehouse tables vs the exporter's otel_profiles\n")
	fmt.Fprintf(&sb, "workload: %d h at %d events/s (profilegen DefaultConfig: %d pods, %d stacks), %s requests\n",
		w.hours, w.cfg.SamplesPerSecond, w.cfg.Pods, w.cfg.Stacks, w.cfg.ReportInterval)
	fmt.Fprintf(&sb, "loading: %d requests in flight on either path; queries: p50 of %d runs\n", w.senders, w.runs)
	fmt.Fprintf(&sb, "data: %d events in %d OTLP samples (the exporter's rows), %d requests, %.1f MB marshaled, CPU time %s; generated in %s\n\n",
		l.events, l.samples, l.requests, float64(l.payload)/1e6, time.Duration(l.cpuNanos), l.took.Round(time.Second))
	row := func(label string, a, b float64) {
		fmt.Fprintf(&sb, "%-34s %14.*f %14.*f %10.2f\n", label, prec(a), a, prec(b), b, ratio(b, a))
	}
	fmt.Fprintf(&sb, "%-34s %14s %14s %10s\n", "", "flamehouse", "exporter", "exp/fh")
	row("sample rows stored", float64(o.rows), float64(e.rows))
	row("bytes on disk (MB)", float64(o.diskBytes())/1e6, float64(e.diskBytes())/1e6)
	row("bytes on disk per event", float64(o.diskBytes())/float64(l.events), float64(e.diskBytes())/float64(l.events))
	row("ingest: load time (s)", o.loadTook.Seconds(), e.loadTook.Seconds())
	row("ingest: events/s until acked", o.throughput(l), e.throughput(l))
	row("OPTIMIZE ... FINAL (s)", o.optimizeTook.Seconds(), e.optimizeTook.Seconds())
	for _, q := range w.queries() {
		for _, suffix := range []string{"-cold", ""} {
			row("p50 ms "+q.name+suffix, o.p50(q.name+suffix), e.p50(q.name+suffix))
		}
	}
	for _, q := range w.queries() {
		if q.kind == query.TypeProfile {
			row("root "+q.name+" (CPU s)", float64(o.roots[q.name])/1e9, float64(e.roots[q.name])/1e9)
		}
	}
	fmt.Fprintf(&sb, "\nparts after OPTIMIZE ... FINAL:\n")
	for _, s := range []*peerSide{o, e} {
		for _, d := range s.disk {
			fmt.Fprintf(&sb, "  %-10s %-34s %12d rows %10.2f MB on disk %10.2f MB uncompressed\n", s.name, d.table, d.rows, float64(d.bytes)/1e6, float64(d.plain)/1e6)
		}
	}
	return sb.String()
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
