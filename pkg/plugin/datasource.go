// Package plugin is the backend of the Flamehouse Grafana datasource: it
// connects to ClickHouse with the datasource's settings, checks that the
// Flamehouse schema is there, and answers flame graph, table and
// time-series queries (pkg/query) and the query editor's lookups.
package plugin

import (
	"context"
	"fmt"
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
	return &Datasource{settings: st, settingsErr: err, symbols: query.NewSymbols(cachedFrameIDs, cachedLabels)}, nil
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
	missing, lacking, err := schemaGaps(ctx, conn, cfg)
	if err != nil {
		return healthError("Connected, but could not list the tables and columns in database %q: %v", cfg.Database, err), nil
	}
	if len(missing) > 0 {
		return healthError("Connected, but the Flamehouse tables %s are missing in database %q. "+
			"Run `flamehouse migrate` against this server, or fix the profiles database and table prefix settings.",
			strings.Join(missing, ", "), cfg.Database), nil
	}
	if len(lacking) > 0 {
		return healthError("Connected, but Flamehouse tables lack columns the queries read: %s. "+
			"The schema is older or newer than this plugin: run `flamehouse migrate` with the matching Flamehouse version.",
			strings.Join(lacking, ", ")), nil
	}
	return &backend.CheckHealthResult{
		Status:  backend.HealthStatusOk,
		Message: fmt.Sprintf("Connected to ClickHouse; Flamehouse tables found in database %q.", cfg.Database),
	}, nil
}

func healthError(format string, args ...any) *backend.CheckHealthResult {
	return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: fmt.Sprintf(format, args...)}
}

// schemaGaps lists the Flamehouse tables the database lacks and, of the
// tables it has, the columns the queries read but the tables lack.
func schemaGaps(ctx context.Context, conn clickhouse.Conn, cfg schema.Config) (tables, columns []string, err error) {
	rows, err := conn.Query(ctx, "SELECT table, name FROM system.columns WHERE database = ?", cfg.Database)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	present := map[[2]string]bool{}
	hasTable := map[string]bool{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			return nil, nil, err
		}
		present[[2]string{table, column}] = true
		hasTable[table] = true
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for _, t := range schema.Tables {
		name := cfg.Name(t)
		if !hasTable[name] {
			tables = append(tables, name)
			continue
		}
		for _, c := range query.RequiredColumns[t] {
			if !present[[2]string{name, c}] {
				columns = append(columns, name+"."+c)
			}
		}
	}
	return tables, columns, nil
}
