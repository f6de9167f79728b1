// Package pyroscopetest runs a real Grafana Pyroscope server, the peer
// that benchmarks compare Flamehouse with. Pyroscope is AGPL: it runs as a
// separate process from the single binary that the shared test harnesses
// hold (../shared/pyroscope/pyroscope-linux-amd64.xz beside the checkout,
// or the binary or .xz that FLAMEHOUSE_PYROSCOPE names), never as a
// dependency; only its Apache-2.0 API module is imported, for the query
// and metastore clients.
//
// Start unpacks the binary once into a cache directory, runs it in
// single-binary mode with its default storage (the v2 segment writer and
// metastore on the local filesystem) on free loopback ports and a data
// directory of the test's own, waits until /ready answers and stops it
// when the test ends. Where the binary is missing the test is skipped with
// the reason, unless FLAMEHOUSE_E2E_REQUIRE=1 (CI), where that is a
// failure.
//
//	srv := pyroscopetest.Start(b, pyroscopetest.Options{Tenants: true})
//	// OTLP/gRPC (h2c) to srv.HTTPAddr with pyroscopetest.TenantHeader;
//	// queries through srv.Querier("tenant")
package pyroscopetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	metastorev1 "github.com/grafana/pyroscope/api/gen/proto/go/metastore/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/flamehouse/flamehouse/internal/harness"
)

// Environment variables.
const (
	// BinaryEnv names the Pyroscope binary, or its .xz, to run instead of
	// the shared harness's.
	BinaryEnv = "FLAMEHOUSE_PYROSCOPE"
	// RequireEnv set to 1 (CI) turns a missing binary into a failure.
	RequireEnv = "FLAMEHOUSE_E2E_REQUIRE"
)

// TenantHeader carries the tenant of a request (OTLP gRPC metadata, HTTP
// header) when the server runs with Options.Tenants.
const TenantHeader = "X-Scope-OrgID"

// Options configure a server.
type Options struct {
	// Tenants enables multitenancy: every request names its tenant in
	// TenantHeader, and each tenant's data is stored, compacted and
	// queried apart. Without it every request is tenant "anonymous".
	Tenants bool
	// ReadyTimeout bounds the wait for /ready; 0 is five minutes.
	ReadyTimeout time.Duration
}

// Server is a running Pyroscope.
type Server struct {
	// HTTPAddr is host:port of its HTTP port, which serves OTLP profiles
	// over gRPC (h2c) and HTTP, the connect query API and /ready.
	HTTPAddr string
	// GRPCAddr is host:port of its internal gRPC port (the metastore).
	GRPCAddr string
	// Dir holds its object store (Dir/store), metastore and raft log
	// (Dir/data).
	Dir string

	cmd      *exec.Cmd
	logs     *harness.Output
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
	grpcConn *grpc.ClientConn
}

// MaxCompactionLevel is the level of a block that compaction leaves as it
// is: the server's compactor has three levels of batches (0, 1, 2), and a
// batch of level 2 becomes one block of level 3.
const MaxCompactionLevel = 3

// compactionConfig keeps the compactor's batch sizes (20 segments, 10
// blocks, 10 blocks) but flushes a batch after 10 s instead of 36 s, 12
// minutes and 3 hours (levels 0, 1 and 2), and deletes compacted sources
// after 5 s instead of 15 minutes: the server reaches, within a
// benchmark, the final blocks it reaches on its own after hours of steady
// traffic (they may be smaller: batches that the defaults would fill up
// over hours are flushed earlier). The compactor has no flags for these;
// its YAML keys are its Go field names.
const compactionConfig = `metastore:
  levels:
    - {maxblocks: 20, maxage: 10000000000}
    - {maxblocks: 10, maxage: 10000000000}
    - {maxblocks: 10, maxage: 10000000000}
  cleanupdelay: 5s
`

// Binary returns the path of the Pyroscope binary, unpacked into the cache
// on first use. It skips the test when there is none, or fails it under
// FLAMEHOUSE_E2E_REQUIRE=1.
func Binary(tb testing.TB) string {
	tb.Helper()
	src, reason := source()
	if src == "" {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("pyroscopetest: %s, and %s=1 requires it", reason, RequireEnv)
		}
		tb.Skipf("pyroscopetest: %s", reason)
	}
	bin, err := unpackOnce(src)
	if err != nil {
		tb.Fatalf("pyroscopetest: %v", err)
	}
	return bin
}

