package service

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// tenantsCommand manages per-tenant read-only users (docs/security.md):
//
//	flamehouse tenants add -tenant T -user U (-password-file F | -password-env V) [-existing]
//	flamehouse tenants remove -user U [-keep-user]
//	flamehouse tenants list
//
// On an external server it runs the users', grants' and row policies' DDL
// (pkg/schema, access.go) as the clickhouse user, who needs access
// management. On the embedded engine it edits the users file that the
// engine's HTTP interface re-reads (embedded.users_file), running or not.
func tenantsCommand(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("%w: flamehouse tenants add|remove|list [flags]", errUsage)
	}
	action, rest := args[0], args[1:]
	var user, tenant, passwordFile, passwordEnv string
	var existing, keepUser bool
	extra := func(fs *flag.FlagSet) {
		switch action {
		case "add":
			fs.StringVar(&tenant, "tenant", "", "the tenant whose rows the user reads (\"\" is the default tenant)")
			fs.StringVar(&user, "user", "", "the user's name")
			fs.StringVar(&passwordFile, "password-file", "", "file holding the user's password")
			fs.StringVar(&passwordEnv, "password-env", "", "environment variable holding the user's password")
			fs.BoolVar(&existing, "existing", false, "the user exists already (external server): only grant and add row policies")
		case "remove":
			fs.StringVar(&user, "user", "", "the user's name")
			fs.BoolVar(&keepUser, "keep-user", false, "remove the row policies and roles but keep the user (external server)")
		}
	}
	cfg, err := parseWith("tenants "+action, rest, extra)
	if err != nil {
		return err
	}
	switch action {
	case "add":
		if user == "" {
			return fmt.Errorf("%w: -user is required", errUsage)
		}
		var password string
		if !existing {
			if password, err = readPassword(passwordFile, passwordEnv); err != nil {
				return err
			}
		}
		if cfg.UsesEmbedded() {
			return addEmbeddedTenant(cfg, user, tenant, password, stdout)
		}
		return addServerTenant(ctx, cfg, user, tenant, password, existing, stdout)
	case "remove":
		if user == "" {
			return fmt.Errorf("%w: -user is required", errUsage)
		}
		if cfg.UsesEmbedded() {
			return removeEmbeddedTenant(cfg, user, stdout)
		}
		return removeServerTenant(ctx, cfg, user, keepUser, stdout)
	case "list":
		if cfg.UsesEmbedded() {
			return listEmbeddedTenants(cfg, stdout)
		}
		return listServerTenants(ctx, cfg, stdout)
	}
	return fmt.Errorf("%w: unknown action %q: use add, remove or list", errUsage, action)
}

// readPassword reads a password from a file or the environment: never
// from the command line, where other users of the machine can read it.
func readPassword(file, env string) (string, error) {
	switch {
	case file != "" && env != "":
		return "", fmt.Errorf("%w: give -password-file or -password-env, not both", errUsage)
	case file != "":
		b, err := os.ReadFile(file) //nolint:gosec // the operator names the file
		if err != nil {
			return "", fmt.Errorf("read password file: %w", err)
		}
		p := strings.TrimRight(string(b), "\r\n")
		if p == "" {
			return "", errors.New("the password file is empty")
		}
		return p, nil
	case env != "":
		p := os.Getenv(env)
		if p == "" {
			return "", fmt.Errorf("environment variable %s is empty or not set", env)
		}
		return p, nil
	}
	return "", fmt.Errorf("%w: give the password with -password-file or -password-env", errUsage)
}

// usersFile is the embedded engine's users file.
func usersFile(cfg Config) string { return cfg.Embedded.UsersFilePath() }

func addEmbeddedTenant(cfg Config, name, tenant, password string, stdout io.Writer) error {
	path := usersFile(cfg)
	f, err := chembed.ReadUsersFile(path)
	if err != nil {
		return err
	}
	u := chembed.User{Name: name, PasswordSHA256Hex: chembed.PasswordSHA256(password), Role: chembed.RoleTenant, Tenant: tenant}
	if err := u.Validate(); err != nil {
		return err
	}
	if name == cfg.Embedded.User || slices.ContainsFunc(cfg.Embedded.Users, func(c chembed.User) bool { return c.Name == name }) ||
		slices.ContainsFunc(cfg.Tenants, func(c TenantUserConfig) bool { return c.User == name }) {
		return fmt.Errorf("user %q is declared in the configuration file: change it there", name)
	}
	f.Users = slices.DeleteFunc(f.Users, func(c chembed.User) bool { return c.Name == name })
	f.Users = append(f.Users, u)
	if err := chembed.WriteUsersFile(path, f); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "tenant user %s reads tenant %q (users file %s; a running server picks it up within a second)\n", name, tenant, path)
	return nil
}

