package otelcoltest

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"
	colprofilespb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
)

// TestExampleConfigValidates: the distribution accepts its example
// configuration as shipped (the Collector's validate command).
func TestExampleConfigValidates(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Collector distribution")
	}
	bin := BuildDistribution(t)
	out, err := exec.CommandContext(context.Background(), bin, "validate", "--config", ExampleConfigFile(),
		"--feature-gates=+service.profilesSupport").CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// faultRequest is one request of the fault tests: a report of one pod
// whose resource carries service.instance.id = id (a column of the samples
// table), and its CPU time.
type faultRequest struct {
	id  string
	req *colprofilespb.ExportProfilesServiceRequest
	cpu int64
}

// faultRequests generates n distinct small eBPF-shaped reports, 5 s apart.
func faultRequests(n int, start time.Time) []faultRequest {
	g := profilegen.New(profilegen.Config{
		Service: "checkout", Pods: 1, Stacks: 60, Functions: 50, Locations: 90, MinDepth: 3, MaxDepth: 10,
		SamplesPerSecond: 40, ReportInterval: 5 * time.Second, Threads: 2, CPUs: 2, Seed: 21,
	})
	out := make([]faultRequest, n)
	for i := range out {
		req := g.Report(start.Add(time.Duration(i) * 5 * time.Second))
		id := fmt.Sprintf("req-%04d", i)
		res := req.GetResourceProfiles()[0].GetResource()
		res.Attributes = append(res.Attributes, &commonpb.KeyValue{
			Key: "service.instance.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: id}},
		})
		var cpu int64
		for _, p := range req.GetResourceProfiles()[0].GetScopeProfiles()[0].GetProfiles() {
			for _, s := range p.GetSamples() {
				cpu += int64(len(s.GetTimestampsUnixNano())) * p.GetPeriod()
			}
		}
		out[i] = faultRequest{id: id, req: req, cpu: cpu}
	}
	return out
}

// storedCPU reads the CPU time stored per service.instance.id from the
// samples table and from the per-minute rollup, by way of the series.
func storedCPU(t *testing.T, conn clickhouse.Conn, db string) (samples, rollup map[string]int64) {
	t.Helper()
	// Resource attributes live once per series (profile_series).
	byInstance := func(table string) map[string]int64 {
		return chtest.Int64sByKey(t, conn, "SELECT s.ResourceAttributes['service.instance.id'] AS id, toInt64(sum(r.Value)) FROM "+db+"."+table+" AS r "+
			"INNER JOIN (SELECT DISTINCT SeriesId, ResourceAttributes FROM "+db+".otel_profile_series) AS s ON r.SeriesId = s.SeriesId "+
			"WHERE r.ProfileType = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds' GROUP BY id")
	}
	return byInstance("otel_profile_samples"), byInstance("otel_profile_samples_1m")
}

