package chembed_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// tenancyFixture is a migrated tenancy database holding rows of tenants
// "a" and "b" in every tenant table, and users of every role.
type tenancyFixture struct {
	srv    *chtest.Server
	tables schema.Config
	admin  clickhouse.Conn
	// counts are each table's rows per tenant, as the admin sees them.
	counts map[string]map[string]uint64
}

const tenancyPassword = "s3cret-Passw0rd"

// ttlColumn is the column each table's TTL counts from.
var ttlColumn = map[string]string{
	schema.Samples: "Timestamp", schema.SamplesMinute: "Timestamp", schema.SamplesHour: "Timestamp",
	schema.ServiceMinute: "Timestamp", schema.ServiceHour: "Timestamp",
	schema.Stacks: "LastSeen", schema.Frames: "LastSeen", schema.Series: "LastSeen",
	schema.Catalog: "Hour", schema.SampleLabels: "Hour", schema.Profiles: "FirstSample",
}

func newTenancyFixture(t *testing.T) *tenancyFixture {
	t.Helper()
	srv := chtest.Get(t)
	db := srv.NewTenancyDatabase(t)
	tables := schema.DefaultConfig()
	tables.Database = db
	ctx := context.Background()
	admin := srv.Open(t)
	m, err := schema.NewMigrator(tables, admin)
	require.NoError(t, err)
	_, err = m.Migrate(ctx)
	require.NoError(t, err)
	for _, tenant := range []string{"a", "b"} {
		for _, table := range schema.Tables {
			// A row per tenant and table (no two alike, so that no merge
			// folds them); the samples' rows reach the rollups through
			// their materialized views.
			cols, values := "TenantId", "?"
			if c := ttlColumn[table]; c != "" {
				cols, values = cols+", "+c, values+", now()" // within the table's TTL
			}
			require.NoError(t, admin.Exec(ctx, fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", tables.Qualified(table), cols, values), tenant), table)
		}
	}
	for _, u := range []chembed.User{
		{Name: "tenant_a", Role: chembed.RoleTenant, Tenant: "a"},
		{Name: "tenant_b", Role: chembed.RoleTenant, Tenant: "b"},
		{Name: "writer", Role: chembed.RoleWriter},
		{Name: "reader", Role: chembed.RoleReader},
	} {
		u.Password = tenancyPassword
		srv.AddUser(t, u)
	}
	f := &tenancyFixture{srv: srv, tables: tables, admin: admin}
	f.counts = f.countsAs(t, admin)
	for _, ref := range tables.TenantTables() {
		require.Equal(t, map[string]uint64{"a": f.counts[ref]["a"], "b": f.counts[ref]["b"]}, f.counts[ref], ref)
		require.Positive(t, f.counts[ref]["a"], "%s: the admin sees tenant a's rows", ref)
		require.Positive(t, f.counts[ref]["b"], "%s: the admin sees tenant b's rows", ref)
	}
	return f
}

// as connects as one of the fixture's users.
func (f *tenancyFixture) as(t *testing.T, user string) clickhouse.Conn {
	t.Helper()
	return f.srv.Open(t, func(o *clickhouse.Options) {
		o.Auth = clickhouse.Auth{Username: user, Password: tenancyPassword, Database: f.tables.Database}
	})
}

// countsAs counts every tenant table's rows by tenant as a user sees them.
func (f *tenancyFixture) countsAs(t *testing.T, conn clickhouse.Conn) map[string]map[string]uint64 {
	t.Helper()
	out := map[string]map[string]uint64{}
	for _, ref := range f.tables.TenantTables() {
		db, table, _ := strings.Cut(ref, ".")
		rows, err := conn.Query(context.Background(), fmt.Sprintf("SELECT TenantId, count() FROM %s.%s GROUP BY TenantId",
			schema.QuoteIdentifier(db), schema.QuoteIdentifier(table)))
		require.NoError(t, err, ref)
		out[ref] = map[string]uint64{}
		for rows.Next() {
			var tenant string
			var n uint64
			require.NoError(t, rows.Scan(&tenant, &n))
			out[ref][tenant] = n
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return out
}

// tenantsOf runs a query whose single String column is a tenant and
// returns the distinct tenants it answered.
func tenantsOf(t *testing.T, conn clickhouse.Conn, q string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), q)
	require.NoError(t, err, q)
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s), q)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	require.NoError(t, rows.Err(), q)
	slices.Sort(out)
	return out
}