func removeEmbeddedTenant(cfg Config, name string, stdout io.Writer) error {
	path := usersFile(cfg)
	f, err := chembed.ReadUsersFile(path)
	if err != nil {
		return err
	}
	n := len(f.Users)
	f.Users = slices.DeleteFunc(f.Users, func(c chembed.User) bool { return c.Name == name })
	if len(f.Users) == n {
		return fmt.Errorf("no user %q in %s", name, path)
	}
	if err := chembed.WriteUsersFile(path, f); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "removed user %s\n", name)
	return nil
}

func listEmbeddedTenants(cfg Config, stdout io.Writer) error {
	f, err := chembed.ReadUsersFile(usersFile(cfg))
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "USER\tROLE\tTENANT\tDECLARED IN")
	for _, u := range cfg.Embedded.Users {
		_, _ = fmt.Fprintf(w, "%s\t%s\t%q\tconfiguration\n", u.Name, u.Role, u.Tenant)
	}
	for _, u := range cfg.Tenants {
		_, _ = fmt.Fprintf(w, "%s\t%s\t%q\tconfiguration (tenants)\n", u.User, chembed.RoleTenant, u.Tenant)
	}
	for _, u := range f.Users {
		_, _ = fmt.Fprintf(w, "%s\t%s\t%q\tusers file\n", u.Name, u.Role, u.Tenant)
	}
	return w.Flush()
}

// serverConn connects to the external server as the clickhouse user.
func serverConn(ctx context.Context, cfg Config) (clickhouse.Conn, error) {
	conn, err := chclient.Open(cfg.ClickHouse)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("connect to clickhouse at %s: %w", cfg.ClickHouse.Address, err)
	}
	return conn, nil
}

func addServerTenant(ctx context.Context, cfg Config, name, tenant, password string, existing bool, stdout io.Writer) error {
	ddl, err := tenantUserDDL(cfg.Schema, name, tenant, password, existing)
	if err != nil {
		return err
	}
	return runDDL(ctx, cfg, ddl, stdout, fmt.Sprintf("tenant user %s reads tenant %q", name, tenant))
}

// tenantUserDDL is the DDL that creates or updates a tenant user, its
// password salted and hashed here (an existing user keeps its own).
func tenantUserDDL(tables schema.Config, name, tenant, password string, existing bool) ([]string, error) {
	u := schema.TenantUser{Name: name, Tenant: tenant, Existing: existing}
	if !existing {
		salt := make([]byte, 16)
		_, _ = rand.Read(salt)
		u.PasswordSHA256Hex, u.SaltHex = schema.HashPassword(password, salt)
	}
	return tables.TenantUserDDL(u)
}

func removeServerTenant(ctx context.Context, cfg Config, name string, keepUser bool, stdout io.Writer) error {
	ddl, err := cfg.Schema.DropTenantUserDDL(name, !keepUser)
	if err != nil {
		return err
	}
	return runDDL(ctx, cfg, ddl, stdout, "removed tenant user "+name)
}

// runDDL runs statements in order as the clickhouse user.
func runDDL(ctx context.Context, cfg Config, ddl []string, stdout io.Writer, done string) error {
	conn, err := serverConn(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	if err := execAll(ctx, conn, ddl); err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stdout, done)
	return nil
}

// execAll runs statements in order. They hold password hashes, never
// passwords; a failure names the statement by its position, not its text.
func execAll(ctx context.Context, conn clickhouse.Conn, ddl []string) error {
	for i, q := range ddl {
		if err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("statement %d of %d: %w", i+1, len(ddl), err)
		}
	}
	return nil
}

func listServerTenants(ctx context.Context, cfg Config, stdout io.Writer) error {
	conn, err := serverConn(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	role := cfg.Schema.RoleName(schema.RoleTenant)
	rows, err := conn.Query(ctx, "SELECT user_name FROM system.role_grants WHERE granted_role_name = ? AND user_name IS NOT NULL ORDER BY user_name", role)
	if err != nil {
		return fmt.Errorf("list tenant users: %w", err)
	}
	defer func() { _ = rows.Close() }()
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "USER\tROLE")
	for rows.Next() {
		var name *string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		if name != nil {
			_, _ = fmt.Fprintf(w, "%s\t%s\n", *name, role)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return w.Flush()
}
