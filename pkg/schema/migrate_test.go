package schema_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

func TestMain(m *testing.M) { chtest.Main(m) }

// freshConfig returns a config for a database of its own, dropped after the test.
func freshConfig(t *testing.T, conn clickhouse.Conn) schema.Config {
	t.Helper()
	var b [5]byte
	_, _ = rand.Read(b[:])
	cfg := schema.DefaultConfig()
	cfg.Database = "schema_" + hex.EncodeToString(b[:])
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+cfg.Database) })
	return cfg
}

// migrated applies the schema for cfg and returns its migrator.
func migrated(t *testing.T, conn clickhouse.Conn, cfg schema.Config) *schema.Migrator {
	t.Helper()
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	_, err = m.Migrate(context.Background())
	require.NoError(t, err)
	return m
}

func TestMigrateCreatesEveryTable(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)

	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"0001_initial", "0002_rollup_dedup", "0003_symbols", "0004_dense_columns", "0005_profiles", "0006_series_projections", "0007_minute_rollup_marks"}, report.Applied)
	require.Equal(t, schema.LatestVersion(), report.Version)
	require.Empty(t, report.RetentionChanged, "tables are created with the configured TTL")

	for _, table := range schema.Tables {
		var n uint64
		require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ?",
			cfg.Database, cfg.Name(table)).Scan(&n))
		require.Positive(t, n, "table %s exists", table)
	}
	var engine string
	require.NoError(t, conn.QueryRow(ctx, "SELECT engine_full FROM system.tables WHERE database = ? AND name = ?",
		cfg.Database, cfg.Name(schema.Samples)).Scan(&engine))
	require.Contains(t, engine, "PARTITION BY toDate(Timestamp)")
	require.Contains(t, engine, "ORDER BY (TenantId, ServiceName, ProfileType, toStartOfMinute(Timestamp), StackId, Timestamp)")
	require.Contains(t, engine, "ttl_only_drop_parts = 1")
	require.Contains(t, engine, "non_replicated_deduplication_window = 1000")
	// Version 2: the rollups deduplicate a repeated insert as the samples do.
	for _, rollup := range []string{schema.SamplesMinute, schema.SamplesHour, schema.ServiceMinute, schema.ServiceHour} {
		require.NoError(t, conn.QueryRow(ctx, "SELECT engine_full FROM system.tables WHERE database = ? AND name = ?",
			cfg.Database, cfg.Name(rollup)).Scan(&engine))
		require.Contains(t, engine, "non_replicated_deduplication_window = 1000", rollup)
	}

	version, err := m.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, schema.LatestVersion(), version)
}

func TestMigrateIsIdempotent(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	m := migrated(t, conn, cfg)

	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.Empty(t, report.Applied, "nothing to apply the second time")

	// A migration whose record was lost (interrupted before it was written)
	// runs again without error.
	require.NoError(t, conn.Exec(ctx, "TRUNCATE TABLE "+cfg.Database+".otel_profile_schema_migrations"))
	report, err = m.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"0001_initial", "0002_rollup_dedup", "0003_symbols", "0004_dense_columns", "0005_profiles", "0006_series_projections", "0007_minute_rollup_marks"}, report.Applied)
}

func TestMigrateAppliesRetentionChanges(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	migrated(t, conn, cfg)

	cfg.Retention.Samples = 48 * time.Hour
	cfg.Retention.Hour = 0
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{
		"otel_profile_samples", "otel_profile_samples_1h", "otel_profile_service_samples_1h",
		"otel_profile_stacks", "otel_profile_frames", "otel_profile_series", "otel_profile_catalog", "otel_profile_sample_labels",
		"otel_profile_profiles",
	}, report.RetentionChanged)

	ttl := func(table string) string {
		var e string
		require.NoError(t, conn.QueryRow(ctx, "SELECT engine_full FROM system.tables WHERE database = ? AND name = ?", cfg.Database, table).Scan(&e))
		return e
	}
	require.Contains(t, ttl("otel_profile_samples"), "TTL Timestamp + toIntervalSecond(172800)")
	require.Contains(t, ttl("otel_profile_profiles"), "TTL FirstSample + toIntervalSecond(172800)", "profiles live as long as their samples")
	require.NotContains(t, ttl("otel_profile_samples_1h"), "TTL ")
	require.NotContains(t, ttl("otel_profile_stacks"), "TTL ", "metadata lives as long as the longest rollup: forever")

	report, err = m.Migrate(ctx)
	require.NoError(t, err)
	require.Empty(t, report.RetentionChanged, "a second run finds nothing to change")
}