// source is the binary or .xz to run, or "" and why there is none.
func source() (path, reason string) {
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil { //nolint:gosec // G703: the tester names the binary to run
			return "", fmt.Sprintf("%s=%s: %v", BinaryEnv, p, err)
		}
		return p, ""
	}
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "pyroscope", "pyroscope-linux-amd64.xz")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Sprintf("Grafana Pyroscope not found: %s is missing (set %s to a binary or its .xz)", filepath.Clean(p), BinaryEnv)
	}
	return p, ""
}

var (
	unpackMu  sync.Mutex
	unpacked  = map[string]string{}
	unpackErr = map[string]error{}
)

// unpackOnce unpacks src (an .xz, else used as it is) into the cache
// directory under a name that carries its hash, once per process.
func unpackOnce(src string) (string, error) {
	unpackMu.Lock()
	defer unpackMu.Unlock()
	if bin, ok := unpacked[src]; ok {
		return bin, unpackErr[src]
	}
	bin, err := unpack(src)
	unpacked[src], unpackErr[src] = bin, err
	return bin, err
}

func unpack(src string) (string, error) {
	if !strings.HasSuffix(src, ".xz") {
		return filepath.Abs(src)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return harness.UnpackXZ(src, filepath.Join(base, "flamehouse", "pyroscope"), "pyroscope")
}

// Start runs Pyroscope and returns once it is ready; it is stopped when
// the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	bin := Binary(tb)
	return harness.Start(tb, "pyroscopetest", func(dir string) (*Server, error) { return Launch(bin, opts, dir) })
}

// Launch is Start outside a test: it runs bin with its data under dir.
// The caller stops it.
func Launch(bin string, opts Options, dir string) (*Server, error) {
	var ports [4]string
	for i := range ports {
		addr, err := harness.FreeAddr()
		if err != nil {
			return nil, err
		}
		_, ports[i], _ = net.SplitHostPort(addr)
	}
	httpPort, grpcPort, memberlistPort, raftPort := ports[0], ports[1], ports[2], ports[3]
	s := &Server{
		HTTPAddr: net.JoinHostPort("127.0.0.1", httpPort),
		GRPCAddr: net.JoinHostPort("127.0.0.1", grpcPort),
		Dir:      dir, logs: &harness.Output{}, exited: make(chan struct{}),
	}
	configFile := filepath.Join(dir, "pyroscope.yaml")
	if err := os.WriteFile(configFile, []byte(compactionConfig), 0o600); err != nil {
		return nil, err
	}
	raft := net.JoinHostPort("127.0.0.1", raftPort)
	args := []string{
		"-config.file", configFile, "-config.show_banner=false",
		"-storage.backend", "filesystem", "-storage.filesystem.dir", filepath.Join(dir, "store"),
		"-pyroscopedb.data-path", filepath.Join(dir, "data", "v1"),
		"-compaction-worker.temp-dir", filepath.Join(dir, "compaction"), "-compaction-worker.job-poll-interval", "1s",
		"-server.http-listen-address", "127.0.0.1", "-server.http-listen-port", httpPort,
		"-server.grpc-listen-address", "127.0.0.1", "-server.grpc-listen-port", grpcPort,
		"-memberlist.bind-addr", "127.0.0.1", "-memberlist.bind-port", memberlistPort,
		"-memberlist.advertise-addr", "127.0.0.1",
		"-metastore.address", s.GRPCAddr, "-query-backend.address", s.GRPCAddr,
		"-metastore.data-dir", filepath.Join(dir, "data", "metastore"),
		"-metastore.raft.dir", filepath.Join(dir, "data", "raft"), "-metastore.raft.snapshots-dir", filepath.Join(dir, "data", "raft"),
		"-metastore.raft.bind-address", raft, "-metastore.raft.advertise-address", raft, "-metastore.raft.server-id", raft,
		// Its own profiles would land in the store being measured.
		"-self-profiling.disable-push=true",
		// Readiness delays that let a rolling update's ring settle:
		// one process has no ring to wait for.
		"-ingester.min-ready-duration=0s", "-segment-writer.min-ready-duration=0s", "-metastore.min-ready-duration=0s",
		// Every query goes to the v2 storage, which the default write
		// path (the segment writer) fills; "auto" would route a tenant's
		// first queries to the empty v1 storage until it has seen v2 data.
		"-enable-query-backend-from", "2000-01-01T00:00:00Z",
		// The limits a user raises to load a day of history at full
		// speed: no ingestion rate limit (the default allows 4 MB/s), no
		// age limit (the default rejects profiles older than an hour), no
		// range limits (the default refuses queries over a day).
		"-distributor.ingestion-rate-limit-mb", "1000000", "-distributor.ingestion-burst-size-mb", "1000000",
		"-validation.reject-older-than", "0", "-querier.max-query-length", "0", "-querier.max-query-lookback", "0",
		// Loads and queries that take longer than the defaults' 5 s and
		// 30 s on a busy 2-core machine wait instead of failing.
		"-distributor.push.timeout", "10m", "-write-path.segment-writer-timeout", "10m",
		"-query-backend.client-timeout", "10m", "-server.http-write-timeout", "10m",
	}
	// Its components find each other at the addresses they advertise,
	// by default those of the first private interface: loopback keeps
	// them where the ports are bound.
	for _, flag := range []string{
		"compactor.ring.instance-addr", "distributor.ring.instance-addr", "ingester.lifecycler.addr",
		"overrides-exporter.ring.instance-addr", "query-frontend.instance-addr", "query-scheduler.ring.instance-addr",
		"segment-writer.lifecycler.addr", "store-gateway.sharding-ring.instance-addr",
	} {
		args = append(args, "-"+flag, "127.0.0.1")
	}
	if opts.Tenants {
		args = append(args, "-auth.multitenancy-enabled=true")
	}
	s.cmd = exec.CommandContext(context.Background(), bin, args...) //nolint:gosec // G204: the harness's binary
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	if err := s.awaitReady(timeout); err != nil {
		_ = s.Stop()
		return nil, err
	}
	cc, err := grpc.NewClient(s.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("connect to the metastore: %w", err)
	}
	s.grpcConn = cc
	return s, nil
}

