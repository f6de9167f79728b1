package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/dskit/services"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/ingest"
	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

const tenancyPassword = "tenant-Passw0rd"

// TestTenantUserDatasource feeds two tenants through the ingest, which
// writes as a writer user, and reads them through datasources: one as
// tenant a's user with no tenant setting, others as the admin with a
// tenant setting. Tenant a's user gets exactly what the admin gets for
// tenant a, whatever it asks for.
func TestTenantUserDatasource(t *testing.T) {
	srv := chtest.Get(t)
	_, tables := plugintest.MigratedTenancy(t)
	for _, u := range []chembed.User{
		{Name: "tenant_a", Role: chembed.RoleTenant, Tenant: "a"},
		{Name: "writer", Role: chembed.RoleWriter},
	} {
		u.Password = tenancyPassword
		srv.AddUser(t, u)
	}

	// The ingest writes with the writer user, which cannot read.
	writerConn := srv.Open(t, func(o *clickhouse.Options) { o.Auth = clickhouse.Auth{Username: "writer", Password: tenancyPassword} })
	var n uint64
	require.Error(t, writerConn.QueryRow(context.Background(), "SELECT count() FROM "+tables.Qualified(schema.Samples)).Scan(&n))
	wcfg := chclient.DefaultConfig()
	wcfg.Address, wcfg.Protocol, wcfg.Username, wcfg.Password = srv.Addr, chclient.ProtocolHTTP, "writer", tenancyPassword
	native, err := chclient.NewNativeInserter(wcfg)
	require.NoError(t, err)
	t.Cleanup(native.Close)
	cfg := ingest.DefaultConfig()
	cfg.Receiver.GRPCListenAddress, cfg.Receiver.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Writer.FlushInterval = 20 * time.Millisecond
	cfg.Receiver.Auth = receiver.AuthConfig{Enabled: true, Tokens: []receiver.TokenCredential{
		{Token: secret.String("token-a"), Tenant: "a"}, {Token: secret.String("token-b"), Tenant: "b"},
	}}
	in, err := ingest.New(cfg, tables, writerConn, native, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	require.NoError(t, services.StartAndAwaitRunning(context.Background(), in))
	t.Cleanup(func() { _ = services.StopAndAwaitTerminated(context.Background(), in) })

	at := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	reqA, batchA := plugintest.Report(t, at)
	gen := profilegen.DefaultConfig()
	gen.Stacks, gen.Pods, gen.SamplesPerSecond, gen.Locations, gen.Functions = 100, 2, 50, 800, 200
	reqB := profilegen.New(gen).Report(at) // unlike a's, so that answers differ
	renameService(reqB, "only-in-b")
	sendAs(t, in.HTTPAddress(), "token-a", reqA)
	sendAs(t, in.HTTPAddress(), "token-b", reqB)
	_, _, sumA := querytest.Top(batchA, plugintest.CPUOnly)
	require.NotZero(t, sumA)

	settings := func(user, tenant string) map[string]any {
		s := plugintest.EmbeddedSettings(t, tables.Database)
		s["username"] = user
		s["profiles"].(map[string]any)["tenant"] = tenant // built by embeddedSettings
		return s
	}
	asA := plugintest.Instance(t, settings("tenant_a", ""), map[string]string{"password": tenancyPassword})
	adminA := plugintest.Instance(t, settings(srv.Options.Auth.Username, "a"), map[string]string{"password": srv.Options.Auth.Password})
	adminB := plugintest.Instance(t, settings(srv.Options.Auth.Username, "b"), map[string]string{"password": srv.Options.Auth.Password})
	from, to := at.Add(-time.Minute), at.Add(time.Hour)

	for _, q := range []map[string]any{
		{"queryType": "profile", "profileTypeId": plugintest.CPUType},
		{"queryType": "table", "profileTypeId": plugintest.CPUType},
		{"queryType": "metrics", "profileTypeId": plugintest.CPUType, "groupBy": []string{"k8s_pod_name"}},
		{"queryType": "spans", "profileTypeId": plugintest.CPUType},
		{"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": `{thread_name=~".*"}`}, // the raw table
	} {
		want := answer(t, adminA, q, from, to)
		require.Equal(t, want, answer(t, asA, q, from, to), "%v: tenant a's user answers as the admin does for tenant a", q)
		require.NotEqual(t, want, answer(t, adminB, q, from, to), "%v: tenant b's answer differs", q)
	}
	require.Equal(t, sumA, plugintest.FlameRootValue(tenantQuery(t, asA, map[string]any{"profileTypeId": plugintest.CPUType}, from, to)))
	// A selector naming b's service finds nothing for a's user, and b's data for the admin.
	onlyB := map[string]any{"profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="only-in-b"}`}
	require.Zero(t, flameRootOrZero(tenantQuery(t, asA, onlyB, from, to)))
	require.Positive(t, flameRootOrZero(tenantQuery(t, adminB, onlyB, from, to)))
	// Editor lookups.
	require.Equal(t, `["checkout"]`, lookup(t, asA, "services"))
	require.Equal(t, `["only-in-b"]`, lookup(t, adminB, "services"))
	require.NotContains(t, lookup(t, asA, "labelValues?label=service_name"), "only-in-b")

	// Save & test: the user's tenant, that it cannot write, and a
	// disagreeing tenant setting.
	res, err := asA.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
	require.Contains(t, res.Message, `reads only tenant "a"`)
	require.Contains(t, res.Message, "cannot write")
	disagree := plugintest.Instance(t, settings("tenant_a", "b"), map[string]string{"password": tenancyPassword})
	res, err = disagree.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusError, res.Status)
	require.Contains(t, res.Message, `reads only tenant "a"`)
	require.Contains(t, res.Message, `datasource's tenant is "b"`)
	res, err = adminA.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
	require.Contains(t, res.Message, "can write to the Flamehouse tables")
}

// renameService sets every resource's service.name.
func renameService(req *collectorpb.ExportProfilesServiceRequest, name string) {
	for _, rp := range req.GetResourceProfiles() {
		for _, kv := range rp.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				kv.GetValue().Value = &commonpb.AnyValue_StringValue{StringValue: name}
			}
		}
	}
}

