// Package plugin is the backend of the Flamehouse Grafana datasource: it
// connects to ClickHouse with the datasource's settings, checks that the
// Flamehouse schema is there, and answers flame graph, table and
// time-series queries (pkg/query) and the query editor's lookups.
package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// Datasource is one configured Flamehouse datasource.
type Datasource struct {
	settings    Settings
	settingsErr error

	mu   sync.Mutex
	conn clickhouse.Conn
	// symbols caches stacks and frame labels across queries.
	symbols *query.Symbols
	// cache answers queries over closed time ranges.
	cache *query.Cache
	// resolver holds the symbol store's range tables across queries.
	resolver *query.Resolver
	// userTenant is the ClickHouse user's tenant, once known (tenant.go).
	userTenant *userTenant
}

// Bounds of the symbol cache: 4M frame ids of stacks (32 MB) and 1M frame
// labels.
const (
	cachedFrameIDs = 4 << 20
	cachedLabels   = 1 << 20
)

// NewDatasource creates a datasource instance. Invalid settings do not
// fail here: CheckHealth and queries report them, so that the user sees
// what to fix.
func NewDatasource(_ context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	st, err := LoadSettings(s)
	return &Datasource{
		settings: st, settingsErr: err, symbols: query.NewSymbols(cachedFrameIDs, cachedLabels), cache: st.cache(),
		resolver: query.NewResolver(query.DefaultResolverBytes),
	}, nil
}

// Dispose closes the ClickHouse connection when Grafana replaces the instance.
func (d *Datasource) Dispose() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn != nil {
		_ = d.conn.Close()
		d.conn = nil
	}
}

// connection opens the ClickHouse connection on first use.
func (d *Datasource) connection() (clickhouse.Conn, error) {
	if d.settingsErr != nil {
		return nil, d.settingsErr
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil {
		conn, err := chclient.Open(d.settings.clientConfig())
		if err != nil {
			return nil, err
		}
		d.conn = conn
	}
	return d.conn, nil
}

// CheckHealth connects to ClickHouse and verifies that the Flamehouse
// tables exist. Every failure says what to fix.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	conn, err := d.connection()
	if err != nil {
		return healthError("Settings: %v", err), nil
	}
	if err := conn.Ping(ctx); err != nil {
		return healthError("Cannot reach ClickHouse at %s (%s): %v. Check host, port, protocol, TLS and credentials.",
			d.settings.clientConfig().Address, d.settings.Protocol, err), nil
	}
	cfg := d.settings.schemaConfig()
	cat, err := readCatalog(ctx, conn, cfg.Database)
	if err != nil {
		return healthError("Connected, but could not list the tables and columns in database %q: %v", cfg.Database, err), nil
	}
	res := flamehouseHealth(cat, cfg, d.settings.Profiles.OTelTable)
	if d.settings.Profiles.Schema == query.SchemaOTel {
		res = otelHealth(cat, cfg, d.settings.Profiles.OTelTable)
	}
	if res.Status == backend.HealthStatusOk {
		access, err := d.accessNote(ctx, conn, cfg)
		if err != nil {
			return healthError("%v", err), nil
		}
		res.Message += " " + symbolsNote(cat, cfg, d.settings.Profiles.Schema) + profilesNote(cat, cfg, d.settings.Profiles.Schema) +
			" " + d.tracesNote(ctx, conn) + " " + access
	}
	return res, nil
}

