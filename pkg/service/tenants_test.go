package service

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

// TestTenantsOnTheEmbeddedEngine is the least-privilege setup of
// docs/security.md on one machine: the ingest writes with a writer user
// declared in the configuration, `flamehouse tenants add` creates a tenant
// user while the service runs, that user reads its tenant's rows only, and
// `flamehouse tenants remove` takes it away. No password is printed.
func TestTenantsOnTheEmbeddedEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	const writerPassword, tenantPassword = "writer-Secret-1", "tenant-Secret-2"
	cfg := localConfig(t)
	cfg.SelfProfile.Enabled = false
	cfg.Embedded.Users = []chembed.User{{Name: "ingest", Role: chembed.RoleWriter, PasswordSHA256Hex: chembed.PasswordSHA256(writerPassword)}}
	t.Setenv("FLAMEHOUSE_TEST_WRITER_PASSWORD", writerPassword)
	cfg.Writer = Credentials{Username: "ingest", PasswordEnv: "FLAMEHOUSE_TEST_WRITER_PASSWORD"}
	t.Setenv("FLAMEHOUSE_TEST_OTHER_PASSWORD", "other-Secret-3")
	cfg.Tenants = []TenantUserConfig{{User: "other_viewer", Tenant: "other", PasswordEnv: "FLAMEHOUSE_TEST_OTHER_PASSWORD"}}
	cfg.Ingest.Receiver.Auth = receiver.AuthConfig{Enabled: true, Tokens: []receiver.TokenCredential{
		{Token: secret.String("token-acme"), Tenant: "acme"}, {Token: secret.String("token-other"), Tenant: "other"},
	}}
	ctx := context.Background()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	defer func() { require.NoError(t, svc.Stop(ctx)) }()

	_, httpAddr := svc.IngestAddresses()
	g := profilegen.New(profilegen.DefaultConfig())
	at := time.Now().Add(-10 * time.Minute)
	for tenant, token := range map[string]string{"acme": "token-acme", "other": "token-other"} {
		body, err := proto.Marshal(g.Report(at))
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+httpAddr+"/v1development/profiles", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: the ingest writes as the writer user", tenant)
	}

	pwFile := filepath.Join(t.TempDir(), "password")
	require.NoError(t, os.WriteFile(pwFile, []byte(tenantPassword+"\n"), 0o600))
	cli := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := Main(append(args, "-embedded.data-dir", cfg.Embedded.DataDir), &out, &errOut)
		all := out.String() + errOut.String()
		require.NotContains(t, all, tenantPassword)
		return all, code
	}
	out, code := cli("tenants", "add", "-tenant", "acme", "-user", "acme_viewer", "-password-file", pwFile)
	require.Equal(t, 0, code, out)
	out, code = cli("tenants", "list")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "acme_viewer")
	require.Contains(t, out, `"acme"`)
	out, code = cli("tenants", "add", "-tenant", "acme", "-user", "x")
	require.Equal(t, 2, code, "a password is required: %s", out)

	tables := schema.DefaultConfig()
	open := func(user, password string) clickhouse.Conn {
		conn, err := clickhouse.Open(&clickhouse.Options{
			Protocol: clickhouse.HTTP, Addr: []string{svc.HTTPAddress()},
			Auth: clickhouse.Auth{Username: user, Password: password},
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	viewer := open("acme_viewer", tenantPassword)
	tenantsSeen := func(conn clickhouse.Conn) []string {
		var got []string
		require.NoError(t, conn.QueryRow(ctx, "SELECT groupArray(DISTINCT TenantId) FROM (SELECT TenantId FROM "+
			tables.Qualified(schema.Samples)+" UNION ALL SELECT TenantId FROM "+tables.Qualified(schema.Stacks)+")").Scan(&got))
		return got
	}
	require.Equal(t, []string{"acme"}, tenantsSeen(viewer))
	require.Equal(t, []string{"other"}, tenantsSeen(open("other_viewer", "other-Secret-3")), "a tenant user declared in the configuration")
	require.ElementsMatch(t, []string{"acme", "other"}, tenantsSeen(svc.Conn()))
	var n uint64
	writer := open("ingest", writerPassword)
	var ex *clickhouse.Exception
	require.ErrorAs(t, writer.QueryRow(ctx, "SELECT count() FROM "+tables.Qualified(schema.Samples)).Scan(&n), &ex, "the writer cannot read")
	require.Equal(t, int32(chembed.CodeAccessDenied), ex.Code)

	out, code = cli("tenants", "remove", "-user", "acme_viewer")
	require.Equal(t, 0, code, out)
	err = open("acme_viewer", tenantPassword).Ping(ctx)
	require.ErrorAs(t, err, &ex)
	require.Equal(t, int32(chembed.CodeAuthenticationFailed), ex.Code)
	users, err := os.ReadFile(filepath.Join(cfg.Embedded.DataDir, chembed.DefaultUsersFile))
	require.NoError(t, err)
	require.NotContains(t, string(users), tenantPassword)
}

// TestDeclaredTenantsNeedAccessControl: on an external server that did not
// take the roles and row policies, declared tenant users are an error, not
// users without isolation.
func TestDeclaredTenantsNeedAccessControl(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ClickHouse.Address = "ch.invalid:9000"
	cfg.Tenants = []TenantUserConfig{{User: "acme_viewer", Tenant: "acme", PasswordEnv: "UNUSED"}}
	s := &Service{cfg: cfg, Migration: schema.Report{AccessControlSkipped: "the server refused CREATE ROLE"}}
	err := s.applyTenants(context.Background())
	require.ErrorContains(t, err, "roles and row policies were not applied")
	require.ErrorContains(t, err, "refused CREATE ROLE")

	for _, bad := range []TenantUserConfig{
		{Tenant: "acme", PasswordEnv: "X"},
		{User: "u", Tenant: "acme"},
		{User: "u", PasswordEnv: "X", PasswordFile: "f"},
		{User: "u", Existing: true, PasswordFile: "f"},
	} {
		require.Error(t, bad.Validate(), "%+v", bad)
	}
	require.NoError(t, (&TenantUserConfig{User: "u", Existing: true}).Validate())
}