// TestFlamehouseExporterSurvivesSIGKILL loads the distribution's
// flamehouse exporter with a persistent sending queue (file_storage) and
// an exporter slower than the senders, kills the Collector with SIGKILL
// once half the requests are acknowledged, restarts it on the same
// storage, and then sends the requests that were not acknowledged again,
// as a sender retries. Every acknowledged request must be in the samples
// table exactly once (its CPU time, not twice), and in the end every
// request: the queue replays what it held, and a replayed or resent
// request that had been written is deduplicated by its content token.
func TestFlamehouseExporterSurvivesSIGKILL(t *testing.T) {
	srv := chtest.Get(t)
	bin := BuildDistribution(t)
	conn := srv.Open(t)
	db := srv.NewDatabase(t)
	queueDir := t.TempDir()
	config := func(consumers int, flush string) Config {
		exp := FlamehouseExporter(srv, db)
		exp["sending_queue"] = map[string]any{"storage": "file_storage", "num_consumers": consumers, "queue_size": 5000}
		exp["retry_on_failure"] = map[string]any{"enabled": true, "initial_interval": "100ms", "max_interval": "1s"}
		// Every row in the per-minute rollups, whose deduplication is checked below.
		exp["writer"] = map[string]any{"flush_interval": flush, "minute_rollup_min_merge": 1}
		return Config{
			Extensions: map[string]any{"file_storage": map[string]any{"directory": queueDir}},
			Exporters:  map[string]any{"flamehouse": exp},
			Pipelines:  map[string]Pipeline{"profiles": {Exporters: []string{"flamehouse"}}},
		}
	}
	const n = 200
	reqs := faultRequests(n, time.Now().UTC().Truncate(time.Minute).Add(-30*time.Minute))

	// Phase 1: one slow consumer (about three pushes a second) and paced
	// senders (about fifty requests a second); SIGKILL in the middle of the
	// load, once a quarter of the requests are acknowledged and a few are
	// written.
	col, err := Launch(bin, config(1, "300ms"), t.TempDir())
	require.NoError(t, err)
	acked := sendUntilKilled(t, col, conn, db, reqs)
	ackedAtKill := ackedIDs(reqs, acked)
	committedAtKill, _ := storedCPU(t, conn, db)
	t.Logf("SIGKILL after %d of %d requests were acknowledged and %d written", len(ackedAtKill), n, len(committedAtKill))
	require.Less(t, len(ackedAtKill), n, "killed mid-load")
	require.GreaterOrEqual(t, len(committedAtKill), 3)
	require.Less(t, len(committedAtKill), len(ackedAtKill), "acknowledged requests were still in the persistent queue when the Collector died")

	// Phase 2: restart on the same storage; the queue delivers what it held.
	col, err = Launch(bin, config(4, "50ms"), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, col.Stop()) })
	waitStored(t, conn, db, reqs, ackedAtKill, col)
	samples, _ := storedCPU(t, conn, db)
	for _, r := range reqs {
		if slices.Contains(ackedAtKill, r.id) {
			require.Equal(t, r.cpu, samples[r.id], "%s, acknowledged before the kill: stored exactly once", r.id)
		}
	}
	if strings.Contains(col.Logs(), "Moved items for dispatching back to queue") {
		t.Log("the restarted queue replayed items that were being written when the Collector was killed")
	}

	// Phase 3: the sender retries what was not acknowledged.
	client := profilesClient(t, col.GRPCEndpoint)
	for i := range reqs {
		if !acked[i].Load() {
			_, err := client.Export(context.Background(), reqs[i].req)
			require.NoError(t, err, "resend %s", reqs[i].id)
		}
	}
	all := make([]string, n)
	for i, r := range reqs {
		all[i] = r.id
	}
	waitStored(t, conn, db, reqs, all, col)
	samples, rollup := storedCPU(t, conn, db)
	require.Len(t, samples, n)
	for _, r := range reqs {
		require.Equal(t, r.cpu, samples[r.id], "%s: stored exactly once", r.id)
		// Schema version 2 gives the rollups a deduplication window too.
		require.Equal(t, r.cpu, rollup[r.id], "%s: the per-minute rollup holds it exactly once", r.id)
	}
}

// sendUntilKilled sends the requests from four paced senders (about fifty
// requests a second) and kills the Collector with SIGKILL once a quarter
// of them are acknowledged and a few are written; it returns which were
// acknowledged.
func sendUntilKilled(t *testing.T, col *Collector, conn clickhouse.Conn, db string, reqs []faultRequest) []atomic.Bool {
	t.Helper()
	n := len(reqs)
	acked := make([]atomic.Bool, n)
	var ackCount atomic.Int32
	killed := make(chan struct{})
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			if err := col.Kill(); err != nil {
				t.Error(err)
			}
			close(killed)
		})
	}
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range n {
			select {
			case next <- i:
			case <-killed:
				return
			}
		}
	}()
	sendersDone := make(chan struct{})
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sendersDone:
				return
			case <-tick.C:
				if written, err := writtenIDs(conn, db); err == nil && ackCount.Load() >= int32(n/4) && written >= 3 {
					kill()
					return
				}
			}
		}
	}()
	client := profilesClient(t, col.GRPCEndpoint)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := client.Export(ctx, reqs[i].req)
				cancel()
				if err == nil {
					acked[i].Store(true)
					ackCount.Add(1)
				} // else not acknowledged: the sender keeps it
				time.Sleep(80 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(sendersDone)
	select {
	case <-killed:
	default:
		t.Fatal("the load ended before the kill: the exporter kept up with the senders")
	}
	return acked
}

// writtenIDs counts the requests with rows in the samples table.
func writtenIDs(conn clickhouse.Conn, db string) (uint64, error) {
	var n uint64
	err := conn.QueryRow(context.Background(), "SELECT uniqExact(ResourceAttributes['service.instance.id']) FROM "+db+".otel_profile_series "+
		"WHERE SeriesId IN (SELECT SeriesId FROM "+db+".otel_profile_samples)").Scan(&n)
	return n, err
}

