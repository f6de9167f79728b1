package plugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/tenancy"
)

// tenant returns the tenant the datasource reads. A tenant user (created
// by `flamehouse tenants`, or a tenant user of the embedded engine) carries
// its tenant in its log_comment setting, and ClickHouse's row policies show
// it no other tenant's rows: its tenant is the one read, whatever the
// datasource's tenant setting says (CheckHealth reports a disagreement).
// Other users read the configured tenant. Learned once per instance.
func (d *Datasource) tenant(ctx context.Context, conn clickhouse.Conn) (tenant string, ofUser bool, err error) {
	d.mu.Lock()
	known := d.userTenant
	d.mu.Unlock()
	if known == nil {
		var comment string
		// A plain context: the datasource's own queries set log_comment.
		if err := conn.QueryRow(ctx, "SELECT getSetting('log_comment')").Scan(&comment); err != nil {
			return "", false, fmt.Errorf("read the ClickHouse user's tenant: %w", err)
		}
		t, ok := tenancy.FromMarker(comment)
		known = &userTenant{tenant: t, ok: ok}
		d.mu.Lock()
		d.userTenant = known
		d.mu.Unlock()
	}
	if known.ok {
		return known.tenant, true, nil
	}
	return d.settings.Profiles.Tenant, false, nil
}

// userTenant is what the ClickHouse user's settings say of its tenant.
type userTenant struct {
	tenant string
	ok     bool
}

// accessNote checks the tenant setting against the ClickHouse user's
// tenant, and says whether the user can write to the samples table (a
// datasource's user should not: docs/security.md).
func (d *Datasource) accessNote(ctx context.Context, conn clickhouse.Conn, cfg schema.Config) (string, error) {
	tenant, ofUser, err := d.tenant(ctx, conn)
	if err != nil {
		return "", err
	}
	note := ""
	if ofUser {
		if set := d.settings.Profiles.Tenant; set != "" && set != tenant {
			return "", fmt.Errorf("the ClickHouse user %q reads only tenant %q (its row policies), but the datasource's tenant is %q: "+
				"clear the tenant setting (a tenant user needs none) or use that tenant's user", d.settings.Username, tenant, set)
		}
		note = fmt.Sprintf("The ClickHouse user %q reads only tenant %q (row policies).", d.settings.Username, tenant)
	}
	table := cfg.Qualified(schema.Samples)
	if d.settings.Profiles.Schema == query.SchemaOTel {
		table = schema.QuoteIdentifier(cfg.Database) + "." + schema.QuoteIdentifier(d.settings.Profiles.OTelTable)
	}
	canWrite, err := canInsert(ctx, conn, table)
	switch {
	case err != nil:
		note += fmt.Sprintf(" Could not tell whether the user can write: %v.", err)
	case canWrite:
		note += " Warning: this ClickHouse user can write to the Flamehouse tables; give the datasource a read-only user (docs/security.md)."
	default:
		note += " The ClickHouse user cannot write (read-only, as it should be)."
	}
	return note, nil
}

// canInsert asks the server whether the user holds INSERT on a table
// (CHECK GRANT). A read-only user is refused the question itself
// (READONLY, ACCESS_DENIED): that means no.
func canInsert(ctx context.Context, conn clickhouse.Conn, table string) (bool, error) {
	var granted uint8
	err := conn.QueryRow(ctx, "CHECK GRANT INSERT ON "+table).Scan(&granted)
	var ex *clickhouse.Exception
	if errors.As(err, &ex) && (ex.Code == 164 || ex.Code == 497) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return granted == 1, nil
}
