package debuginfod

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

// tableKnown answers Known from profile_executables.
type tableKnown struct {
	conn   clickhouse.Conn
	tables schema.Config
}

// NewTableKnown returns a Known that asks profile_executables, one query
// per call.
func NewTableKnown(conn clickhouse.Conn, tables schema.Config) Known {
	return tableKnown{conn: conn, tables: tables}
}

// Known returns the build ids among ids that have a profile_executables
// row for the tenant. The ids must be hex (the fetcher checks).
func (k tableKnown) Known(ctx context.Context, tenant string, ids []string) (map[string]bool, error) {
	q := "SELECT DISTINCT BuildId FROM " + k.tables.Qualified(schema.Executables) +
		" WHERE TenantId = {tenant:String} AND BuildId IN {ids:Array(String)}"
	rows, err := k.conn.Query(ctx, q, clickhouse.Named("tenant", tenant), clickhouse.Named("ids", "['"+strings.Join(ids, "','")+"']"))
	if err != nil {
		return nil, fmt.Errorf("look up stored build ids: %w", err)
	}
	defer func() { _ = rows.Close() }()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("look up stored build ids: %w", err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up stored build ids: %w", err)
	}
	return out, nil
}
