package schema

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// migrationSettings are the query settings of every migration statement:
// LowCardinality(UInt64) columns (schema version 4) need
// allow_suspicious_low_cardinality_types to be created or altered to.
var migrationSettings = clickhouse.Settings{"allow_suspicious_low_cardinality_types": 1}

// Report says what Migrate changed.
type Report struct {
	// Applied lists the migrations run now, as "0001_initial".
	Applied []string
	// Version is the schema version after Migrate.
	Version int
	// RetentionChanged lists the tables whose TTL was changed to the config.
	RetentionChanged []string
	// AccessControl says AccessDDL was applied (roles, grants, row policies).
	AccessControl bool
	// AccessControlSkipped says why it was not: access_control is off, or
	// (auto) the server refused it.
	AccessControlSkipped string
}

// Migrator applies the versioned schema to a database.
type Migrator struct {
	cfg  Config
	conn driver.Conn
	// Now is the clock used for AppliedAt (tests may set it).
	Now func() time.Time
}

// NewMigrator returns a migrator for cfg over conn.
func NewMigrator(cfg Config, conn driver.Conn) (*Migrator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("schema config: %w", err)
	}
	return &Migrator{cfg: cfg, conn: conn, Now: time.Now}, nil
}

// migrationsDDL is the bootstrap table that records applied migrations.
func (c *Config) migrationsDDL() []string {
	return []string{
		"CREATE DATABASE IF NOT EXISTS " + QuoteIdentifier(c.Database) + c.onCluster(),
		"CREATE TABLE IF NOT EXISTS " + c.qualifiedLocal(MigrationsTable) + c.onCluster() + "\n(\n" +
			"    `Version` UInt32,\n    `Name` String,\n    `AppliedAt` DateTime64(3)\n)\n" +
			"ENGINE = " + c.engine("ReplacingMergeTree", "AppliedAt") + "\nORDER BY Version",
	}
}

func (c *Config) qualifiedLocal(table string) string {
	return QuoteIdentifier(c.Database) + "." + QuoteIdentifier(c.localName(table))
}

// Migrate applies every migration not yet recorded, in order, then brings
// the tables' TTLs in line with the configured retention, then applies
// AccessDDL as Config.AccessControl says. Every statement is idempotent, so
// a migration interrupted half-way is simply run again, and access control
// is applied again on every start.
func (m *Migrator) Migrate(ctx context.Context) (Report, error) {
	report, err := m.MigrateTo(ctx, LatestVersion())
	if err != nil {
		return report, err
	}
	report.RetentionChanged, err = m.reconcileRetention(ctx)
	if err != nil {
		return report, err
	}
	err = m.applyAccessControl(ctx, &report)
	return report, err
}

// applyAccessControl runs AccessDDL unless access_control is off. With
// auto, a refusal (see accessRefused) stops it and is recorded in the
// report; with on, it is an error, as is any other failure in either mode.
func (m *Migrator) applyAccessControl(ctx context.Context, report *Report) error {
	if m.cfg.AccessControl == AccessControlOff {
		report.AccessControlSkipped = "access_control is off"
		return nil
	}
	for i, stmt := range m.cfg.AccessDDL() {
		err := m.conn.Exec(ctx, stmt)
		if err == nil {
			continue
		}
		head, _, _ := strings.Cut(stmt, "\n")
		if !accessRefused(err) {
			return fmt.Errorf("access control, statement %d (%s): %w", i+1, head, err)
		}
		if m.cfg.AccessControl == AccessControlOn {
			return fmt.Errorf("access_control is on, but the server refused statement %d (%s): %w "+
				"(migrate as a user with access management, or set access_control to auto or off)", i+1, head, err)
		}
		report.AccessControlSkipped = fmt.Sprintf("the server refused %s: %v", head, err)
		return nil
	}
	report.AccessControl = true
	return nil
}

// accessRefused reports whether err says the server does not let this
// user, or anyone, manage access: ACCESS_DENIED (a user without access
// management; the embedded engine), NOT_IMPLEMENTED, or a server without a
// writable access storage.
func accessRefused(err error) bool {
	var ex *clickhouse.Exception
	if errors.As(err, &ex) && (ex.Code == codeAccessDenied || ex.Code == codeNotImplemented) {
		return true
	}
	return strings.Contains(strings.ToLower(err.Error()), "access storage")
}

// ClickHouse error codes accessRefused recognises.
const (
	codeNotImplemented = 48
	codeAccessDenied   = 497
)