// symbolsNote says whether the symbol store's tables (schema version 3)
// are there: without them unsymbolized native frames keep their
// "[library]" labels and the Executables view knows no uploads.
func symbolsNote(cat catalog, cfg schema.Config, s query.Schema) string {
	var missing []string
	for _, t := range []string{schema.Symbols, schema.Executables} {
		if !cat.tables[cfg.Name(t)] {
			missing = append(missing, cfg.Name(t))
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("No symbol tables (%s; schema version 3): unsymbolized native frames keep their [library] labels "+
			"and the Executables view shows no uploaded symbols; run `flamehouse migrate` to add them.", strings.Join(missing, ", "))
	}
	if s == query.SchemaOTel {
		return fmt.Sprintf("Symbol tables %q and %q found: unsymbolized frames whose mapping file names one stored executable are named from its symbols.",
			cfg.Name(schema.Symbols), cfg.Name(schema.Executables))
	}
	return fmt.Sprintf("Symbol tables %q and %q found (schema version 3): unsymbolized native frames are named from uploaded and debuginfod symbols.",
		cfg.Name(schema.Symbols), cfg.Name(schema.Executables))
}

// profilesNote says, on Flamehouse's tables, when the profiles table
// (schema version 5) is missing: the profiles query type needs it.
func profilesNote(cat catalog, cfg schema.Config, s query.Schema) string {
	if s == query.SchemaOTel || cat.tables[cfg.Name(schema.Profiles)] {
		return ""
	}
	return fmt.Sprintf(" No profiles table (%s; schema version 5): the profiles query type lists nothing until `flamehouse migrate` adds it.",
		cfg.Name(schema.Profiles))
}

// tracesNote says whether the exporter's spans table is there: traces
// queries and trace-wide filtering need it, profiles queries do not.
func (d *Datasource) tracesNote(ctx context.Context, conn clickhouse.Conn) string {
	p := d.settings.Profiles
	var n uint64
	err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", p.TracesDatabase, p.TracesTable).Scan(&n)
	switch {
	case err != nil:
		return fmt.Sprintf("Could not look for the traces table %q: %v.", p.TracesDatabase+"."+p.TracesTable, err)
	case n == 0:
		return fmt.Sprintf("No traces table %q: the traces query type is off, and trace-wide reads keep every sample "+
			"with the trace id (set the traces database and table to the Collector exporter's).", p.TracesDatabase+"."+p.TracesTable)
	}
	return fmt.Sprintf("Traces table %q found: traces queries work, and trace-wide reads keep only the trace's spans.",
		p.TracesDatabase+"."+p.TracesTable)
}

// flamehouseHealth checks Flamehouse's tables, and says when the
// exporter's table is there instead or too.
func flamehouseHealth(cat catalog, cfg schema.Config, otelTable string) *backend.CheckHealthResult {
	missing, lacking := cat.flamehouseGaps(cfg)
	hasOTel := cat.tables[otelTable]
	switch {
	case len(missing) > 0 && hasOTel:
		return healthError("Connected, but the Flamehouse tables %s are missing in database %q. It has the OpenTelemetry Collector "+
			"exporter's profiles table %q: set the profiles schema to \"OpenTelemetry Collector exporter\" to read it, "+
			"or run `flamehouse migrate` against this server.", strings.Join(missing, ", "), cfg.Database, otelTable)
	case len(missing) > 0:
		return healthError("Connected, but the Flamehouse tables %s are missing in database %q. "+
			"Run `flamehouse migrate` against this server, or fix the profiles database and table prefix settings.",
			strings.Join(missing, ", "), cfg.Database)
	case len(lacking) > 0:
		return healthError("Connected, but Flamehouse tables lack columns the queries read: %s. "+
			"The schema is older or newer than this plugin: run `flamehouse migrate` with the matching Flamehouse version.",
			strings.Join(lacking, ", "))
	}
	msg := fmt.Sprintf("Connected to ClickHouse; Flamehouse tables found in database %q.", cfg.Database)
	if hasOTel {
		msg += fmt.Sprintf(" The OpenTelemetry Collector exporter's profiles table %q is there too; "+
			"a second datasource with the profiles schema \"OpenTelemetry Collector exporter\" reads it.", otelTable)
	}
	return &backend.CheckHealthResult{Status: backend.HealthStatusOk, Message: msg}
}

// otelHealth checks the exporter's table, and says when Flamehouse's
// tables are there instead or too.
func otelHealth(cat catalog, cfg schema.Config, otelTable string) *backend.CheckHealthResult {
	missing, _ := cat.flamehouseGaps(cfg)
	hasFlamehouse := len(missing) == 0
	if !cat.tables[otelTable] {
		hint := "Check the profiles database and exporter table settings against the exporter's database and profiles_table_name, " +
			"and that the Collector runs a profiles pipeline with the clickhouse exporter."
		if hasFlamehouse {
			hint = "The database has Flamehouse's tables: set the profiles schema to \"Flamehouse tables\" to read them, or fix the exporter table setting."
		}
		return healthError("Connected, but the OpenTelemetry Collector exporter's profiles table %q is missing in database %q. %s",
			otelTable, cfg.Database, hint)
	}
	if lacking := cat.missingColumns(otelTable, query.OTelRequiredColumns); len(lacking) > 0 {
		return healthError("Connected, but the exporter's table %q lacks columns the queries read: %s. "+
			"It was created by an exporter version this plugin does not know (tested: clickhouseexporter v0.161.0).",
			otelTable, strings.Join(lacking, ", "))
	}
	msg := fmt.Sprintf("Connected to ClickHouse; reading the OpenTelemetry Collector exporter's profiles table %q in database %q.",
		otelTable, cfg.Database)
	if hasFlamehouse {
		msg += " Flamehouse's tables are there too; a second datasource with the profiles schema \"Flamehouse tables\" reads them."
	}
	return &backend.CheckHealthResult{Status: backend.HealthStatusOk, Message: msg}
}

func healthError(format string, args ...any) *backend.CheckHealthResult {
	return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: fmt.Sprintf(format, args...)}
}

// catalog is the tables and columns of a database.
type catalog struct {
	tables  map[string]bool
	columns map[[2]string]bool
}

// readCatalog lists a database's tables and columns.
func readCatalog(ctx context.Context, conn clickhouse.Conn, database string) (catalog, error) {
	cat := catalog{tables: map[string]bool{}, columns: map[[2]string]bool{}}
	rows, err := conn.Query(ctx, "SELECT table, name FROM system.columns WHERE database = ?", database)
	if err != nil {
		return cat, err
	}
	defer rows.Close()
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			return cat, err
		}
		cat.columns[[2]string{table, column}] = true
		cat.tables[table] = true
	}
	return cat, rows.Err()
}

// flamehouseGaps lists the Flamehouse tables the database lacks and, of
// the tables it has, the columns the queries read but the tables lack. The
// symbol tables (schema version 3) and the profiles table (version 5) are
// optional: symbolsNote and profilesNote say whether they are there.
func (c catalog) flamehouseGaps(cfg schema.Config) (tables, columns []string) {
	for _, t := range schema.Tables {
		if t == schema.Symbols || t == schema.Executables || t == schema.Profiles {
			continue
		}
		name := cfg.Name(t)
		if !c.tables[name] {
			tables = append(tables, name)
			continue
		}
		columns = append(columns, c.missingColumns(name, query.RequiredColumns[t])...)
	}
	return tables, columns
}

// missingColumns lists a table's missing columns as table.column.
func (c catalog) missingColumns(table string, want []string) []string {
	var out []string
	for _, col := range want {
		if !c.columns[[2]string{table, col}] {
			out = append(out, table+"."+col)
		}
	}
	slices.Sort(out)
	return out
}
