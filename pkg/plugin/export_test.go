package plugin

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/query"
)

// The datasource's parts its tests (package plugin_test) look into: the
// tests that check the connection's settings, the answer cache and the
// settings' errors from inside.

// Connection is the datasource's ClickHouse connection, opened on first use.
func (d *Datasource) Connection() (clickhouse.Conn, error) { return d.connection() }

// SetConnection puts conn in place of the datasource's connection (a test
// records what the datasource sends through it).
func (d *Datasource) SetConnection(conn clickhouse.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.conn = conn
}

// Cache is the datasource's answer cache (a test sets its clock).
func (d *Datasource) Cache() *query.Cache { return d.cache }

// QueryContext is the context of the datasource's queries (queryContext).
func (d *Datasource) QueryContext(ctx context.Context, user *backend.User, dashboard, panel, rule string) context.Context {
	return d.queryContext(ctx, user, dashboard, panel, rule)
}

// ResetSymbols empties the datasource's cache of stacks and frame labels,
// as a start of the plugin does.
func (d *Datasource) ResetSymbols() { d.symbols = query.NewSymbols(cachedFrameIDs, cachedLabels) }

// ResetResolver empties the datasource's symbol store tables, as a start
// of the plugin does.
func (d *Datasource) ResetResolver() { d.resolver = query.NewResolver(query.DefaultResolverBytes) }

// SettingsErr is what is wrong with the datasource's settings (nil: none).
func (d *Datasource) SettingsErr() error { return d.settingsErr }

// ClientConfig is the ClickHouse client's configuration of the settings.
func (s *Settings) ClientConfig() chclient.Config { return s.clientConfig() }

// DefaultPort is the server's port when a datasource sets none.
var DefaultPort = defaultPort

// MaxResultRows is the result limit of the datasource's queries.
const MaxResultRows = maxResultRows
