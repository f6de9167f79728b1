package schema

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// QuoteStringLiteral lets the engine tests (package schema_test) check the
// string literals the access DDL is built with.
var QuoteStringLiteral = quoteString

// goldenTenant is the new tenant user of the golden files; goldenExisting
// an existing user whose tenant needs quoting.
var (
	goldenHash, goldenSalt = HashPassword("secret", []byte{0xde, 0xad, 0xbe, 0xef})
	goldenTenant           = TenantUser{Name: "acme_reader", Tenant: "acme", PasswordSHA256Hex: goldenHash, SaltHex: goldenSalt}
	goldenExisting         = TenantUser{Name: "grafana_o", Tenant: `o'brien\co`, Existing: true}
)

// renderAccess renders every access statement of the golden files as one
// SQL script, each part under a comment saying what produced it.
func renderAccess(t *testing.T, cfg Config) string {
	t.Helper()
	newUser, err := cfg.TenantUserDDL(goldenTenant)
	require.NoError(t, err)
	existing, err := cfg.TenantUserDDL(goldenExisting)
	require.NoError(t, err)
	revoke, err := cfg.DropTenantUserDDL(goldenTenant.Name, false)
	require.NoError(t, err)
	drop, err := cfg.DropTenantUserDDL(goldenTenant.Name, true)
	require.NoError(t, err)
	var b strings.Builder
	for _, part := range []struct {
		title string
		stmts []string
	}{
		{"AccessDDL()", cfg.AccessDDL()},
		{"TenantUserDDL(acme_reader, tenant acme, HashPassword(\"secret\", deadbeef))", newUser},
		{"TenantUserDDL(grafana_o, existing, tenant o'brien\\co)", existing},
		{"DropTenantUserDDL(acme_reader, dropUser false)", revoke},
		{"DropTenantUserDDL(acme_reader, dropUser true)", drop},
	} {
		b.WriteString("-- " + part.title + "\n\n" + strings.Join(part.stmts, ";\n\n") + ";\n\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func TestAccessGolden(t *testing.T) {
	cluster := DefaultConfig()
	cluster.Cluster = "flamehouse"
	for name, cfg := range map[string]Config{
		"access_single_node": DefaultConfig(),
		"access_cluster":     cluster,
	} {
		t.Run(name, func(t *testing.T) {
			got := renderAccess(t, cfg)
			path := filepath.Join("testdata", name+".sql")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o600))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./pkg/schema -update to create the golden file")
			require.Equal(t, string(want), got, "access DDL changed: review, then run go test ./pkg/schema -update")
		})
	}
}

func TestRoleName(t *testing.T) {
	for _, tc := range []struct {
		database, prefix string
		want             string
	}{
		{"otel", "otel_", "flamehouse_otel_reader"},
		{"profiles", "otel_", "flamehouse_profiles_reader"},
		{"otel", "fh_", "flamehouse_otel_fh_reader"},
		{"otel", "fh", "flamehouse_otel_fh_reader"},
		{"otel", "Fh_2_", "flamehouse_otel_Fh_2_reader"},
		{"otel", "", "flamehouse_otel__reader"},
		{"otel", "1x_", "flamehouse_otel_1x_reader"},
	} {
		cfg := DefaultConfig()
		cfg.Database, cfg.TablePrefix = tc.database, tc.prefix
		require.NoError(t, cfg.Validate())
		require.Equal(t, tc.want, cfg.RoleName(RoleReader), "%s/%q", tc.database, tc.prefix)
		seen := map[string]bool{}
		for _, kind := range RoleKinds {
			name := cfg.RoleName(kind)
			require.True(t, IsIdentifier(name), name)
			require.True(t, strings.HasSuffix(name, "_"+string(kind)), name)
			require.False(t, seen[name], "role names are distinct: %s", name)
			seen[name] = true
		}
	}
	require.Len(t, RoleKinds, 4)
}