func TestMigrateSymbolsRetention(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	cfg.Retention.Symbols = 30 * 24 * time.Hour
	m := migrated(t, conn, cfg)
	engine := func(table string) string {
		var e string
		require.NoError(t, conn.QueryRow(ctx, "SELECT engine_full FROM system.tables WHERE database = ? AND name = ?", cfg.Database, cfg.Name(table)).Scan(&e))
		return e
	}
	require.Contains(t, engine(schema.Symbols), "TTL toDateTime(intDiv(Version, 1000)) + toIntervalSecond(2592000)")
	require.Contains(t, engine(schema.Executables), "TTL UpdatedAt + toIntervalSecond(2592000)")
	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.Empty(t, report.RetentionChanged, "ClickHouse prints the TTLs back as the migration wrote them")

	cfg.Retention.Symbols = 0
	m, err = schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	report, err = m.Migrate(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"otel_profile_symbols", "otel_profile_executables"}, report.RetentionChanged)
	require.NotContains(t, engine(schema.Symbols), "TTL ")

	var cols uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name IN ('MappingStart', 'MappingOffset')",
		cfg.Database, cfg.Name(schema.Frames)).Scan(&cols))
	require.Equal(t, uint64(2), cols, "version 3 places unsymbolized frames' mappings")
}

func TestRollupsFollowSamples(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	migrated(t, conn, cfg)

	base := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+cfg.Qualified(schema.Samples)+
		" (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value, TraceId, SpanId, SampleAttributes)")
	require.NoError(t, err)
	const cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	for i := range 600 {
		ts := base.Add(time.Duration(i) * 10 * time.Second) // 100 minutes
		series := uint64(1 + (i/2)%2)
		require.NoError(t, batch.Append(ts, "t1", "checkout", cpu, uint64(100+i%2), series, int64(1000+i),
			"", "", map[string]string{"thread.name": fmt.Sprintf("worker-%d", i%3)}))
	}
	require.NoError(t, batch.Send())
	require.NoError(t, conn.Exec(ctx, "INSERT INTO "+cfg.Qualified(schema.Series)+
		" (TenantId, ServiceName, SeriesId, ResourceAttributes, LastSeen) VALUES ('t1', 'checkout', 1, map('k8s.pod.name', 'pod-1', 'k8s.namespace.name', 'prod'), today())"))

	// The rollups hold exactly the raw sums, by any grouping they keep.
	for _, rollup := range []struct{ table, bucket string }{{schema.SamplesMinute, "toStartOfMinute"}, {schema.SamplesHour, "toStartOfHour"}} {
		var mismatches uint64
		q := fmt.Sprintf(`SELECT count() FROM (
			SELECT %[1]s(Timestamp) AS b, StackId, SeriesId, sum(Value) AS v FROM %[2]s GROUP BY b, StackId, SeriesId) AS raw
			FULL OUTER JOIN (
			SELECT Timestamp AS b, StackId, SeriesId, sum(Value) AS v FROM %[3]s GROUP BY b, StackId, SeriesId) AS r
			USING (b, StackId, SeriesId) WHERE raw.v != r.v`,
			rollup.bucket, cfg.Qualified(schema.Samples), cfg.Qualified(rollup.table))
		require.NoError(t, conn.QueryRow(ctx, q).Scan(&mismatches))
		require.Zero(t, mismatches, "rollup %s equals the raw table", rollup.table)
	}
	var total int64
	var minuteRows, hourRows uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT sum(Value) FROM "+cfg.Qualified(schema.SamplesHour)).Scan(&total))
	require.Equal(t, int64(600*1000+600*599/2), total)
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM "+cfg.Qualified(schema.SamplesMinute)+" FINAL").Scan(&minuteRows))
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM "+cfg.Qualified(schema.SamplesHour)+" FINAL").Scan(&hourRows))
	require.Less(t, hourRows, minuteRows)
	require.Less(t, minuteRows, uint64(600))

	var pod string
	require.NoError(t, conn.QueryRow(ctx, "SELECT K8sPodName FROM "+cfg.Qualified(schema.Series)+" WHERE SeriesId = 1").Scan(&pod))
	require.Equal(t, "pod-1", pod, "series materialize their k8s columns from the attribute map")
}

