package pyroscopetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/profilegen"
)

func TestSourceSaysWhyThereIsNoBinary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "pyroscope-linux-amd64.xz")
	t.Setenv(BinaryEnv, missing)
	path, reason := source()
	require.Empty(t, path)
	require.Contains(t, reason, missing)

	present := filepath.Join(t.TempDir(), "pyroscope")
	require.NoError(t, os.WriteFile(present, []byte("#!/bin/sh\n"), 0o600))
	t.Setenv(BinaryEnv, present)
	path, reason = source()
	require.Equal(t, present, path)
	require.Empty(t, reason)
}

// TestServerStoresCompactsAndAnswers sends an eBPF-shaped report of two
// tenants' worth over OTLP/gRPC into a real Pyroscope, and checks that
// each tenant's flame graph root is the report's CPU time, that the other
// tenant's data stays apart, and that Compact brings the tenant's blocks
// to the final level with their objects on disk at the size the metastore
// records.
func TestServerStoresCompactsAndAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Grafana Pyroscope: not under -short")
	}
	t0 := time.Now()
	s := Start(t, Options{Tenants: true})
	t.Logf("ready in %s", time.Since(t0).Round(time.Millisecond))
	cfg := profilegen.DefaultConfig()
	cfg.Pods, cfg.SamplesPerSecond, cfg.Stacks, cfg.Locations, cfg.Functions = 4, 200, 300, 2000, 500
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Minute)
	req := profilegen.New(cfg).Report(at)
	var cpu int64
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				for _, smp := range p.GetSamples() {
					cpu += int64(len(smp.GetTimestampsUnixNano())) * p.GetPeriod()
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	export := otlpExporter(s)
	require.NoError(t, export(OutgoingTenant(ctx, "a"), req), "log:\n%s", s.logs.Tail(4000))

	root := func(tenant string) int64 {
		maxNodes := int64(1024)
		resp, err := s.Querier(tenant).SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
			ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="checkout"}`,
			Start: at.Add(-time.Minute).UnixMilli(), End: at.Add(time.Minute).UnixMilli(), MaxNodes: &maxNodes,
		}))
		require.NoError(t, err)
		return resp.Msg.GetFlamegraph().GetTotal()
	}
	require.Equal(t, cpu, root("a"), "the acknowledged report is queryable, all of it")
	require.Zero(t, root("b"), "another tenant sees none of it")

	t0 = time.Now()
	blocks, err := s.Compact(ctx, "a", `{service_name="checkout"}`, at.Add(-time.Minute), at.Add(time.Minute))
	require.NoError(t, err, "log:\n%s", s.logs.Tail(4000))
	require.NotEmpty(t, blocks)
	t.Logf("compacted in %s", time.Since(t0).Round(time.Millisecond))
	for _, b := range blocks {
		require.Equal(t, uint32(MaxCompactionLevel), b.Level)
		require.Positive(t, b.Datasets["checkout"])
		fi, err := os.Stat(b.Path)
		require.NoError(t, err, "the block's object is where the store keeps it")
		require.Equal(t, int64(b.Size), fi.Size())
	}
	require.Equal(t, cpu, root("a"), "compaction keeps every sample")
}