// TestAccessDDLPrivileges checks what each role gets, in both modes.
func TestAccessDDLPrivileges(t *testing.T) {
	single := DefaultConfig()
	cluster := DefaultConfig()
	cluster.Cluster = "flamehouse"
	for _, cfg := range []Config{single, cluster} {
		stmts := cfg.AccessDDL()
		sql := strings.Join(stmts, ";\n")
		for _, kind := range RoleKinds {
			require.Contains(t, stmts, "CREATE ROLE IF NOT EXISTS `"+cfg.RoleName(kind)+"`"+cfg.onCluster())
		}
		byRole := map[RoleKind]string{}
		policy := ""
		for _, s := range stmts {
			switch {
			case strings.HasPrefix(s, "CREATE ROW POLICY"):
				policy = s
			case strings.HasPrefix(s, "GRANT"):
				for _, kind := range RoleKinds {
					if strings.HasSuffix(s, " `"+cfg.RoleName(kind)+"`") {
						byRole[kind] += s + "\n"
					}
				}
			}
		}
		require.Empty(t, byRole[RoleTenant], "the tenant role has no privileges")
		require.Contains(t, byRole[RoleAdmin], " ALL ON `otel`.* TO ")
		require.Equal(t, cfg.Cluster != "", strings.Contains(byRole[RoleAdmin], " CLUSTER ON *.* TO "), "CLUSTER only in cluster mode")
		require.NotContains(t, byRole[RoleWriter], "SELECT")
		require.NotContains(t, byRole[RoleReader], "INSERT")
		for _, table := range Tables {
			// Quoted names: one is never a prefix of another.
			for _, name := range []string{cfg.Qualified(table), cfg.qualifiedLocal(table)} {
				require.Contains(t, byRole[RoleWriter], "INSERT ON "+name)
				require.Contains(t, byRole[RoleReader], "SELECT ON "+name)
				require.Contains(t, policy, "    "+name)
			}
		}
		names := len(Tables) // one name per table, two in cluster mode
		if cfg.Cluster != "" {
			names *= 2
		}
		require.Equal(t, names, strings.Count(byRole[RoleWriter], "INSERT ON "), "a grant per table name, no more")
		require.Equal(t, names+1, strings.Count(byRole[RoleReader], "SELECT ON "), "and the migrations table")
		require.Contains(t, byRole[RoleReader], "SELECT ON "+cfg.qualifiedLocal(MigrationsTable)+"\nTO ")
		require.NotContains(t, sql, "`otel`.`otel_profile_schema_migrations`,", "the migrations table has no Distributed table")
		require.True(t, strings.HasSuffix(policy, "\nFOR SELECT USING 1 AS PERMISSIVE TO ALL"), policy)
		require.NotContains(t, sql, "EXCEPT", "the unrestricted policy applies to every user, tenant users included")
		if cfg.Cluster == "" {
			require.NotContains(t, sql, "ON CLUSTER")
			require.NotContains(t, sql, "_local")
		} else {
			for _, s := range stmts {
				require.Contains(t, s, " ON CLUSTER 'flamehouse'", "every statement runs on the whole cluster")
			}
		}
	}
}

