// Package ebpfagent_test runs the real OpenTelemetry eBPF profiler against
// Flamehouse, in the two topologies most users will run it in, through a
// recording proxy that counts exactly what the agent sent:
//
//	agent -> proxy -+-> flamehouse run's OTLP/gRPC ingest (pkg/service, embedded engine, database otel)
//	                +-> the Flamehouse Collector distribution, flamehouse exporter -> the same engine, database otel_collector
//
// It needs root, BTF and tracefs (internal/ebpfagent.Require); it skips
// with the reason elsewhere, and fails instead under
// FLAMEHOUSE_E2E_REQUIRE=1 (CI).
package ebpfagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/ebpfagent"
	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/pkg/profiletype"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/service"
)

const (
	// samplesPerSecond is the agent's sampling frequency (its default is
	// 20): 97 Hz gathers enough samples for the proportions in seconds.
	samplesPerSecond = 97
	// period is the agent's sampling period in ns (its integer division).
	period = int64(1e9) / samplesPerSecond
	// collectorDatabase is where the Collector's exporter writes.
	collectorDatabase = "otel_collector"
	// minSamples is how many alpha+beta samples of each workload the test
	// waits for after the symbol upload (the tolerance follows from it).
	minSamples = 300
	// captureEnv names a directory to write every request the agent sent
	// into (the testdata corpus was taken this way).
	captureEnv = "FLAMEHOUSE_EBPF_CAPTURE_DIR"
)

// destination is one topology's tables, read through the query engine.
type destination struct {
	name   string
	engine *query.Engine
	tables schema.Config
}