// awaitReady polls /ready until it answers "ready", then sends a profile
// (of the tenant that Compact uses) until one is accepted: /ready can
// answer before the metastore has elected its leader, and the segment
// writer refuses writes until it has.
func (s *Server) awaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for last := ""; last != "ready"; {
		select {
		case <-s.exited:
			return fmt.Errorf("pyroscope exited before it was ready (%s); log:\n%s", harness.ExitStatus(s.waitErr), s.logs)
		case <-time.After(200 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last = s.ready(ctx)
		cancel()
		if last != "ready" && time.Now().After(deadline) {
			return fmt.Errorf("pyroscope is not ready after %s (last answer %q); log:\n%s", timeout, last, s.logs)
		}
	}
	export := otlpExporter(s)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := export(OutgoingTenant(ctx, nudgeTenant), nudge(time.Now()))
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pyroscope refuses profiles %s after it said ready (%w); log:\n%s", timeout, err, s.logs)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("pyroscope exited (%s); log:\n%s", harness.ExitStatus(s.waitErr), s.logs)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *Server) ready(ctx context.Context) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.HTTPAddr+"/ready", http.NoBody)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return strings.TrimSpace(string(body))
}

// Logs returns what the server has written so far.
func (s *Server) Logs() string { return s.logs.String() }

// Stop sends SIGTERM and waits up to a minute for the server to exit (it
// holds its ports for several seconds while stopping); then it is killed.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.grpcConn != nil {
			_ = s.grpcConn.Close()
		}
		select {
		case <-s.exited:
			s.stopErr = fmt.Errorf("pyroscope had exited on its own (%s); log tail:\n%s", harness.ExitStatus(s.waitErr), s.logs.Tail(4000))
			return
		default:
		}
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			s.stopErr = fmt.Errorf("stop pyroscope: %w", err)
		}
		select {
		case <-s.exited:
		case <-time.After(time.Minute):
			_ = s.cmd.Process.Kill()
			<-s.exited
			s.stopErr = errors.New("pyroscope did not stop within a minute of SIGTERM and was killed")
		}
	})
	return s.stopErr
}

// Querier is a client of the connect query API (querier.v1.QuerierService)
// for tenant ("" without multitenancy), over HTTP/1.1 as Grafana's
// Pyroscope datasource calls it.
func (s *Server) Querier(tenant string) querierv1connect.QuerierServiceClient {
	return querierv1connect.NewQuerierServiceClient(http.DefaultClient, "http://"+s.HTTPAddr,
		connect.WithInterceptors(tenantInterceptor(tenant)))
}

// tenantInterceptor sets TenantHeader on every request.
func tenantInterceptor(tenant string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if tenant != "" {
				req.Header().Set(TenantHeader, tenant)
			}
			return next(ctx, req)
		}
	}
}

// OutgoingTenant adds the tenant to a gRPC call's metadata.
func OutgoingTenant(ctx context.Context, tenant string) context.Context {
	if tenant == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, TenantHeader, tenant)
}