// profilesClient is an OTLP/gRPC profiles client of a Collector.
func profilesClient(t *testing.T, endpoint string) colprofilespb.ProfilesServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return colprofilespb.NewProfilesServiceClient(cc)
}

func ackedIDs(reqs []faultRequest, acked []atomic.Bool) []string {
	var ids []string
	for i := range reqs {
		if acked[i].Load() {
			ids = append(ids, reqs[i].id)
		}
	}
	return ids
}

// waitStored waits until every request of ids has at least its CPU time in
// the samples table, and then for the exporter's queue to settle.
func waitStored(t *testing.T, conn clickhouse.Conn, db string, reqs []faultRequest, ids []string, col *Collector) {
	t.Helper()
	want := map[string]int64{}
	for _, r := range reqs {
		if slices.Contains(ids, r.id) {
			want[r.id] = r.cpu
		}
	}
	require.Eventually(t, func() bool {
		samples, _ := storedCPU(t, conn, db)
		for id, cpu := range want {
			if samples[id] < cpu {
				return false
			}
		}
		return true
	}, 2*time.Minute, 200*time.Millisecond, "requests %v stored; log:\n%s", slices.Sorted(maps.Keys(want)), col.Logs())
	// A request written twice would show up within a flush or two.
	time.Sleep(500 * time.Millisecond)
}

// TestFlamehouseExporterDropsInvalidProfile sends a request whose second
// profile has an out-of-range stack index through the distribution: the
// other profiles are stored, and the invalid one is dropped with an error
// that names it (in the Collector's log with the sending queue on; to the
// sender as well without one), and is not retried.
func TestFlamehouseExporterDropsInvalidProfile(t *testing.T) {
	srv := chtest.Get(t)
	bin := BuildDistribution(t)
	conn := srv.Open(t)
	const wantErr = "resource_profiles[1].scope_profiles[0].profiles[0]: samples[0]: stack_index 99999 is out of range"
	for _, tc := range []struct {
		name  string
		queue bool
	}{{"sending queue", true}, {"no queue", false}} {
		t.Run(tc.name, func(t *testing.T) {
			db := srv.NewDatabase(t)
			exp := FlamehouseExporter(srv, db)
			if tc.queue {
				delete(exp, "sending_queue") // the default queue
			}
			col := Start(t, bin, Config{
				Exporters: map[string]any{"flamehouse": exp},
				Pipelines: map[string]Pipeline{"profiles": {Exporters: []string{"flamehouse"}}},
			})
			g := profilegen.New(profilegen.Config{
				Service: "checkout", Pods: 3, Stacks: 60, Functions: 50, Locations: 90, MinDepth: 3, MaxDepth: 10,
				SamplesPerSecond: 60, ReportInterval: 5 * time.Second, Threads: 2, CPUs: 2, Seed: 22,
			})
			req := g.Report(time.Now().UTC().Add(-time.Minute).Truncate(time.Second))
			var want int64
			for i, rp := range req.GetResourceProfiles() {
				p := rp.GetScopeProfiles()[0].GetProfiles()[0]
				if i == 1 {
					p.GetSamples()[0].StackIndex = 99999
					continue
				}
				for _, s := range p.GetSamples() {
					want += int64(len(s.GetTimestampsUnixNano())) * p.GetPeriod()
				}
			}
			_, err := profilesClient(t, col.GRPCEndpoint).Export(context.Background(), req)
			if tc.queue {
				require.NoError(t, err, "the queue acknowledges the request")
			} else {
				require.Error(t, err)
				// The OTLP receiver answers a permanent error with Internal,
				// which OTLP senders do not retry.
				require.Equal(t, codes.Internal, status.Code(err), "a permanent error: %v", err)
				require.Contains(t, status.Convert(err).Message(), "Permanent error")
				require.Contains(t, status.Convert(err).Message(), wantErr)
			}
			require.Eventually(t, func() bool {
				var got int64
				_ = conn.QueryRow(context.Background(), "SELECT toInt64(sum(Value)) FROM "+db+".otel_profile_samples").Scan(&got)
				return got == want && (!tc.queue || strings.Contains(col.Logs(), wantErr))
			}, 30*time.Second, 100*time.Millisecond, "the valid profiles stored and the invalid one named in the log:\n%s", col.Logs())
			require.NoError(t, col.Stop())
			require.Equal(t, 1, strings.Count(col.Logs(), wantErr), "dropped once, never retried:\n%s", col.Logs())
		})
	}
}
