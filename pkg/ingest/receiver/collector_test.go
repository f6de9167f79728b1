package receiver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flamehouse/flamehouse/pkg/secret"
)

// buildCollector builds the test Collector (test/otelcol, its own module)
// from the module proxy.
func buildCollector(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "..", "test", "otelcol")
	bin := filepath.Join(t.TempDir(), "otelcol")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build the test Collector:\n%s", out)
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestCollectorForwardsProfiles runs a real OpenTelemetry Collector (OTLP
// receiver, otlp_grpc and otlp_http exporters, profiles feature gate)
// between a sender and the ingest service. The Collector re-encodes
// requests with pdata, which puts resource attributes in the string table;
// each exporter authenticates as its own tenant, and each tenant's stored
// CPU time equals what was sent.
func TestCollectorForwardsProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an OpenTelemetry Collector; skipped under -short")
	}
	bin := buildCollector(t)
	e := newEnv(t, func(c *Config) {
		c.Auth = AuthConfig{Enabled: true, Tokens: []TokenCredential{
			{Token: secret.String("grpc-token"), Tenant: "via-grpc"},
			{Token: secret.String("http-token"), Tenant: "via-http"},
		}}
		c.RequestTimeout = 10 * time.Second
	})
	collectorIn := freeAddr(t)
	config := fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
exporters:
  otlp_grpc:
    endpoint: %s
    tls:
      insecure: true
    headers:
      authorization: "Bearer grpc-token"
  otlp_http:
    endpoint: http://%s
    headers:
      Authorization: "Bearer http-token"
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles/grpc:
      receivers: [otlp]
      exporters: [otlp_grpc]
    profiles/http:
      receivers: [otlp]
      exporters: [otlp_http]
`, collectorIn, e.r.GRPCAddress(), e.r.HTTPAddress())
	cfgPath := filepath.Join(t.TempDir(), "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o600))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &lockedBuffer{}
	col := exec.CommandContext(ctx, bin, "--config", cfgPath, "--feature-gates=+service.profilesSupport")
	col.Stdout, col.Stderr = logs, logs
	require.NoError(t, col.Start())
	t.Cleanup(func() {
		_ = col.Process.Signal(os.Interrupt)
		_ = col.Wait()
	})
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", collectorIn, 100*time.Millisecond)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the Collector starts listening:\n%s", logs)

	req, want := generated(21)
	cc, err := grpc.NewClient(collectorIn, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = cc.Close() }()
	_, err = collectorpb.NewProfilesServiceClient(cc).Export(ctx, req)
	require.NoError(t, err, "the Collector accepts the export:\n%s", logs)

	stored := func(tenant string) int64 {
		var total int64
		_ = e.conn.QueryRow(context.Background(), "SELECT sum(Value) FROM "+e.tables.Qualified("profile_samples")+" WHERE TenantId = ?", tenant).Scan(&total)
		return total
	}
	require.Eventually(t, func() bool { return stored("via-grpc") == want && stored("via-http") == want },
		60*time.Second, 200*time.Millisecond, "both exporters delivered the profiles; collector log:\n%s", logs)
	var services []string
	require.NoError(t, e.conn.QueryRow(context.Background(), "SELECT groupUniqArray(ServiceName) FROM "+e.tables.Qualified("profile_samples")).Scan(&services))
	require.Equal(t, []string{"checkout"}, services, "resource attributes survive the Collector's string-table encoding")
}

// lockedBuffer collects a child process's output for failure messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