// Block is one block of the store as the metastore indexes it.
type Block struct {
	ID    string
	Level uint32
	Shard uint32
	// Size is the block object's bytes; Datasets its datasets' bytes by
	// service (a block of a tenant holds every service of its shard).
	Size     uint64
	Datasets map[string]uint64
	// Path is the object's file in the store.
	Path string
}

// Blocks lists the blocks of a tenant ("anonymous" without multitenancy)
// that hold data of the series a selector matches in [from, to].
func (s *Server) Blocks(ctx context.Context, tenant, selector string, from, to time.Time) ([]Block, error) {
	if tenant == "" {
		tenant = "anonymous"
	}
	resp, err := metastorev1.NewMetadataQueryServiceClient(s.grpcConn).QueryMetadata(ctx, &metastorev1.QueryMetadataRequest{
		TenantId: []string{tenant}, StartTime: from.UnixMilli(), EndTime: to.UnixMilli(), Query: selector,
	})
	if err != nil {
		return nil, fmt.Errorf("query the metastore: %w", err)
	}
	blocks := make([]Block, 0, len(resp.GetBlocks()))
	for _, m := range resp.GetBlocks() {
		b := Block{ID: m.GetId(), Level: m.GetCompactionLevel(), Shard: m.GetShard(), Size: m.GetSize(), Datasets: map[string]uint64{}}
		name := func(i int32) string {
			if i >= 0 && int(i) < len(m.GetStringTable()) {
				return m.GetStringTable()[i]
			}
			return ""
		}
		for _, d := range m.GetDatasets() {
			b.Datasets[name(d.GetName())] += d.GetSize()
		}
		// Segments (level 0) are written under segments/ for every tenant
		// as "anonymous"; compacted blocks under blocks/ per tenant.
		if b.Level == 0 {
			b.Path = filepath.Join(s.Dir, "store", "segments", strconv.FormatUint(uint64(b.Shard), 10), "anonymous", b.ID, "block.bin")
		} else {
			b.Path = filepath.Join(s.Dir, "store", "blocks", strconv.FormatUint(uint64(b.Shard), 10), tenant, b.ID, "block.bin")
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// nudgeTenant is the tenant of the profiles that keep the compactor going
// once a load has ended: it flushes a batch that has passed its age only
// when another block arrives (of any tenant), so without new data the last
// blocks of a load would stay at their level.
const nudgeTenant = "pyroscopetest-nudge"

// Compact waits until every block that holds the selector's data of a
// tenant in [from, to] is at MaxCompactionLevel (what the server would
// reach after hours of traffic, see compactionConfig), sending a small
// profile of another tenant every second meanwhile, and returns those
// blocks. It gives up when ctx ends.
func (s *Server) Compact(ctx context.Context, tenant, selector string, from, to time.Time) ([]Block, error) {
	export := otlpExporter(s)
	var last []Block
	for {
		blocks, err := s.Blocks(ctx, tenant, selector, from, to)
		if err != nil {
			return nil, err
		}
		last = blocks
		done := len(blocks) > 0
		for _, b := range blocks {
			done = done && b.Level >= MaxCompactionLevel
		}
		if done {
			return blocks, nil
		}
		if err := export(OutgoingTenant(ctx, nudgeTenant), nudge(time.Now())); err != nil {
			return nil, fmt.Errorf("send a profile that moves compaction on: %w", err)
		}
		select {
		case <-ctx.Done():
			levels := make([]string, len(last))
			for i, b := range last {
				levels[i] = fmt.Sprintf("%s:L%d", b.ID, b.Level)
			}
			return nil, fmt.Errorf("blocks not compacted to level %d (%s): %w", MaxCompactionLevel, strings.Join(levels, " "), ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// HeapInuse is the server's Go heap in use (go_memstats_heap_inuse_bytes
// of its /metrics): live objects and the garbage not yet collected.
func (s *Server) HeapInuse(ctx context.Context) (uint64, error) {
	return s.gauge(ctx, "go_memstats_heap_inuse_bytes")
}

// HeapLive is the server's Go heap that its last garbage collection found
// live (go_gc_heap_live_bytes of its /metrics).
func (s *Server) HeapLive(ctx context.Context) (uint64, error) {
	return s.gauge(ctx, "go_gc_heap_live_bytes")
}

// gauge reads one unlabelled gauge of the server's /metrics.
func (s *Server) gauge(ctx context.Context, name string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.HTTPAddr+"/metrics", http.NoBody)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("read pyroscope's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("%s %q: %w", name, v, err)
			}
			return uint64(f), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read pyroscope's metrics: %w", err)
	}
	return 0, fmt.Errorf("pyroscope's metrics have no %s", name)
}