func TestTenantUserDDL(t *testing.T) {
	cfg := DefaultConfig()
	stmts, err := cfg.TenantUserDDL(goldenTenant)
	require.NoError(t, err)
	require.Len(t, stmts, 5)
	require.True(t, strings.HasPrefix(stmts[0], "CREATE USER IF NOT EXISTS `acme_reader`\nIDENTIFIED WITH sha256_hash BY '"+goldenHash+"' SALT 'deadbeef'\n"))
	require.True(t, strings.HasSuffix(stmts[0], "\nSETTINGS log_comment = 'flamehouse:tenant:acme'"))
	require.True(t, strings.HasPrefix(stmts[1], "ALTER USER `acme_reader`\n"), "a second add converges password and tenant")
	require.Contains(t, stmts[2], "FOR SELECT USING TenantId = 'acme' AS RESTRICTIVE TO `acme_reader`")
	require.Contains(t, stmts[3], "AS RESTRICTIVE FOR SELECT USING TenantId = 'acme' TO `acme_reader`")
	require.Equal(t, "GRANT `flamehouse_otel_reader`, `flamehouse_otel_tenant` TO `acme_reader`", stmts[4], "roles last: never the reader role without the policy")
	for _, table := range Tables {
		require.Contains(t, stmts[2], cfg.Qualified(table))
	}

	unsalted := goldenTenant
	unsalted.PasswordSHA256Hex, unsalted.SaltHex = HashPassword("secret", nil)
	stmts, err = cfg.TenantUserDDL(unsalted)
	require.NoError(t, err)
	require.Contains(t, stmts[0], "IDENTIFIED WITH sha256_hash BY '2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b'\n")
	require.NotContains(t, stmts[0], "SALT")

	stmts, err = cfg.TenantUserDDL(goldenExisting)
	require.NoError(t, err)
	require.Len(t, stmts, 4)
	require.Equal(t, `ALTER USER `+"`grafana_o`"+` MODIFY SETTING log_comment = 'flamehouse:tenant:o\'brien\\co'`, stmts[0])
	require.NotContains(t, strings.Join(stmts, "\n"), "IDENTIFIED", "an existing user's password is not touched")

	for _, drop := range []bool{false, true} {
		stmts, err := cfg.DropTenantUserDDL("acme_reader", drop)
		require.NoError(t, err)
		require.Len(t, stmts, 2)
		if drop {
			require.Equal(t, "DROP USER IF EXISTS `acme_reader`", stmts[0])
		} else {
			require.Equal(t, "REVOKE `flamehouse_otel_reader`, `flamehouse_otel_tenant` FROM `acme_reader`", stmts[0],
				"the reader role goes before the policies")
		}
		require.True(t, strings.HasPrefix(stmts[1], "DROP ROW POLICY IF EXISTS `flamehouse_tenant_acme_reader` ON\n"))
	}
}

func TestTenantUserValidation(t *testing.T) {
	cfg := DefaultConfig()
	ok := goldenTenant
	for _, tc := range []struct {
		name string
		edit func(*TenantUser)
		want []error
	}{
		{"empty name", func(u *TenantUser) { u.Name = "" }, []error{errUserName}},
		{"name with quote", func(u *TenantUser) { u.Name = "a`b" }, []error{errUserName}},
		{"name with host", func(u *TenantUser) { u.Name = "bob@localhost" }, []error{errUserName}},
		{"name starts with digit", func(u *TenantUser) { u.Name = "1bob" }, []error{errUserName}},
		{"name of a role", func(u *TenantUser) { u.Name = "flamehouse_otel_reader" }, []error{errUserIsRole}},
		{"no hash", func(u *TenantUser) { u.PasswordSHA256Hex = "" }, []error{errPasswordHash}},
		{"short hash", func(u *TenantUser) { u.PasswordSHA256Hex = "abcd" }, []error{errPasswordHash}},
		{"hash not hex", func(u *TenantUser) { u.PasswordSHA256Hex = strings.Repeat("zz", 32) }, []error{errPasswordHash}},
		{"hash with quote", func(u *TenantUser) { u.PasswordSHA256Hex = strings.Repeat("a", 62) + "'x" }, []error{errPasswordHash}},
		{"salt not hex", func(u *TenantUser) { u.SaltHex = "salt'" }, []error{errSalt}},
		{"salt odd length", func(u *TenantUser) { u.SaltHex = "abc" }, []error{errSalt}},
		{"existing with hash", func(u *TenantUser) { u.Existing = true }, []error{errExistingAuth}},
		{"everything", func(u *TenantUser) { u.Name, u.PasswordSHA256Hex, u.SaltHex = "x y", "", "q" }, []error{errUserName, errPasswordHash, errSalt}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := ok
			tc.edit(&u)
			_, err := cfg.TenantUserDDL(u)
			require.Error(t, err)
			for _, want := range tc.want {
				require.ErrorIs(t, err, want)
			}
		})
	}
	for _, tenant := range []string{"", "a'b", `a\'b`, "a\nb", "ü", "\x00"} {
		u := ok
		u.Tenant = tenant
		_, err := cfg.TenantUserDDL(u)
		require.NoError(t, err, "any tenant is allowed: %q", tenant)
	}
	existing := TenantUser{Name: "bob", Existing: true}
	_, err := cfg.TenantUserDDL(existing)
	require.NoError(t, err)

	_, err = cfg.DropTenantUserDDL("a-b", true)
	require.ErrorIs(t, err, errUserName)
	bad := DefaultConfig()
	bad.Database = "x y"
	_, err = bad.TenantUserDDL(ok)
	require.ErrorIs(t, err, errDatabase)
	_, err = bad.DropTenantUserDDL("bob", false)
	require.ErrorIs(t, err, errDatabase)
}

