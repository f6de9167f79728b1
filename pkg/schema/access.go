package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/flamehouse/flamehouse/pkg/tenancy"
)

// Access control: least-privilege roles, row policies and tenant users, as
// ClickHouse DDL.
//
// One installation (database and table prefix) has four roles, named by
// Config.RoleName:
//
//   - writer: INSERT on every data table, nothing else. ClickHouse grants
//     SHOW and DESCRIBE implicitly with any table privilege, which is all a
//     client's batch insert needs besides;
//   - reader: SELECT on every data table and on the migrations table;
//   - admin: ALL on the database (what the migrations need, CREATE DATABASE
//     included), and in cluster mode CLUSTER, which ON CLUSTER DDL needs;
//   - tenant: no privileges. It marks the users that read one tenant's rows
//     (tenant users, made by TenantUserDDL), so that they can be told apart.
//
// In cluster mode every table privilege is granted on both names, the
// Distributed table and its "_local" table, and every row policy is
// created on both.
//
// Row policies. Once a table has any row policy, ClickHouse shows a user
// only the rows of the policies that apply to them; a user no permissive
// policy applies to sees no rows at all where the server setting
// access_control_improvements.users_without_row_policies_can_read_rows is
// false (its default before ClickHouse 24.1). So AccessDDL puts a
// permissive policy UnrestrictedPolicy, USING 1 TO ALL, on every data
// table: every user that is not a tenant user, and every tool that reads
// the tables, keeps seeing every row. Each tenant user then gets a
// RESTRICTIVE policy on every data table, USING TenantId = '<tenant>' TO
// <user>. Restrictive policies are ANDed with the permissive ones, so the
// tenant user sees exactly its tenant's rows.
//
// Why restrictive, and TO ALL rather than TO ALL EXCEPT the tenant role:
// ClickHouse matches a policy's TO clause against the roles a session has
// enabled, and a user may enable a subset of its granted roles with SET
// ROLE. With "USING 1 TO ALL EXCEPT <tenant role>" and a permissive tenant
// policy, a tenant user that runs SET ROLE <reader role> would no longer be
// excepted, and would see every tenant's rows. A restrictive policy names
// the user itself, so no role switch escapes it. For the same reason the
// tenant policy is never replaced (CREATE OR REPLACE removes the old policy
// before it inserts the new one, and a query in between would not be
// restricted): it is created if missing and then altered in place.
//
// Operators who add row policies of their own on these tables should make
// them RESTRICTIVE: a permissive one is ORed with UnrestrictedPolicy.
//
// Applying AccessDDL needs a user with access management (CREATE ROLE,
// CREATE ROW POLICY, and every granted privilege WITH GRANT OPTION), such
// as a default user with access_management enabled; the admin role does not
// carry these. The Migrator applies it after the migrations, as
// Config.AccessControl says.
//
// Listing tenant users is left to the server: system.role_grants names the
// users that hold the tenant role, system.row_policies their policies. No
// query is provided here because a tenant can only be read back reliably by
// parsing the select_filter text ClickHouse prints, and that could not be
// tested against a server with access storage.

// RoleKind is one of the four roles of an installation.
type RoleKind string

// Role kinds.
const (
	RoleAdmin  RoleKind = "admin"
	RoleWriter RoleKind = "writer"
	RoleReader RoleKind = "reader"
	RoleTenant RoleKind = "tenant"
)

// RoleKinds lists every role kind, in creation order.
var RoleKinds = []RoleKind{RoleAdmin, RoleWriter, RoleReader, RoleTenant}

// UnrestrictedPolicy names the permissive row policy, USING 1 TO ALL, on
// every data table.
const UnrestrictedPolicy = "flamehouse_unrestricted"

// RoleName returns the name of a role of this installation:
// flamehouse_<database>_<kind> with the default table prefix "otel_",
// flamehouse_<database>_<prefix without its trailing _>_<kind> otherwise
// (so "fh_" and "fh" share role names, which only matters for two
// installations in one database). With a valid config it is a plain
// identifier.
func (c *Config) RoleName(kind RoleKind) string {
	name := "flamehouse_" + c.Database + "_"
	if c.TablePrefix != DefaultTablePrefix {
		name += strings.TrimSuffix(c.TablePrefix, "_") + "_"
	}
	return name + string(kind)
}

// TenantPolicyName names the row policies of a tenant user.
func TenantPolicyName(user string) string { return "flamehouse_tenant_" + user }

// role returns a role's quoted name.
func (c *Config) role(kind RoleKind) string { return QuoteIdentifier(c.RoleName(kind)) }

// accessTables lists every data table as access is granted on it: in
// cluster mode the Distributed table and then its local table.
func (c *Config) accessTables() []string {
	var out []string
	for _, t := range Tables {
		out = append(out, c.Qualified(t))
		if c.Cluster != "" {
			out = append(out, c.qualifiedLocal(t))
		}
	}
	return out
}