// sendAs exports a request over OTLP/HTTP with a tenant's token.
func sendAs(t *testing.T, addr, token string, req *collectorpb.ExportProfilesServiceRequest) {
	t.Helper()
	body, err := proto.Marshal(req)
	require.NoError(t, err)
	hr, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+addr+"/v1development/profiles", bytes.NewReader(body))
	require.NoError(t, err)
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func tenantQuery(t *testing.T, ds *plugin.Datasource, q map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	r := plugintest.Query(t, ds, q, from, to)
	require.NoError(t, r.Error)
	return r
}

// answer is a query's frames as JSON, to compare answers whole.
func answer(t *testing.T, ds *plugin.Datasource, q map[string]any, from, to time.Time) string {
	t.Helper()
	b, err := json.Marshal(tenantQuery(t, ds, q, from, to).Frames)
	require.NoError(t, err)
	return string(b)
}

func flameRootOrZero(r backend.DataResponse) int64 {
	if len(r.Frames) == 0 || r.Frames[0].Rows() == 0 {
		return 0
	}
	return plugintest.FlameRootValue(r)
}

// lookup calls an editor resource and returns its JSON body.
func lookup(t *testing.T, ds *plugin.Datasource, path string) string {
	t.Helper()
	var resp *backend.CallResourceResponse
	err := ds.CallResource(context.Background(), &backend.CallResourceRequest{Method: http.MethodGet, Path: strings.Split(path, "?")[0], URL: path},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { resp = r; return nil }))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
	return strings.TrimSpace(string(resp.Body))
}