// recordingConn records the statements a migrator executes.
type recordingConn struct {
	driver.Conn
	mu    sync.Mutex
	execs []string
}

func (r *recordingConn) Exec(ctx context.Context, query string, args ...any) error {
	r.mu.Lock()
	r.execs = append(r.execs, query)
	r.mu.Unlock()
	return r.Conn.Exec(ctx, query, args...)
}

// accessStatements returns the recorded statements that manage access.
func (r *recordingConn) accessStatements() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, q := range r.execs {
		for _, verb := range []string{"CREATE ROLE", "GRANT", "REVOKE", "ROW POLICY", "CREATE USER", "ALTER USER"} {
			if strings.Contains(q, verb) {
				out = append(out, q)
				break
			}
		}
	}
	return out
}

// The embedded engine (libchdb) has no writable access storage and refuses
// CREATE ROLE with ACCESS_DENIED: auto skips access control and says why,
// the schema itself is migrated.
func TestMigrateAccessControlAuto(t *testing.T) {
	srv := chtest.Get(t)
	conn := &recordingConn{Conn: srv.Open(t)}
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	require.Equal(t, schema.AccessControlAuto, cfg.AccessControl, "auto is the default")
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)

	report, err := m.Migrate(ctx)
	if srv.External && report.AccessControl {
		t.Skip("the external server applies access control; this test is about a server that refuses it")
	}
	require.NoError(t, err)
	require.Equal(t, schema.LatestVersion(), report.Version)
	require.Len(t, report.Applied, schema.LatestVersion())
	require.False(t, report.AccessControl)
	require.Contains(t, report.AccessControlSkipped, "the server refused CREATE ROLE IF NOT EXISTS `"+cfg.RoleName(schema.RoleAdmin)+"`")
	require.Contains(t, report.AccessControlSkipped, "497", "the reason carries the server's refusal")
	require.Equal(t, []string{cfg.AccessDDL()[0]}, conn.accessStatements(), "auto tried, and stopped at the first refusal")

	report, err = m.Migrate(ctx)
	require.NoError(t, err, "a second start skips again")
	require.Empty(t, report.Applied)
	require.NotEmpty(t, report.AccessControlSkipped)
}

func TestMigrateAccessControlOn(t *testing.T) {
	srv := chtest.Get(t)
	if srv.External {
		t.Skip("needs a server that refuses access control (the embedded engine)")
	}
	conn := srv.Open(t)
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	cfg.AccessControl = schema.AccessControlOn
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)

	report, err := m.Migrate(ctx)
	require.Error(t, err)
	require.ErrorContains(t, err, "access_control is on, but the server refused statement 1 (CREATE ROLE IF NOT EXISTS")
	require.ErrorContains(t, err, "set access_control to auto or off", "the error says what to do")
	var ex *clickhouse.Exception
	require.ErrorAs(t, err, &ex, "the server's exception is kept")
	require.EqualValues(t, 497, ex.Code)
	require.False(t, report.AccessControl)
	require.Equal(t, schema.LatestVersion(), report.Version, "the schema was migrated before access control was tried")
}

func TestMigrateAccessControlOff(t *testing.T) {
	conn := &recordingConn{Conn: chtest.Get(t).Open(t)}
	ctx := context.Background()
	cfg := freshConfig(t, conn)
	cfg.AccessControl = schema.AccessControlOff
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)

	report, err := m.Migrate(ctx)
	require.NoError(t, err)
	require.False(t, report.AccessControl)
	require.Equal(t, "access_control is off", report.AccessControlSkipped)
	require.Empty(t, conn.accessStatements(), "nothing is tried")
	require.NotEmpty(t, conn.execs, "the migrations ran")
}