func TestEBPFProfilerEndToEnd(t *testing.T) {
	agentBin := ebpfagent.Require(t)
	cBin, cPath, goPath, pyScript := buildWorkloads(t)
	collectorBin := otelcoltest.BuildDistribution(t)
	ctx := context.Background()
	started := time.Now()

	// Flamehouse as `flamehouse run` starts it: embedded engine, schema,
	// OTLP ingest; no self-profiling (the agent profiles the process anyway).
	cfg := service.DefaultConfig()
	cfg.Embedded.DataDir, cfg.Embedded.ListenAddress = t.TempDir(), "127.0.0.1:0"
	cfg.Ingest.Receiver.GRPCListenAddress, cfg.Ingest.Receiver.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.PyroscopeAPI.ListenAddress = "127.0.0.1:0"
	cfg.SelfProfile.Enabled = false
	svc, err := service.Start(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), service.Everything)
	require.NoError(t, err)
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		require.NoError(t, svc.Stop(stopCtx))
	})
	grpcAddr, httpAddr := svc.IngestAddresses()

	// The "same Collector" topology: the distribution's flamehouse
	// exporter writes into the same engine, another database.
	engine := &chtest.Server{Addr: svc.HTTPAddress(), Options: clickhouse.Options{Protocol: clickhouse.HTTP, Auth: clickhouse.Auth{Username: "default"}}}
	col := otelcoltest.Start(t, collectorBin, otelcoltest.Config{
		Exporters: map[string]any{"flamehouse": otelcoltest.FlamehouseExporter(engine, collectorDatabase)},
		Pipelines: map[string]otelcoltest.Pipeline{"profiles": {Exporters: []string{"flamehouse"}}},
	})
	collectorTables := cfg.Schema
	collectorTables.Database = collectorDatabase
	dests := []destination{
		{name: "agent -> ingest", engine: &query.Engine{Conn: svc.Conn(), Tables: cfg.Schema}, tables: cfg.Schema},
		{name: "agent -> Collector -> engine", engine: &query.Engine{Conn: svc.Conn(), Tables: collectorTables}, tables: collectorTables},
	}

	proxy, err := ebpfagent.StartProxy(grpcAddr, col.GRPCEndpoint)
	require.NoError(t, err)
	t.Cleanup(proxy.Stop)

	cW := startWorkload(t, "fhagent-c", cPath)
	goW := startWorkload(t, "fhagent-go", goPath)
	pyW := startWorkload(t, "python3.11", pythonPath, pyScript)
	workloads := []*workload{cW, goW, pyW}

	agent, err := ebpfagent.Start(agentBin, ebpfagent.Config{CollectionAgent: proxy.Addr, SamplesPerSecond: samplesPerSecond})
	if err != nil && !ebpfagent.Required() {
		t.Skipf("the eBPF profiler could not start here: %v", err)
	}
	require.NoError(t, err, "%s=1: the eBPF profiler must run", ebpfagent.RequireEnv)
	t.Cleanup(func() { _ = agent.Stop() })
	t.Logf("agent attached %s after the start (build, engine, Collector included)", time.Since(started).Round(time.Second))
	from := time.Now().Add(-time.Minute)

	// Phase 1: the C program's frames arrive unnamed (stripped, nothing uploaded).
	waitSent(t, proxy, agent, "samples of every workload", func(sent ebpfagent.Tally) bool {
		for _, w := range workloads {
			if sent[cpuKey(w)].Events < 50 {
				return false
			}
		}
		return true
	})
	proxy.Drain()
	to := time.Now().Add(time.Minute)
	for _, d := range dests {
		labels := tableTotals(t, d, from, to, cW)
		require.NotContains(t, labels, cAlpha, "%s: stripped, no symbols yet: %v", d.name, labels)
		require.NotContains(t, labels, cBeta, d.name)
		require.True(t, slices.ContainsFunc(keys(labels), func(l string) bool { return strings.Contains(l, "fhagent-c") }),
			"%s: the C program's frames keep their mapping's name until symbols come: %v", d.name, keys(labels))
	}
	uploaded := time.Now()

	// The symbols, mid-test: the ingest's HTTP endpoint for the ingest's
	// tables, `flamehouse symbols upload` for the Collector's.
	uploadHTTP(t, httpAddr, cBin.Path, cBin.BuildID)
	var out, errOut bytes.Buffer
	code := service.Main([]string{
		"symbols", "upload", "-clickhouse.address", svc.HTTPAddress(), "-clickhouse.protocol", "http",
		"-schema.database", collectorDatabase, "-log.level", "warn", cBin.Path,
	}, &out, &errOut)
	require.Zero(t, code, "flamehouse symbols upload: %s%s", out.String(), errOut.String())
	t.Logf("flamehouse symbols upload: %s", strings.TrimSpace(out.String()))

	// Phase 2: enough samples for the proportions.
	waitSent(t, proxy, agent, fmt.Sprintf("%d alpha+beta samples of every workload", minSamples), func(sent ebpfagent.Tally) bool {
		for _, w := range workloads {
			if float64(sent[cpuKey(w)].Events) < minSamples/0.6 { // alpha+beta are at least 60% of a workload's samples
				return false
			}
		}
		return true
	})
	require.NoError(t, agent.Stop())
	proxy.Drain()
	for _, w := range workloads {
		w.stop()
	}
	t.Logf("agent stopped %s after the start; %d requests", time.Since(started).Round(time.Second), len(proxy.Requests()))
	to = time.Now().Add(time.Minute)

	requests := proxy.Requests()
	for i, r := range requests {
		require.NotNil(t, r.Tally, "request %d decodes", i)
		for _, a := range r.Answers {
			require.NoError(t, a.Err, "request %d to %s", i, a.Target)
			require.Zero(t, a.Rejected, "request %d to %s: %s", i, a.Target, a.Message)
		}
	}
	sent := proxy.Sent()
	checkNothingLost(t, dests, sent)

	for _, d := range dests {
		t.Run(d.name, func(t *testing.T) {
			for _, w := range workloads {
				total := flameTotal(t, d, profiletype.CPUTime, from, to, pidSelector(w))
				require.Equal(t, sent[cpuKey(w)].EventsTimesPeriod, total, "%s (pid %d): stored CPU time = sent samples x period", w.name, w.pid)
			}
			c := tableTotals(t, d, from, to, cW)
			checkShare(t, d.name+" C (named after the upload, frames before it too)", c, cAlpha, cBeta)
			require.Contains(t, c, cGamma)
			checkShare(t, d.name+" Go", tableTotals(t, d, from, to, goW), goAlpha, goBeta)
			checkShare(t, d.name+" Python", tableTotals(t, d, from, to, pyW), pyAlpha, pyBeta)
			// Frames ingested before the upload are named too: the stored
			// rows of samples that all came before the upload hold
			// work_alpha and work_beta.
			early := tableTotals(t, d, from, ingestedBefore(t, requests, cW, uploaded), cW)
			require.Contains(t, early, cAlpha, "%s: frames ingested before the upload are named: %v", d.name, early)
			require.Contains(t, early, cBeta, d.name)
			checkFrameTypes(t, d, cBin.BuildID)
		})
	}
	checkOffCPU(t, proxy, dests, cW, from)
	captureRequests(t, proxy.Requests())
	checkHostNaming(t, "http://"+httpAddr+"/metrics", dests[0], dests[1], from, to)
	t.Logf("done %s after the start", time.Since(started).Round(time.Second))
}