func TestTenantUserSeesOnlyItsRows(t *testing.T) {
	f := newTenancyFixture(t)
	a := f.as(t, "tenant_a")
	seen := f.countsAs(t, a)
	for _, ref := range f.tables.TenantTables() {
		require.Equal(t, map[string]uint64{"a": f.counts[ref]["a"]}, seen[ref], "%s as tenant a", ref)
	}
	db := schema.QuoteIdentifier(f.tables.Database)
	samples, stacks := f.tables.Qualified(schema.Samples), f.tables.Qualified(schema.Stacks)
	minute := f.tables.Qualified(schema.SamplesMinute)
	for _, q := range []string{
		"SELECT TenantId FROM " + samples,
		"SELECT TenantId FROM " + samples + " WHERE TenantId = 'b' OR 1",
		"SELECT TenantId FROM " + stacks + " FINAL",
		"SELECT s.TenantId FROM " + samples + " AS s CROSS JOIN " + stacks + " AS k",
		"SELECT k.TenantId FROM " + samples + " AS s CROSS JOIN " + stacks + " AS k",
		"SELECT k.TenantId FROM " + samples + " AS s RIGHT JOIN " + stacks + " AS k ON s.StackId = k.StackId",
		"SELECT TenantId FROM " + samples + " UNION ALL SELECT TenantId FROM " + stacks,
		"SELECT TenantId FROM (SELECT * FROM " + samples + " UNION DISTINCT SELECT * FROM " + samples + ")",
		"SELECT TenantId FROM " + stacks + " WHERE TenantId IN (SELECT 'b' UNION ALL SELECT TenantId FROM " + samples + ")",
		"WITH x AS (SELECT TenantId FROM " + minute + ") SELECT TenantId FROM x",
		"SELECT TenantId FROM view(SELECT TenantId FROM " + samples + ")",
		"SELECT TenantId FROM " + db + ".`otel_profile_samples_1m_mv`",
		"SELECT arrayJoin(groupArray(TenantId)) FROM " + samples,
		// The marker in log_comment is the front's: a URL setting is replaced.
		"SELECT TenantId FROM " + samples,
	} {
		require.Equal(t, []string{"a"}, tenantsOf(t, a, q), q)
	}
	var marker, comment string
	require.NoError(t, a.QueryRow(clickhouse.Context(context.Background(), clickhouse.WithSettings(clickhouse.Settings{"chdb_client_name": "flamehouse:all:x"})),
		"SELECT getSetting('chdb_client_name'), getSetting('log_comment')").Scan(&marker, &comment))
	require.Equal(t, "flamehouse:tenant:a", marker, "tenant a's statements carry its marker whatever the client sends")
	require.Equal(t, "flamehouse:tenant:a", comment, "a tenant user's log_comment defaults to its marker")
	require.NoError(t, a.QueryRow(clickhouse.Context(context.Background(), clickhouse.WithSettings(clickhouse.Settings{"log_comment": "grafana"})),
		"SELECT getSetting('log_comment')").Scan(&comment))
	require.Equal(t, "grafana", comment, "a client's own log_comment is kept: it lifts nothing")
	var n uint64
	for _, settings := range []clickhouse.Settings{{"chdb_client_name": ""}, {"log_comment": ""}, {"log_comment": "flamehouse:tenant:b"}} {
		require.NoError(t, a.QueryRow(clickhouse.Context(context.Background(), clickhouse.WithSettings(settings)),
			"SELECT count() FROM "+samples+" WHERE TenantId = 'b'").Scan(&n))
		require.Zero(t, n, "%v", settings)
	}

	b := f.as(t, "tenant_b")
	require.Equal(t, []string{"b"}, tenantsOf(t, b, "SELECT TenantId FROM "+samples+" UNION ALL SELECT TenantId FROM "+stacks))
	// Tenant users share engine sessions: a's marker must not outlive its request.
	for range 6 {
		require.Equal(t, []string{"a"}, tenantsOf(t, a, "SELECT TenantId FROM "+samples))
		require.Equal(t, []string{"b"}, tenantsOf(t, b, "SELECT TenantId FROM "+samples))
		require.Equal(t, []string{"a", "b"}, tenantsOf(t, f.admin, "SELECT TenantId FROM "+samples))
	}
}