// TestQuoteStringNastyTenants: a tenant is pasted into the DDL as a string
// literal; backslash and quote are escaped, everything else is kept (the
// engine test checks ClickHouse reads every one back unchanged).
func TestQuoteStringNastyTenants(t *testing.T) {
	for in, want := range map[string]string{
		"acme":     `'acme'`,
		"":         `''`,
		"a'b":      `'a\'b'`,
		`a\'b`:     `'a\\\'b'`,
		`a\`:       `'a\\'`,
		`\\'`:      `'\\\\\''`,
		"'":        `'\''`,
		"a\nb":     "'a\nb'",
		"a`b\"c":   "'a`b\"c'",
		"x') OR 1": `'x\') OR 1'`,
	} {
		require.Equal(t, want, quoteString(in), "%q", in)
	}
	cfg := DefaultConfig()
	u := goldenTenant
	u.Tenant = "x' OR 1 OR '"
	stmts, err := cfg.TenantUserDDL(u)
	require.NoError(t, err)
	require.Contains(t, stmts[2], `USING TenantId = 'x\' OR 1 OR \'' AS RESTRICTIVE`)
	require.Contains(t, stmts[0], `log_comment = 'flamehouse:tenant:x\' OR 1 OR \''`)
}

// TestHashPassword checks HashPassword against SHA-256 values computed
// outside Go (printf 'secretdeadbeef' | sha256sum; printf 'secret' |
// sha256sum): ClickHouse hashes the password followed by the salt text.
func TestHashPassword(t *testing.T) {
	hash, salt := HashPassword("secret", []byte{0xde, 0xad, 0xbe, 0xef})
	require.Equal(t, "deadbeef", salt)
	require.Equal(t, "7059272b2d38dd0e258046e7eb433d722b57f7d3f416efc193a1eada71318dbf", hash)
	hash, salt = HashPassword("secret", nil)
	require.Empty(t, salt)
	require.Equal(t, "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b", hash)
}

func TestConfigAccessControl(t *testing.T) {
	cfg := DefaultConfig()
	require.Equal(t, AccessControlAuto, cfg.AccessControl)
	for _, v := range []string{AccessControlAuto, AccessControlOn, AccessControlOff} {
		cfg.AccessControl = v
		require.NoError(t, cfg.Validate())
	}
	for _, v := range []string{"", "yes", "ON", "true"} {
		cfg.AccessControl = v
		require.ErrorIs(t, cfg.Validate(), errAccess, "%q", v)
	}
	cfg = DefaultConfig()
	cfg.AccessControl = "maybe"
	cfg.Database = "x y"
	err := cfg.Validate()
	require.ErrorIs(t, err, errAccess)
	require.ErrorIs(t, err, errDatabase, "every problem is reported at once")

	cfg = DefaultConfig()
	f := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.RegisterFlags(f, "schema.")
	require.Equal(t, "auto", f.Lookup("schema.access-control").DefValue)
	require.NoError(t, f.Parse([]string{"-schema.access-control", "off"}))
	require.Equal(t, AccessControlOff, cfg.AccessControl)
}