// ingestedBefore is a time before which every CPU sample of w came in a
// request received before t: the earliest sample of w in the requests
// received later, truncated to the second (rows are per second).
func ingestedBefore(t *testing.T, requests []ebpfagent.Request, w *workload, at time.Time) time.Time {
	t.Helper()
	var first uint64
	for _, r := range requests {
		if c := r.Tally[cpuKey(w)]; r.Received.After(at) && c.First != 0 && (first == 0 || c.First < first) {
			first = c.First
		}
	}
	require.NotZero(t, first, "requests with samples of %s after %s", w.name, at)
	cut := time.Unix(0, int64(first)).Truncate(time.Second)
	t.Logf("samples of %s before %s were all ingested before the upload", w.name, cut.Format(time.TimeOnly))
	return cut
}

// cpuKey is a workload's CPU samples in a Tally.
func cpuKey(w *workload) ebpfagent.TallyKey {
	return ebpfagent.TallyKey{PID: int64(w.pid), Type: "samples/count"}
}

func pidSelector(w *workload) string { return `{process_pid="` + strconv.Itoa(w.pid) + `"}` }

// waitSent polls what the agent sent until cond holds (two minutes at
// most), failing with the agent's log if it exits.
func waitSent(t *testing.T, p *ebpfagent.Proxy, agent *ebpfagent.Agent, what string, cond func(ebpfagent.Tally) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond(p.Sent()) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 2 minutes: sent %v; agent log:\n%s", what, p.Sent(), agent.Logs())
		}
		time.Sleep(time.Second)
	}
}

// checkNothingLost: for each destination, every CPU sample the agent sent
// (all processes of the machine) is stored, as sample count x period.
func checkNothingLost(t *testing.T, dests []destination, sent ebpfagent.Tally) {
	t.Helper()
	var samples, events, want int64
	for k, c := range sent {
		require.Equal(t, "samples/count", k.Type, "the live agent sends CPU samples only")
		samples += c.Samples
		events += c.Events
		want += c.EventsTimesPeriod
	}
	for _, d := range dests {
		var stored int64
		require.NoError(t, d.engine.Conn.QueryRow(context.Background(), "SELECT toInt64(sum(Value)) FROM "+d.tables.Qualified(schema.Samples)+
			" WHERE ProfileType = {type:String}", clickhouse.Named("type", profiletype.CPUTime)).Scan(&stored))
		t.Logf("%s: sent %d samples (%d events, %d processes), stored %d ns of CPU time = %d events: %d lost",
			d.name, samples, events, len(sent), stored, stored/period, events-stored/period)
		require.Equal(t, want, stored, "%s: every sample the agent sent is stored", d.name)
	}
}

// checkShare asserts alpha's share of alpha+beta within toleranceSigmas
// binomial standard deviations of alphaShare.
func checkShare(t *testing.T, what string, totals map[string]int64, alpha, beta string) {
	t.Helper()
	a, b := totals[alpha], totals[beta]
	require.Positive(t, a, "%s: %s in %v", what, alpha, totals)
	require.Positive(t, b, "%s: %s", what, beta)
	n := float64(a+b) / float64(period)
	share := float64(a) / float64(a+b)
	tol := toleranceSigmas * math.Sqrt(alphaShare*(1-alphaShare)/n)
	t.Logf("%s: %s %.3f of %.0f samples (expected %.2f ± %.3f, %.1f sigma)", what, alpha, share, n, alphaShare, tol, toleranceSigmas)
	require.GreaterOrEqual(t, n, float64(minSamples)*0.5, "%s: too few samples for the proportion", what)
	require.InDelta(t, alphaShare, share, tol, "%s: %s's share of %s+%s", what, alpha, alpha, beta)
}

