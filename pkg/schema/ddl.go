package schema

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// Table names, without the configured prefix. Symbols holds the flattened
// address ranges of executables by build id (schema version 3); Executables
// one row per stored executable.
const (
	Samples       = "profile_samples"
	SamplesMinute = "profile_samples_1m"
	SamplesHour   = "profile_samples_1h"
	ServiceMinute = "profile_service_samples_1m"
	ServiceHour   = "profile_service_samples_1h"
	Stacks        = "profile_stacks"
	Frames        = "profile_frames"
	Series        = "profile_series"
	Catalog       = "profile_catalog"
	SampleLabels  = "profile_sample_labels"
	Symbols       = "profile_symbols"
	Executables   = "profile_executables"
	// Profiles lists the profiles as they came in, one row each (schema
	// version 5).
	Profiles        = "profile_profiles"
	MigrationsTable = "profile_schema_migrations"
)

// Tables lists every table that holds data, in creation order.
var Tables = []string{
	Samples, SamplesMinute, SamplesHour, ServiceMinute, ServiceHour, Stacks, Frames, Series, Catalog, SampleLabels,
	Symbols, Executables, Profiles,
}

// ShardingKey is the sharding expression of a table's Distributed table in
// cluster mode: by tenant and service, so that a service's samples, stacks
// and frames share a shard; the symbol tables by tenant and build id.
func ShardingKey(table string) string {
	if table == Symbols || table == Executables {
		return "cityHash64(TenantId, BuildId)"
	}
	return "cityHash64(TenantId, ServiceName)"
}

// rollup describes one pre-aggregated table.
type rollup struct {
	Table, View, Bucket, Partition, Retention string
	// BySeries keeps SeriesId (resource labels) in the key; without it a
	// row sums a stack over every series of a service.
	BySeries bool
	// Marked rolls up only the raw rows marked InMinuteRollups (schema
	// version 7): the per-minute rollups, which the writer leaves out
	// where they would not merge (MinuteRollupColumn).
	Marked bool
}

// MinuteRollupColumn is the raw samples' column that says whether the
// per-minute rollups hold the row (schema version 7). The writer sets it
// per insert and service; rows without it (written before version 7, or
// by an older writer) count as held, as they were rolled up. A range's
// whole minutes are read from the minute rollup plus the raw rows
// without the mark, so answers are exact whatever the mix.
const MinuteRollupColumn = "InMinuteRollups"

// query is the SELECT of the rollup's materialized view over the samples
// table (qualified): the raw rows summed per bucket and key; with marked,
// only the rows marked MinuteRollupColumn.
func (r rollup) query(samples string, marked bool) string {
	keys := []string{"TenantId", "ServiceName", "ProfileType", "StackId"}
	if r.BySeries {
		keys = append(keys, "SeriesId")
	}
	cols := append(append([]string{r.Bucket + "(Timestamp) AS Timestamp"}, keys...), "sum(Value) AS Value")
	q := "SELECT\n    " + strings.Join(cols, ",\n    ") + "\nFROM " + samples + "\n"
	if marked {
		q += "WHERE " + QuoteIdentifier(MinuteRollupColumn) + "\n"
	}
	return q + "GROUP BY Timestamp, " + strings.Join(keys, ", ")
}

var rollups = []rollup{
	{Table: SamplesMinute, View: SamplesMinute + "_mv", Bucket: "toStartOfMinute", Partition: "toDate(Timestamp)", Retention: "minute", BySeries: true, Marked: true},
	{Table: SamplesHour, View: SamplesHour + "_mv", Bucket: "toStartOfHour", Partition: "toMonday(Timestamp)", Retention: "hour", BySeries: true},
	{Table: ServiceMinute, View: ServiceMinute + "_mv", Bucket: "toStartOfMinute", Partition: "toDate(Timestamp)", Retention: "minute", Marked: true},
	{Table: ServiceHour, View: ServiceHour + "_mv", Bucket: "toStartOfHour", Partition: "toMonday(Timestamp)", Retention: "hour"},
}

// Name returns the unqualified name a table has for readers: the
// Distributed table in cluster mode, the table itself otherwise.
func (c *Config) Name(table string) string { return c.TablePrefix + table }

// localName returns the name of the table that stores the data.
func (c *Config) localName(table string) string {
	if c.Cluster != "" {
		return c.TablePrefix + table + "_local"
	}
	return c.TablePrefix + table
}

// Qualified returns `database`.`table` for readers and writers of table.
func (c *Config) Qualified(table string) string {
	return QuoteIdentifier(c.Database) + "." + QuoteIdentifier(c.Name(table))
}

// QuoteIdentifier quotes a database, table or column name for ClickHouse.
// Names are validated before they get here; quoting is the second line.
func QuoteIdentifier(name string) string {
	return "`" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(name) + "`"
}

func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

//go:embed migrations/*.sql.tmpl
var migrationFiles embed.FS

// Migration is one versioned step of the schema.
type Migration struct {
	Version int
	Name    string
	// Statements are the DDL statements, in order; each is idempotent.
	Statements []string
}