// MigrateTo applies the migrations not yet recorded up to and including
// version target, in order, and leaves retention as the migrations set it.
// Upgrade tests use it to build a database of an older schema.
func (m *Migrator) MigrateTo(ctx context.Context, target int) (Report, error) {
	var report Report
	for _, stmt := range m.cfg.migrationsDDL() {
		if err := m.conn.Exec(ctx, stmt); err != nil {
			return report, fmt.Errorf("create migrations table: %w", err)
		}
	}
	applied, err := m.appliedVersions(ctx)
	if err != nil {
		return report, err
	}
	migrations, err := m.cfg.Migrations()
	if err != nil {
		return report, err
	}
	for _, mig := range migrations {
		if mig.Version > target {
			break
		}
		report.Version = mig.Version
		if applied[mig.Version] {
			continue
		}
		for i, stmt := range mig.Statements {
			if err := m.conn.Exec(clickhouse.Context(ctx, clickhouse.WithSettings(migrationSettings)), stmt); err != nil {
				return report, fmt.Errorf("migration %04d_%s, statement %d: %w", mig.Version, mig.Name, i+1, err)
			}
		}
		err := m.conn.Exec(ctx, "INSERT INTO "+m.cfg.qualifiedLocal(MigrationsTable)+" (Version, Name, AppliedAt) VALUES (?, ?, ?)",
			uint32(mig.Version), mig.Name, m.Now()) //nolint:gosec // G115: versions are four digits
		if err != nil {
			return report, fmt.Errorf("record migration %04d_%s: %w", mig.Version, mig.Name, err)
		}
		report.Applied = append(report.Applied, fmt.Sprintf("%04d_%s", mig.Version, mig.Name))
	}
	return report, nil
}

func (m *Migrator) appliedVersions(ctx context.Context) (map[int]bool, error) {
	rows, err := queryStrings(ctx, m.conn, "SELECT toString(Version) FROM "+m.cfg.qualifiedLocal(MigrationsTable))
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	applied := map[int]bool{}
	for _, r := range rows {
		var v int
		if _, err := fmt.Sscan(r[0], &v); err == nil {
			applied[v] = true
		}
	}
	return applied, nil
}

// Version returns the highest applied migration, 0 when none is.
func (m *Migrator) Version(ctx context.Context) (int, error) {
	applied, err := m.appliedVersions(ctx)
	if err != nil {
		return 0, err
	}
	highest := 0
	for v := range applied {
		highest = max(highest, v)
	}
	return highest, nil
}

// LatestVersion is the version the code's migrations reach.
func LatestVersion() int {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return 0
	}
	latest := 0
	for _, e := range entries {
		if m := migrationNameRe.FindStringSubmatch(e.Name()); m != nil {
			var v int
			_, _ = fmt.Sscan(m[1], &v)
			latest = max(latest, v)
		}
	}
	return latest
}

// ttlTarget is a table whose TTL follows a retention class.
type ttlTarget struct {
	table, class, column string
}

var ttlTargets = []ttlTarget{
	{Samples, "samples", "Timestamp"},
	{SamplesMinute, "minute", "Timestamp"},
	{SamplesHour, "hour", "Timestamp"},
	{ServiceMinute, "minute", "Timestamp"},
	{ServiceHour, "hour", "Timestamp"},
	{Stacks, "metadata", "LastSeen"},
	{Frames, "metadata", "LastSeen"},
	{Series, "metadata", "LastSeen"},
	{Catalog, "metadata", "Hour"},
	{SampleLabels, "metadata", "Hour"},
	{Symbols, "symbols", symbolsTTLColumn},
	{Executables, "symbols", "UpdatedAt"},
	{Profiles, "samples", "FirstSample"},
}

// symbolsTTLColumn is the upload time of a profile_symbols row, from its
// Version (milliseconds), as the migration writes it and ClickHouse prints
// it back.
const symbolsTTLColumn = "toDateTime(intDiv(Version, 1000))"

var ttlRe = regexp.MustCompile(`\bTTL (.+?)(?: SETTINGS |$)`)

// reconcileRetention changes the TTL of tables whose retention differs
// from the config (retention changed after the tables were created).
func (m *Migrator) reconcileRetention(ctx context.Context) ([]string, error) {
	rows, err := queryStrings(ctx, m.conn, "SELECT name, engine_full FROM system.tables WHERE database = ?", m.cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("read table definitions: %w", err)
	}
	engines := map[string]string{}
	for _, r := range rows {
		engines[r[0]] = r[1]
	}
	var changed []string
	for _, t := range ttlTargets {
		name := m.cfg.localName(t.table)
		engineFull, ok := engines[name]
		if !ok {
			return changed, fmt.Errorf("table %s.%s is missing after migration", m.cfg.Database, name)
		}
		want, err := m.cfg.retention(t.class)
		if err != nil {
			return changed, err
		}
		current := ""
		if match := ttlRe.FindStringSubmatch(engineFull); match != nil {
			current = "TTL " + strings.TrimSpace(match[1])
		}
		target := ""
		if want > 0 {
			target = TTLExpression(t.column, want, t.column == "LastSeen")
		}
		if current == target {
			continue
		}
		alter := "ALTER TABLE " + m.cfg.qualifiedLocal(t.table) + m.cfg.onCluster()
		if target == "" {
			alter += " REMOVE TTL"
		} else {
			alter += " MODIFY " + target
		}
		if err := m.conn.Exec(ctx, alter); err != nil {
			return changed, fmt.Errorf("change retention of %s: %w", name, err)
		}
		changed = append(changed, name)
	}
	return changed, nil
}

// queryStrings runs a query whose columns are all String and returns its rows.
func queryStrings(ctx context.Context, conn driver.Conn, query string, args ...any) ([][]string, error) {
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	n := len(rows.Columns())
	var out [][]string
	for rows.Next() {
		row := make([]string, n)
		ptrs := make([]any, n)
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}