func TestTenantUserIsRefusedWritesAndWorkarounds(t *testing.T) {
	f := newTenancyFixture(t)
	a := f.as(t, "tenant_a")
	db := schema.QuoteIdentifier(f.tables.Database)
	samples := f.tables.Qualified(schema.Samples)
	ctx := context.Background()
	for _, c := range []struct {
		sql  string
		code int32
	}{
		{"INSERT INTO " + samples + " (TenantId) VALUES ('b')", chembed.CodeReadonly},
		{"INSERT INTO " + samples + " (TenantId) SELECT 'a'", chembed.CodeReadonly},
		{"ALTER TABLE " + samples + " DELETE WHERE TenantId = 'b'", chembed.CodeReadonly},
		{"ALTER TABLE " + samples + " DROP PARTITION tuple()", chembed.CodeReadonly},
		{"DELETE FROM " + samples + " WHERE 1", chembed.CodeReadonly},
		{"DROP TABLE " + samples, chembed.CodeReadonly},
		{"TRUNCATE TABLE " + samples, chembed.CodeReadonly},
		{"OPTIMIZE TABLE " + samples + " FINAL", chembed.CodeReadonly},
		{"CREATE TABLE " + db + ".x (a UInt8) ENGINE = Memory", chembed.CodeReadonly},
		{"RENAME TABLE " + samples + " TO " + db + ".y", chembed.CodeReadonly},
		{"KILL QUERY WHERE 1", chembed.CodeReadonly},
		{"SYSTEM FLUSH LOGS", chembed.CodeReadonly},
		{"SET chdb_client_name = 'flamehouse:all:x'", chembed.CodeReadonly},
		{"USE system", chembed.CodeReadonly},
		{"SELECT count() FROM " + samples + " SETTINGS chdb_client_name = 'flamehouse:all:x'", chembed.CodeAccessDenied},
		{"SELECT count() FROM " + samples + " SETTINGS `chdb_client_name` = ''", chembed.CodeAccessDenied},
		{"SELECT count() FROM (SELECT * FROM " + samples + " SETTINGS `CHDB_CLIENT_NAME` = '')", chembed.CodeAccessDenied},
		{"SELECT count() FROM " + samples + " SETTINGS use_query_cache = 1", chembed.CodeAccessDenied},
		{"SELECT * FROM system.parts", chembed.CodeAccessDenied},
		{"SELECT * FROM system.processes", chembed.CodeAccessDenied},
		{"SELECT * FROM `system`.`query_log`", chembed.CodeAccessDenied},
		{"SELECT * FROM `\\x73ystem`.parts", chembed.CodeAccessDenied},
		{"SELECT * FROM system . parts_columns", chembed.CodeAccessDenied},
		{"SELECT * FROM system.mutations", chembed.CodeAccessDenied},
		{"SELECT * FROM INFORMATION_SCHEMA.processlist", chembed.CodeAccessDenied},
		{"SELECT * FROM merge(" + db + ", '^otel')", chembed.CodeAccessDenied},
		{"SELECT * FROM mergeTreeIndex(" + db + ", otel_profile_samples)", chembed.CodeAccessDenied},
		{"SELECT * FROM remote('127.0.0.1', " + samples + ")", chembed.CodeAccessDenied},
		{"SELECT * FROM loop(" + samples + ") LIMIT 1", chembed.CodeAccessDenied},
		{"SELECT dictGet('d', 'a', 1)", chembed.CodeAccessDenied},
		{"SELECT joinGet('j', 'a', 1)", chembed.CodeAccessDenied},
		{"SHOW PROCESSLIST", chembed.CodeAccessDenied},
		{"SHOW CREATE USER tenant_b", chembed.CodeAccessDenied},
		{"EXPLAIN ESTIMATE SELECT * FROM " + samples, chembed.CodeAccessDenied},
	} {
		err := a.Exec(ctx, c.sql)
		require.Error(t, err, c.sql)
		ex := chException(t, err)
		require.Equal(t, c.code, ex.Code, "%s: %v", c.sql, err)
		require.NotEmpty(t, ex.Message, c.sql)
	}
	// The database URL parameter cannot point a tenant user at system.
	sys := f.srv.Open(t, func(o *clickhouse.Options) {
		o.Auth = clickhouse.Auth{Username: "tenant_a", Password: tenancyPassword, Database: "system"}
	})
	require.Equal(t, int32(chembed.CodeAccessDenied), chException(t, sys.Exec(ctx, "SELECT * FROM parts")).Code)
	// Nothing of b's changed, and a still reads its own.
	require.Equal(t, f.counts, f.countsAs(t, f.admin))
	var n uint64
	require.NoError(t, a.QueryRow(ctx, "SELECT count() FROM system.one").Scan(&n))
	require.Equal(t, uint64(1), n)
	require.NoError(t, a.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ?", f.tables.Database).Scan(&n))
	require.Positive(t, n, "a tenant user may list the tables (the datasource's health check does)")
}

func TestWriterAndReaderRoles(t *testing.T) {
	f := newTenancyFixture(t)
	ctx := context.Background()
	samples, stacks := f.tables.Qualified(schema.Samples), f.tables.Qualified(schema.Stacks)
	w := f.as(t, "writer")
	require.NoError(t, w.Ping(ctx))
	require.Equal(t, int32(chembed.CodeAccessDenied), chException(t, w.Exec(ctx, "SELECT count() FROM "+samples)).Code)
	require.Equal(t, int32(chembed.CodeAccessDenied), chException(t, w.Exec(ctx, "SELECT (SELECT count() FROM "+samples+")")).Code)
	require.Equal(t, int32(chembed.CodeAccessDenied), chException(t, w.Exec(ctx, "INSERT INTO "+stacks+" (TenantId) SELECT TenantId FROM "+samples)).Code)
	require.Equal(t, int32(chembed.CodeAccessDenied), chException(t, w.Exec(ctx, "DROP TABLE "+samples)).Code)
	require.Equal(t, int32(chembed.CodeAccessDenied), chException(t, w.Exec(ctx,
		"INSERT INTO "+schema.QuoteIdentifier(f.tables.Database)+".`otel_profile_schema_migrations` (Version) VALUES (99)")).Code)
	// A writer's batch insert (DESCRIBE, then INSERT ... FORMAT Native) works, and the rollups get its rows.
	batch, err := w.PrepareBatch(ctx, "INSERT INTO "+samples+" (TenantId, ServiceName, Timestamp)")
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, batch.Append("c", "svc-c", time.Now()))
	}
	require.NoError(t, batch.Send())
	after := f.countsAs(t, f.admin)
	require.Equal(t, uint64(3), after[f.tables.Database+"."+f.tables.Name(schema.Samples)]["c"])
	require.Positive(t, after[f.tables.Database+"."+f.tables.Name(schema.SamplesMinute)]["c"], "the writer's rows reach the rollups")

	r := f.as(t, "reader")
	require.Equal(t, []string{"a", "b", "c"}, tenantsOf(t, r, "SELECT TenantId FROM "+samples))
	require.Equal(t, int32(chembed.CodeReadonly), chException(t, r.Exec(ctx, "INSERT INTO "+samples+" (TenantId) VALUES ('x')")).Code)
	require.Equal(t, int32(chembed.CodeReadonly), chException(t, r.Exec(ctx, "TRUNCATE TABLE "+samples)).Code)
}