var migrationNameRe = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql\.tmpl$`)

// Migrations renders every migration for the config, oldest first.
func (c *Config) Migrations() ([]Migration, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("schema config: %w", err)
	}
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		m := migrationNameRe.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q is not named NNNN_name.sql.tmpl", e.Name())
		}
		version, _ := strconv.Atoi(m[1])
		stmts, err := c.render(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: version, Name: m[2], Statements: stmts})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	return out, nil
}

// render executes one migration template and splits it into statements.
func (c *Config) render(file string) ([]string, error) {
	tmpl, err := template.New(path.Base(file)).Funcs(c.templateFuncs()).ParseFS(migrationFiles, file)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, nil); err != nil {
		return nil, fmt.Errorf("render %s: %w", file, err)
	}
	return splitStatements(buf.String()), nil
}

// splitStatements splits rendered DDL at semicolons that end a line,
// dropping comments and statements that rendered empty.
func splitStatements(sql string) []string {
	var out []string
	var cur []string
	flush := func() {
		stmt := strings.TrimSpace(strings.Join(cur, "\n"))
		cur = cur[:0]
		if stmt != "" {
			out = append(out, stmt)
		}
	}
	for line := range strings.SplitSeq(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") {
			continue
		}
		if strings.HasSuffix(trimmed, ";") {
			cur = append(cur, strings.TrimRight(strings.TrimSuffix(strings.TrimRight(line, " \t"), ";"), " \t"))
			flush()
			continue
		}
		if trimmed != "" || len(cur) > 0 {
			cur = append(cur, strings.TrimRight(line, " \t"))
		}
	}
	flush()
	return out
}

func (c *Config) templateFuncs() template.FuncMap {
	return template.FuncMap{
		"db":          func() string { return QuoteIdentifier(c.Database) },
		"local":       func(t string) string { return QuoteIdentifier(c.Database) + "." + QuoteIdentifier(c.localName(t)) },
		"qualified":   c.Qualified,
		"view":        func(v string) string { return QuoteIdentifier(c.Database) + "." + QuoteIdentifier(c.TablePrefix+v) },
		"onCluster":   c.onCluster,
		"engine":      c.engine,
		"ttl":         c.ttl,
		"distributed": c.distributed,
		"rollups":     func() []rollup { return rollups },
		"rollupQuery": func(r rollup, marked bool) string { return r.query(c.qualifiedLocal(Samples), marked) },
	}
}

func (c *Config) onCluster() string {
	if c.Cluster == "" {
		return ""
	}
	return " ON CLUSTER " + quoteString(c.Cluster)
}

// engine renders a MergeTree-family engine; in cluster mode its Replicated
// variant with the configured path and replica.
func (c *Config) engine(kind, version string) string {
	var args []string
	if c.Cluster != "" {
		kind = "Replicated" + kind
		args = append(args, quoteString(c.ReplicationPath), quoteString(c.ReplicaName))
	}
	if version != "" {
		args = append(args, version)
	}
	if len(args) == 0 && kind == "MergeTree" {
		return kind
	}
	return kind + "(" + strings.Join(args, ", ") + ")"
}

// ttl renders the TTL clause (with a trailing newline) for a retention
// class: samples, minute, hour, metadata or symbols. Date columns expire
// by day.
func (c *Config) ttl(class, column string) (string, error) {
	d, err := c.retention(class)
	if err != nil || d == 0 {
		return "", err
	}
	return TTLExpression(column, d, column == "LastSeen") + "\n", nil
}

// TTLExpression is the TTL clause for a column and retention, in the form
// ClickHouse prints it back in system.tables.engine_full.
func TTLExpression(column string, d time.Duration, date bool) string {
	if date {
		days := int64((d + 24*time.Hour - 1) / (24 * time.Hour))
		return fmt.Sprintf("TTL %s + toIntervalDay(%d)", column, days)
	}
	return fmt.Sprintf("TTL %s + toIntervalSecond(%d)", column, int64(d/time.Second))
}

func (c *Config) retention(class string) (time.Duration, error) {
	switch class {
	case "samples":
		return c.Retention.Samples, nil
	case "minute":
		return c.Retention.Minute, nil
	case "hour":
		return c.Retention.Hour, nil
	case "metadata":
		return c.Retention.metadataRetention(), nil
	case "symbols":
		return c.Retention.Symbols, nil
	}
	return 0, fmt.Errorf("unknown retention class %q", class)
}

// distributed renders, in cluster mode, the Distributed table over a local
// table; in single-node mode nothing.
func (c *Config) distributed(table, shardingKey string) string {
	if c.Cluster == "" {
		return ""
	}
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s%s AS %s.%s\nENGINE = Distributed(%s, %s, %s, %s)",
		c.Qualified(table), c.onCluster(), QuoteIdentifier(c.Database), QuoteIdentifier(c.localName(table)),
		quoteString(c.Cluster), quoteString(c.Database), quoteString(c.localName(table)), shardingKey)
}