// checkFrameTypes reads the stored frames: the agent's frame types on the
// workloads' frames.
func checkFrameTypes(t *testing.T, d destination, cBuildID string) {
	t.Helper()
	ctx := context.Background()
	types := func(service, cond string, args ...any) []string {
		rows, err := d.engine.Conn.Query(ctx, "SELECT DISTINCT FrameType FROM "+d.tables.Qualified(schema.Frames)+
			" WHERE ServiceName = {service:String} AND "+cond+" ORDER BY FrameType", append([]any{clickhouse.Named("service", service)}, args...)...)
		require.NoError(t, err)
		defer func() { _ = rows.Close() }()
		var out []string
		for rows.Next() {
			var ft string
			require.NoError(t, rows.Scan(&ft))
			out = append(out, ft)
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Equal(t, []string{"native"}, types("unknown_service:fhagent-c", "BuildId = {id:String}", clickhouse.Named("id", cBuildID)),
		"%s: the stripped program's frames", d.name)
	require.Contains(t, types("unknown_service:fhagent-c", "FunctionName != ''"), "kernel", "%s: kernel frames (read(2) under io_gamma), named", d.name)
	require.Equal(t, []string{"go"}, types("unknown_service:fhagent-go", "FunctionName IN ({a:String}, {b:String})",
		clickhouse.Named("a", goAlpha), clickhouse.Named("b", goBeta)), d.name)
	require.Equal(t, []string{"cpython"}, types("unknown_service:python3.11", "FunctionName IN ({a:String}, {b:String})",
		clickhouse.Named("a", pyAlpha), clickhouse.Named("b", pyBeta)), d.name)
	require.Contains(t, types("unknown_service:python3.11", "MappingFile = 'python3.11'"), "native", "%s: the interpreter's own frames", d.name)
}

// uploadHTTP stores a file's symbols through the ingest's endpoint.
func uploadHTTP(t *testing.T, httpAddr, path, buildID string) {
	t.Helper()
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://"+httpAddr+"/v1/symbols/"+buildID+"?file_name=fhagent-c", bytes.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	answer, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "PUT /v1/symbols: %s", answer)
	t.Logf("PUT /v1/symbols/%s: %s", buildID, bytes.TrimSpace(answer))
}

// run runs one query as the datasource's QueryData does.
func run(t *testing.T, d destination, from, to time.Time, q map[string]any) data.Frames {
	t.Helper()
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	r, err := query.ParseRequest(raw, from, to, 15*time.Second, query.Options{})
	require.NoError(t, err, "query %s", raw)
	frames, err := d.engine.Run(context.Background(), r)
	require.NoError(t, err, "%s: query %s", d.name, raw)
	return frames
}

// tableTotals is the top table of a workload's CPU time over [from, to):
// total per label.
func tableTotals(t *testing.T, d destination, from, to time.Time, w *workload) map[string]int64 {
	t.Helper()
	frames := run(t, d, from, to, map[string]any{"queryType": "table", "profileTypeId": profiletype.CPUTime, "labelSelector": pidSelector(w)})
	var table *data.Frame
	for _, f := range frames {
		if f.Name == "functions" {
			table = f
		}
	}
	require.NotNil(t, table, "%s: no functions table", d.name)
	labels, _ := table.FieldByName("label")
	totals, _ := table.FieldByName("total")
	require.NotNil(t, labels)
	require.NotNil(t, totals)
	out := map[string]int64{}
	for i := range labels.Len() {
		l, _ := labels.ConcreteAt(i)
		v, _ := totals.ConcreteAt(i)
		out[fmt.Sprint(l)] = toInt64(v)
	}
	return out
}

// flameTotal is a flame graph's root total.
func flameTotal(t *testing.T, d destination, profileType string, from, to time.Time, selector string) int64 {
	t.Helper()
	frames := run(t, d, from, to, map[string]any{"queryType": "profile", "profileTypeId": profileType, "labelSelector": selector})
	require.NotEmpty(t, frames)
	if frames[0].Rows() == 0 {
		return 0
	}
	value, _ := frames[0].FieldByName("value")
	require.NotNil(t, value)
	v, _ := value.ConcreteAt(0)
	return toInt64(v)
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case uint64:
		return int64(n)
	}
	return 0
}

func keys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// captureRequests writes every request into $FLAMEHOUSE_EBPF_CAPTURE_DIR
// when it is set.
func captureRequests(t *testing.T, requests []ebpfagent.Request) {
	t.Helper()
	dir := os.Getenv(captureEnv)
	if dir == "" {
		return
	}
	require.NoError(t, os.MkdirAll(dir, 0o750))
	for i, r := range requests {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("agent-%03d.pb", i)), r.Payload, 0o600))
	}
	t.Logf("wrote %d requests to %s", len(requests), dir)
}