// grant renders one GRANT of a privilege on every table to a role.
func (c *Config) grant(privilege string, tables []string, role string) string {
	elems := make([]string, len(tables))
	for i, t := range tables {
		elems[i] = privilege + " ON " + t
	}
	return "GRANT" + c.onCluster() + "\n    " + strings.Join(elems, ",\n    ") + "\nTO " + role
}

// policyTarget renders "<policy> [ON CLUSTER] ON <every data table>".
func (c *Config) policyTarget(policy string) string {
	return QuoteIdentifier(policy) + c.onCluster() + " ON\n    " + strings.Join(c.accessTables(), ",\n    ")
}

// AccessDDL returns the statements that create the roles, grant them their
// privileges and put UnrestrictedPolicy on every data table. Every
// statement is idempotent (IF NOT EXISTS; granting again changes nothing),
// so they are applied on every start. The admin role gets GRANT ALL ON
// <database>.*: the migrations create, alter and drop tables and views,
// insert into the migrations table and create the database itself (CREATE
// DATABASE is a database-level privilege, part of ALL on it). The config
// must be valid (Validate), which makes every name a plain identifier.
func (c *Config) AccessDDL() []string {
	var out []string
	for _, kind := range RoleKinds {
		out = append(out, "CREATE ROLE IF NOT EXISTS "+c.role(kind)+c.onCluster())
	}
	admin := c.role(RoleAdmin)
	out = append(out, "GRANT"+c.onCluster()+" ALL ON "+QuoteIdentifier(c.Database)+".* TO "+admin)
	if c.Cluster != "" {
		out = append(out, "GRANT"+c.onCluster()+" CLUSTER ON *.* TO "+admin)
	}
	out = append(out,
		c.grant("INSERT", c.accessTables(), c.role(RoleWriter)),
		// The migrations table has no Distributed table in cluster mode.
		c.grant("SELECT", append(c.accessTables(), c.qualifiedLocal(MigrationsTable)), c.role(RoleReader)),
		"CREATE ROW POLICY IF NOT EXISTS "+c.policyTarget(UnrestrictedPolicy)+"\nFOR SELECT USING 1 AS PERMISSIVE TO ALL",
	)
	return out
}

// TenantUser is a ClickHouse user that reads one tenant's rows.
type TenantUser struct {
	// Name is the user name, a plain identifier.
	Name string
	// Tenant is the TenantId whose rows the user reads: any string, "" being
	// the default tenant.
	Tenant string
	// PasswordSHA256Hex is the hex SHA-256 of the password followed by the
	// SaltHex text (HashPassword computes both). Required unless Existing.
	PasswordSHA256Hex string
	// SaltHex is the salt as hex text; empty for an unsalted hash, the
	// SHA-256 of the password alone.
	SaltHex string
	// Existing says the user exists already (made by an operator): it is
	// not created, and its password is not touched, so the password fields
	// must be empty. It must live in a writable access storage (made by
	// CREATE USER, not users.xml) for ALTER USER and GRANT to change it.
	Existing bool
}

var (
	errUserName     = errors.New("tenant user name must be a plain identifier (letters, digits, underscore; not starting with a digit)")
	errUserIsRole   = errors.New("tenant user name is the name of one of the installation's roles")
	errPasswordHash = errors.New("password hash must be 64 hex digits (a SHA-256)")
	errSalt         = errors.New("salt must be hex digits")
	errExistingAuth = errors.New("an existing user keeps its password: leave the password hash and salt empty")
)

// validateTenantUser reports every problem of u at once.
func (c *Config) validateTenantUser(u TenantUser) error {
	var err error
	if !IsIdentifier(u.Name) {
		err = errors.Join(err, fmt.Errorf("%w: %q", errUserName, u.Name))
	}
	for _, kind := range RoleKinds {
		if u.Name == c.RoleName(kind) {
			err = errors.Join(err, fmt.Errorf("%w: %q", errUserIsRole, u.Name))
		}
	}
	if u.Existing {
		if u.PasswordSHA256Hex != "" || u.SaltHex != "" {
			err = errors.Join(err, errExistingAuth)
		}
		return err
	}
	if b, e := hex.DecodeString(u.PasswordSHA256Hex); e != nil || len(b) != sha256.Size {
		err = errors.Join(err, errPasswordHash)
	}
	if _, e := hex.DecodeString(u.SaltHex); e != nil {
		err = errors.Join(err, errSalt)
	}
	return err
}

