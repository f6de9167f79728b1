package service

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/otlphttp"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// engineOn starts the embedded engine on dir, serving HTTP on addr.
func engineOn(t *testing.T, dir, addr string) func() {
	t.Helper()
	cfg := chembed.DefaultConfig()
	cfg.DataDir, cfg.ListenAddress = dir, addr
	log := slog.New(slog.DiscardHandler)
	e, err := chembed.Open(cfg, log)
	require.NoError(t, err)
	srv, err := chembed.NewServer(e, cfg, log)
	require.NoError(t, err)
	ln, err := srv.Listen(context.Background())
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	return func() {
		_ = srv.Shutdown(context.Background())
		e.Close()
	}
}

// TestIngestSurvivesClickHouseRestart stops the engine under a running
// ingest service and starts it again: while it is down exports are refused
// as retryable, and everything acknowledged before, during and after is
// in the tables once it is back.
func TestIngestSurvivesClickHouseRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine twice; skipped under -short")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	dir := t.TempDir()
	stop := engineOn(t, dir, addr)

	conn, err := clickhouse.Open(&clickhouse.Options{Protocol: clickhouse.HTTP, Addr: []string{addr}, DialTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	tables := schema.DefaultConfig()
	tables.Retention = schema.Retention{}
	m, err := schema.NewMigrator(tables, conn)
	require.NoError(t, err)
	_, err = m.Migrate(context.Background())
	require.NoError(t, err)

	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	wcfg := writer.DefaultConfig()
	wcfg.FlushInterval, wcfg.RetryInitial, wcfg.RetryMax = 50*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond
	chCfg := chclient.DefaultConfig()
	chCfg.Address, chCfg.Protocol, chCfg.Username = addr, chclient.ProtocolHTTP, chembed.DefaultUser
	native, err := chclient.NewNativeInserter(chCfg)
	require.NoError(t, err)
	defer native.Close()
	w, err := writer.New(wcfg, tables, conn, native, log, reg)
	require.NoError(t, err)
	rcfg := receiver.DefaultConfig()
	rcfg.GRPCListenAddress, rcfg.HTTPListenAddress, rcfg.RequestTimeout = "127.0.0.1:0", "127.0.0.1:0", 1500*time.Millisecond
	r, err := receiver.New(rcfg, w, nil, log, reg)
	require.NoError(t, err)
	r.Start()
	defer func() {
		r.Stop()
		_ = w.Close(context.Background())
	}()
	client := otlphttp.New("http://"+r.HTTPAddress(), "")

	gcfg := profilegen.DefaultConfig()
	gcfg.Stacks, gcfg.Pods, gcfg.SamplesPerSecond = 300, 3, 50
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Minute)
	g := profilegen.New(gcfg)
	perReport := int64(g.Events()) * 50_000_000
	ctx := context.Background()

	_, err = client.Export(ctx, g.Report(start))
	require.NoError(t, err, "acknowledged while the engine is up")

	stop()
	during := g.Report(start.Add(5 * time.Second))
	_, err = client.Export(ctx, during)
	var se *otlphttp.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 503, se.Code, "refused as retryable while ClickHouse is down: %v", err)

	stop = engineOn(t, dir, addr)
	defer stop()
	_, err = client.Export(ctx, during) // the sender retries
	require.NoError(t, err)

	var total int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT sum(Value) FROM "+tables.Qualified(schema.Samples)).Scan(&total))
	require.Equal(t, 2*perReport, total, "the report from before the restart survived it, the retried one is stored once")
}
