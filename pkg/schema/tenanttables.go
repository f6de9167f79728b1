package schema

// TenantTables returns "database.table" for every table and materialized
// view that holds tenants' rows (each has a TenantId column): in cluster
// mode both the Distributed tables and the local ones. Row policies that
// keep a tenant user to its tenant go on each (docs/security.md).
func (c *Config) TenantTables() []string {
	var out []string
	add := func(name string) { out = append(out, c.Database+"."+name) }
	for _, t := range Tables {
		add(c.Name(t))
		if c.Cluster != "" {
			add(c.localName(t))
		}
	}
	for _, r := range rollups {
		add(c.TablePrefix + r.View)
	}
	return out
}