// TenantUserDDL returns the statements that make u a tenant user, in this
// order, so that the user never holds the reader role without its
// restriction in place:
//
//   - unless Existing: CREATE USER IF NOT EXISTS with the sha256_hash
//     password and the setting log_comment = tenancy.Marker(tenant), then
//     ALTER USER with the same password and settings, so that adding a user
//     again with another password or tenant converges (the ALTER replaces
//     the user's settings: it is the installation's user);
//   - if Existing: ALTER USER ... MODIFY SETTING log_comment, which keeps the
//     user's other settings. This syntax needs ClickHouse 24.12 or later
//     (added by ClickHouse pull request 72050); older servers refuse it, so
//     mark such users by hand or configure their tenant in the datasource;
//   - on every data table a RESTRICTIVE row policy TenantPolicyName(name),
//     USING TenantId = '<tenant>' TO <name>: CREATE ... IF NOT EXISTS, then
//     ALTER, so that adding the user again with another tenant changes the
//     policy in place (never a moment without it, see the package notes);
//   - GRANT <reader role>, <tenant role> TO <name>.
//
// Every statement is idempotent. The tenant may be any string; it is quoted
// as a ClickHouse string literal.
func (c *Config) TenantUserDDL(u TenantUser) ([]string, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("schema config: %w", err)
	}
	if err := c.validateTenantUser(u); err != nil {
		return nil, fmt.Errorf("tenant user: %w", err)
	}
	user := QuoteIdentifier(u.Name)
	marker := tenancy.Setting + " = " + quoteString(tenancy.Marker(u.Tenant))
	var out []string
	if u.Existing {
		out = append(out, "ALTER USER "+user+c.onCluster()+" MODIFY SETTING "+marker)
	} else {
		auth := "IDENTIFIED WITH sha256_hash BY " + quoteString(u.PasswordSHA256Hex)
		if u.SaltHex != "" {
			auth += " SALT " + quoteString(u.SaltHex)
		}
		out = append(out,
			"CREATE USER IF NOT EXISTS "+user+c.onCluster()+"\n"+auth+"\nSETTINGS "+marker,
			"ALTER USER "+user+c.onCluster()+"\n"+auth+"\nSETTINGS "+marker,
		)
	}
	policy := c.policyTarget(TenantPolicyName(u.Name))
	using := "USING TenantId = " + quoteString(u.Tenant)
	return append(out,
		"CREATE ROW POLICY IF NOT EXISTS "+policy+"\nFOR SELECT "+using+" AS RESTRICTIVE TO "+user,
		"ALTER ROW POLICY "+policy+"\nAS RESTRICTIVE FOR SELECT "+using+" TO "+user,
		"GRANT"+c.onCluster()+" "+c.role(RoleReader)+", "+c.role(RoleTenant)+" TO "+user,
	), nil
}

// DropTenantUserDDL returns the statements that undo TenantUserDDL for the
// user name. With dropUser the user is dropped first and then its row
// policies; without, its reader and tenant roles are revoked first and then
// its policies dropped, so that the user never reads unrestricted through
// the reader role. A user kept this way keeps its log_comment marker and
// whatever it was granted otherwise; with the policies gone, such other
// grants read every tenant's rows. Every statement is idempotent, except
// that REVOKE needs the user to exist.
func (c *Config) DropTenantUserDDL(name string, dropUser bool) ([]string, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("schema config: %w", err)
	}
	if !IsIdentifier(name) {
		return nil, fmt.Errorf("tenant user: %w: %q", errUserName, name)
	}
	user := QuoteIdentifier(name)
	var first string
	if dropUser {
		first = "DROP USER IF EXISTS " + user + c.onCluster()
	} else {
		first = "REVOKE" + c.onCluster() + " " + c.role(RoleReader) + ", " + c.role(RoleTenant) + " FROM " + user
	}
	// DROP ROW POLICY takes ON CLUSTER after the tables.
	drop := "DROP ROW POLICY IF EXISTS " + QuoteIdentifier(TenantPolicyName(name)) + " ON\n    " +
		strings.Join(c.accessTables(), ",\n    ") + c.onClusterLine()
	return []string{first, drop}, nil
}

// onClusterLine is the ON CLUSTER clause on a line of its own, or nothing.
func (c *Config) onClusterLine() string {
	if c.Cluster == "" {
		return ""
	}
	return "\n" + strings.TrimPrefix(c.onCluster(), " ")
}

// HashPassword returns what TenantUser takes for a password: the salt as
// hex text and the hex SHA-256 of the password followed by that text.
// ClickHouse checks a sha256_hash user with SALT by hashing the password
// concatenated with the SALT string exactly as written (its own
// sha256_password users get a random salt written as hex text the same
// way), so the hash is over the hex text, not over the salt's bytes. An
// empty salt gives the unsalted SHA-256 of the password.
func HashPassword(password string, salt []byte) (hashHex, saltHex string) {
	saltHex = hex.EncodeToString(salt)
	sum := sha256.Sum256([]byte(password + saltHex))
	return hex.EncodeToString(sum[:]), saltHex
}