// TestAccessDDLParses has ClickHouse parse every access statement
// (formatQuery: a syntax check, nothing is executed), in both modes, and
// checks that the clauses mean what the DDL intends.
func TestAccessDDLParses(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	cluster := schema.DefaultConfig()
	cluster.Cluster = "flamehouse"
	hash, salt := schema.HashPassword("secret", []byte("salt"))
	for _, cfg := range []schema.Config{schema.DefaultConfig(), cluster} {
		stmts := cfg.AccessDDL()
		for _, u := range []schema.TenantUser{
			{Name: "acme_reader", Tenant: "acme", PasswordSHA256Hex: hash, SaltHex: salt},
			{Name: "nasty", Tenant: "a'b\\'c\n", Existing: true},
		} {
			add, err := cfg.TenantUserDDL(u)
			require.NoError(t, err)
			stmts = append(stmts, add...)
		}
		for _, drop := range []bool{false, true} {
			d, err := cfg.DropTenantUserDDL("acme_reader", drop)
			require.NoError(t, err)
			stmts = append(stmts, d...)
		}
		formatted := make([]string, len(stmts))
		for i, stmt := range stmts {
			require.NoError(t, conn.QueryRow(ctx, "SELECT formatQuery(?)", stmt).Scan(&formatted[i]), "ClickHouse parses:\n%s", stmt)
			if cfg.Cluster != "" {
				require.Contains(t, formatted[i], "ON CLUSTER flamehouse", stmt)
			}
		}
		all := strings.Join(formatted, "\n")
		require.Contains(t, all, "AS permissive FOR SELECT USING 1 TO ALL")
		require.Contains(t, all, "AS restrictive FOR SELECT USING TenantId = 'acme' TO acme_reader")
		require.Contains(t, all, "IDENTIFIED WITH sha256_hash BY '"+hash+"' SALT '"+salt+"'")
		require.Contains(t, all, "MODIFY SETTING log_comment = 'flamehouse:tenant:a\\'b\\\\\\'c\\n'")
		require.Contains(t, all, "GRANT "+onCluster(cfg)+"INSERT ON otel.otel_profile_samples, ")
	}
}

func onCluster(cfg schema.Config) string {
	if cfg.Cluster == "" {
		return ""
	}
	return "ON CLUSTER " + cfg.Cluster + " "
}

// TestQuoteStringRoundTrip: every nasty tenant comes back from ClickHouse
// as it went in, and the row policy condition compares with exactly it.
func TestQuoteStringRoundTrip(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	for _, tenant := range []string{"acme", "", "a'b", `a\'b`, `a\`, "'", `\\'`, "a\nb", "a\r\tb", "a\x00b", "ü\u2028", "\xff\xfe", "a`b\"c", "x' OR 1 OR '"} {
		var got string
		var equal uint8
		lit := schema.QuoteStringLiteral(tenant)
		require.NoError(t, conn.QueryRow(ctx, "SELECT "+lit+", "+lit+" = ?", tenant).Scan(&got, &equal), "%q", tenant)
		require.Equal(t, tenant, got)
		require.EqualValues(t, 1, equal, "%q", tenant)
	}
}

// TestHashPasswordMatchesClickHouse: the hash is ClickHouse's own SHA256
// of the password followed by the salt text.
func TestHashPasswordMatchesClickHouse(t *testing.T) {
	conn := chtest.Get(t).Open(t)
	ctx := context.Background()
	for _, tc := range []struct {
		password string
		salt     []byte
	}{{"secret", []byte{0xde, 0xad, 0xbe, 0xef}}, {"pä$$ w'rd", []byte("0123456789abcdef0123456789abcdef")}, {"x", nil}} {
		hash, salt := schema.HashPassword(tc.password, tc.salt)
		var want string
		require.NoError(t, conn.QueryRow(ctx, "SELECT lower(hex(SHA256(concat(?, ?))))", tc.password, salt).Scan(&want))
		require.Equal(t, want, hash)
	}
}
