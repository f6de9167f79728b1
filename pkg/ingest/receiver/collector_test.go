package receiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

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
	bin := otelcoltest.Build(t, otelcoltest.OTLPCollector)
	e := newEnv(t, func(c *Config) {
		c.Auth = AuthConfig{Enabled: true, Tokens: []TokenCredential{
			{Token: secret.String("grpc-token"), Tenant: "via-grpc"},
			{Token: secret.String("http-token"), Tenant: "via-http"},
		}}
		c.RequestTimeout = 10 * time.Second
	})
	col := otelcoltest.Start(t, bin, otelcoltest.Config{
		Exporters: map[string]any{
			"otlp_grpc": map[string]any{
				"endpoint": e.r.GRPCAddress(),
				"tls":      map[string]any{"insecure": true},
				"headers":  map[string]any{"authorization": "Bearer grpc-token"},
			},
			"otlp_http": map[string]any{
				"endpoint": "http://" + e.r.HTTPAddress(),
				"headers":  map[string]any{"Authorization": "Bearer http-token"},
			},
		},
		Pipelines: map[string]otelcoltest.Pipeline{
			"profiles/grpc": {Exporters: []string{"otlp_grpc"}},
			"profiles/http": {Exporters: []string{"otlp_http"}},
		},
	})

	ctx := context.Background()
	req, want := generated(21)
	cc, err := grpc.NewClient(col.GRPCEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = cc.Close() }()
	_, err = collectorpb.NewProfilesServiceClient(cc).Export(ctx, req)
	require.NoError(t, err, "the Collector accepts the export:\n%s", col.Logs())

	stored := func(tenant string) int64 {
		var total int64
		_ = e.conn.QueryRow(context.Background(), "SELECT sum(Value) FROM "+e.tables.Qualified("profile_samples")+" WHERE TenantId = ?", tenant).Scan(&total)
		return total
	}
	require.Eventually(t, func() bool { return stored("via-grpc") == want && stored("via-http") == want },
		60*time.Second, 200*time.Millisecond, "both exporters delivered the profiles; collector log:\n%s", col.Logs())
	var services []string
	require.NoError(t, e.conn.QueryRow(context.Background(), "SELECT groupUniqArray(ServiceName) FROM "+e.tables.Qualified("profile_samples")).Scan(&services))
	require.Equal(t, []string{"checkout"}, services, "resource attributes survive the Collector's string-table encoding")
}