func TestTenantUsersAuthentication(t *testing.T) {
	f := newTenancyFixture(t)
	ctx := context.Background()
	wrong := f.srv.Open(t, func(o *clickhouse.Options) {
		o.Auth = clickhouse.Auth{Username: "tenant_a", Password: "not-" + tenancyPassword, Database: f.tables.Database}
	})
	err := wrong.Ping(ctx)
	ex := chException(t, err)
	require.Equal(t, int32(chembed.CodeAuthenticationFailed), ex.Code)
	require.NotContains(t, err.Error(), tenancyPassword)
	// Over plain HTTP: the real server's status for a wrong password, and
	// no trace of either password in the answer.
	q := url.Values{"query": {"SELECT 1"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+f.srv.Addr+"/?"+q.Encode(), nil)
	require.NoError(t, err)
	req.SetBasicAuth("tenant_a", "wrong-password")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, string(body), "AUTHENTICATION_FAILED")
	require.NotContains(t, string(body), "wrong-password")
	require.NotContains(t, string(body), tenancyPassword)
	// A second HTTP front on the same engine, logging everything: no
	// password reaches its log, right or wrong.
	var logs bytes.Buffer
	cfg := f.srv.Engine.Config()
	cfg.ListenAddress = "127.0.0.1:0"
	front, err := chembed.NewServer(f.srv.Engine, cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.NoError(t, err)
	ln, err := front.Listen(ctx)
	require.NoError(t, err)
	go func() { _ = front.Serve(ln) }()
	t.Cleanup(func() { _ = front.Shutdown(context.Background()) })
	for _, pw := range []string{tenancyPassword, "wrong-password"} {
		c := f.srv.Open(t, func(o *clickhouse.Options) {
			o.Addr = []string{ln.Addr().String()}
			o.Auth = clickhouse.Auth{Username: "tenant_a", Password: pw, Database: f.tables.Database}
		})
		_ = c.Ping(ctx)
	}
	// A users file that stops parsing keeps the users loaded before, and
	// is reported once, without its contents.
	usersPath := filepath.Join(f.srv.Engine.Config().DataDir, chembed.DefaultUsersFile)
	good, err := os.ReadFile(usersPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(usersPath, []byte("users: [ {name: x, password: hunter2-in-clear"), 0o600))
	for range 3 {
		c := f.srv.Open(t, func(o *clickhouse.Options) {
			o.Addr = []string{ln.Addr().String()}
			o.Auth = clickhouse.Auth{Username: "tenant_a", Password: tenancyPassword, Database: f.tables.Database}
		})
		require.NoError(t, c.Ping(ctx), "the users loaded before stay")
	}
	require.NoError(t, os.WriteFile(usersPath, good, 0o600))
	require.Equal(t, 1, strings.Count(logs.String(), "users file does not load"), logs.String())
	require.NotContains(t, logs.String(), "hunter2")
	require.Contains(t, logs.String(), "request", "the front logged the requests")
	require.NotContains(t, logs.String(), tenancyPassword)
	require.NotContains(t, logs.String(), "wrong-password")
	require.NotContains(t, logs.String(), chembed.PasswordSHA256(tenancyPassword))
	// The users file keeps hashes only.
	users, err := chembed.ReadUsersFile(f.srv.Engine.Config().DataDir + "/" + chembed.DefaultUsersFile)
	require.NoError(t, err)
	for _, u := range users.Users {
		require.Empty(t, u.Password.Value(), u.Name)
		require.Equal(t, chembed.PasswordSHA256(tenancyPassword), u.PasswordSHA256Hex)
	}
}
