package chembed

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flamehouse/flamehouse/pkg/chembed/sqlguard"
	"github.com/flamehouse/flamehouse/pkg/secret"
	"github.com/flamehouse/flamehouse/pkg/tenancy"
)

// Access control of the embedded engine.
//
// libchdb runs every statement as its built-in user "default": it has no
// writable access storage (CREATE USER, CREATE ROLE and CREATE ROW POLICY
// are refused) and ignores --user. What it does honour is a users file
// with row policies for "default". So the HTTP front does the rest:
//
//   - it authenticates several users, each with a role (User.Role);
//   - the engine is started with a row policy on every table that holds
//     tenants' rows (Config.TenantTables): a row is visible only when the
//     statement's access marker (markerSetting) is the engine's secret
//     "all" marker, or names the row's tenant. The policy is applied by ClickHouse itself
//     to every read of those tables: joins, subqueries, UNION, views,
//     materialized views and IN sets included;
//   - the front sets the marker on every request, from the user's role:
//     the secret marker for admin, writer and reader users, the tenant
//     marker for a tenant user. No client can set it: the URL setting is
//     replaced, and a tenant user's SQL may not name it. A tenant user's
//     log_comment defaults to its marker too, which is how the datasource
//     learns its tenant (package tenancy);
//   - a tenant user's statements are further restricted by the guard
//     (read-only, no system tables that describe other tenants' data, no
//     table functions or dictionary lookups that read around the policy,
//     no query cache), and a writer's to inserts.

// Role is what a user of the embedded server may do.
type Role string

// Roles.
const (
	// RoleAdmin may run every statement the guard allows (migrations,
	// inserts, queries over every tenant). The configured User is an admin.
	RoleAdmin Role = "admin"
	// RoleWriter may insert into the tenant tables and nothing else (besides
	// the statements a client driver needs: DESCRIBE, SELECT without FROM).
	RoleWriter Role = "writer"
	// RoleReader may read every tenant's rows and write nothing.
	RoleReader Role = "reader"
	// RoleTenant may read one tenant's rows and write nothing.
	RoleTenant Role = "tenant"
)

// User is a further user of the HTTP interface.
type User struct {
	// Name is what the user authenticates as (letters, digits, _ and -).
	Name string `yaml:"name"`
	// PasswordSHA256Hex is the hex SHA-256 of the password, as ClickHouse's
	// users.xml password_sha256_hex. One of it and Password is required.
	PasswordSHA256Hex string `yaml:"password_sha256_hex"`
	// Password is the password in clear (from a secret store or the
	// environment); prefer PasswordSHA256Hex in files.
	Password secret.String `yaml:"password"`
	// Role is admin, writer, reader or tenant.
	Role Role `yaml:"role"`
	// Tenant is the tenant whose rows a tenant user reads ("" is the
	// default tenant). Only for RoleTenant.
	Tenant string `yaml:"tenant"`
}

// userNameRe is what a user name may look like.
var userNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// Validate reports every problem of the user at once.
func (u *User) Validate() error {
	var err error
	if !userNameRe.MatchString(u.Name) {
		err = errors.Join(err, fmt.Errorf("user name %q: use up to 64 letters, digits, '_', '.' or '-'", u.Name))
	}
	switch {
	case u.PasswordSHA256Hex == "" && u.Password == "":
		err = errors.Join(err, fmt.Errorf("user %q: password_sha256_hex or password is required", u.Name))
	case u.PasswordSHA256Hex != "":
		if b, decErr := hex.DecodeString(u.PasswordSHA256Hex); decErr != nil || len(b) != sha256.Size {
			err = errors.Join(err, fmt.Errorf("user %q: password_sha256_hex must be 64 hex digits", u.Name))
		}
	}
	switch u.Role {
	case RoleAdmin, RoleWriter, RoleReader:
		if u.Tenant != "" {
			err = errors.Join(err, fmt.Errorf("user %q: tenant is only for role tenant", u.Name))
		}
	case RoleTenant:
		if strings.ContainsAny(u.Tenant, "\x00\n") {
			err = errors.Join(err, fmt.Errorf("user %q: tenant must not contain NUL or newline", u.Name))
		}
	default:
		err = errors.Join(err, fmt.Errorf("user %q: role %q: use admin, writer, reader or tenant", u.Name, u.Role))
	}
	return err
}

// PasswordSHA256 returns the hex SHA-256 of a password, the form users
// files keep.
func PasswordSHA256(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}

// passwordMatches compares in constant time.
func (u *User) passwordMatches(password string) bool {
	if u.PasswordSHA256Hex != "" {
		got := PasswordSHA256(password)
		return subtle.ConstantTimeCompare([]byte(got), []byte(strings.ToLower(u.PasswordSHA256Hex))) == 1
	}
	return subtle.ConstantTimeCompare([]byte(password), []byte(u.Password.Value())) == 1
}

// UsersFile is the file `flamehouse tenants` maintains: users added at run
// time, re-read by a running server when it changes.
type UsersFile struct {
	Users []User `yaml:"users"`
}

// ReadUsersFile reads a users file; a missing file holds no users.
func ReadUsersFile(path string) (UsersFile, error) {
	var f UsersFile
	data, err := os.ReadFile(path) //nolint:gosec // the path is the operator's configuration
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("read users file: %w", err)
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("users file %s: %w", path, err)
	}
	for i := range f.Users {
		if err := f.Users[i].Validate(); err != nil {
			return f, fmt.Errorf("users file %s: %w", path, err)
		}
	}
	return f, nil
}

// WriteUsersFile replaces a users file atomically (mode 0600: it holds
// password hashes).
func WriteUsersFile(path string, f UsersFile) error {
	for i := range f.Users {
		if f.Users[i].Password != "" {
			return fmt.Errorf("user %q: a users file keeps password hashes, not passwords", f.Users[i].Name)
		}
	}
	data, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".users-*.yaml")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// principal is an authenticated user.
type principal struct {
	name   string
	role   Role
	tenant string
}

// users holds the configured users and those of the users file, which it
// re-reads when the file changes.
type users struct {
	admin    User
	static   []User
	filePath string

	log *slog.Logger

	mu       sync.Mutex
	fileMod  time.Time
	fileSize int64
	fromFile []User
}

func newUsers(cfg Config, log *slog.Logger) *users {
	return &users{
		admin:    User{Name: cfg.User, Password: cfg.Password, Role: RoleAdmin},
		static:   cfg.Users,
		filePath: cfg.UsersFile,
		log:      log,
	}
}

// lookup returns the user named name, or false.
func (u *users) lookup(name string) (User, bool) {
	if name == u.admin.Name {
		return u.admin, true
	}
	for _, s := range u.static {
		if s.Name == name {
			return s, true
		}
	}
	for _, s := range u.current() {
		if s.Name == name {
			return s, true
		}
	}
	return User{}, false
}

// current returns the users of the file, re-read when its modification
// time or size changed (a stat per call). A version of the file that fails
// to load leaves the previous users in place and is reported once, without
// its contents (`flamehouse tenants list` shows the error in full).
func (u *users) current() []User {
	if u.filePath == "" {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	st, err := os.Stat(u.filePath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		u.fromFile, u.fileMod, u.fileSize = nil, time.Time{}, 0
	case err != nil:
		u.log.Warn("users file unreadable; keeping the users loaded before", "path", u.filePath, "error", err)
	case !st.ModTime().Equal(u.fileMod) || st.Size() != u.fileSize:
		u.fileMod, u.fileSize = st.ModTime(), st.Size()
		f, err := ReadUsersFile(u.filePath)
		if err != nil {
			u.log.Warn("users file does not load (run flamehouse tenants list for the error); keeping the users loaded before",
				"path", u.filePath, "users_kept", len(u.fromFile))
			break
		}
		u.fromFile = f.Users
	}
	return u.fromFile
}

// markerSetting carries the access marker of every statement: the engine's
// secret "all" marker or a tenant's (tenancy.Marker). The row policies
// compare with it and only the front sets it. It is chDB's client name,
// a string setting of the embedded engine alone, which only labels
// remote() connections (refused here): no client of a ClickHouse server
// sets it, and it changes no answer. (log_comment, the tenant's setting
// on a real server, and query_cache_tag stay the client's: our datasource
// and Grafana's ClickHouse plugin set them.)
const (
	markerSetting = sqlguard.AccessMarkerSetting
	allPrefix     = "flamehouse:all:"
)

// newAllMarker returns the marker of unrestricted statements: secret and
// new at every start, so that no text a client saw earlier can be it.
func newAllMarker() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return allPrefix + hex.EncodeToString(b)
}

// rowPolicyFilter is the condition of every tenant table's row policy.
func rowPolicyFilter(allMarker string) string {
	return fmt.Sprintf("getSetting('%s') = '%s' OR (startsWith(getSetting('%s'), '%s') AND TenantId = substring(getSetting('%s'), %d))",
		markerSetting, allMarker, markerSetting, tenancy.MarkerPrefix, markerSetting, tenancy.MarkerPrefixLen+1)
}

// tableRefRe is a database.table name as TenantTables lists it.
var tableRefRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$`)

// writeAccessConfig writes the engine's configuration file (which only
// points at the users file) and the users file with one row policy per
// tenant table, under dir, and returns the configuration file's path.
func writeAccessConfig(dir string, tables []string, allMarker string) (string, error) {
	byDB := map[string][]string{}
	for _, t := range tables {
		if !tableRefRe.MatchString(t) {
			return "", fmt.Errorf("tenant table %q: want database.table", t)
		}
		db, table, _ := strings.Cut(t, ".")
		byDB[db] = append(byDB[db], table)
	}
	filter := xmlEscape(rowPolicyFilter(allMarker))
	var b strings.Builder
	b.WriteString("<clickhouse>\n  <users>\n    <default>\n      <password></password>\n")
	b.WriteString("      <networks><ip>::/0</ip></networks>\n      <profile>default</profile>\n      <quota>default</quota>\n")
	b.WriteString("      <databases>\n")
	for _, db := range slices.Sorted(maps.Keys(byDB)) {
		fmt.Fprintf(&b, "        <%s>\n", db)
		for _, t := range slices.Compact(slices.Sorted(slices.Values(byDB[db]))) {
			fmt.Fprintf(&b, "          <%s><filter>%s</filter></%s>\n", t, filter, t)
		}
		fmt.Fprintf(&b, "        </%s>\n", db)
	}
	b.WriteString("      </databases>\n    </default>\n  </users>\n  <profiles><default/></profiles>\n  <quotas><default/></quotas>\n</clickhouse>\n")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("access config directory: %w", err)
	}
	usersPath := filepath.Join(dir, "users.xml")
	if err := os.WriteFile(usersPath, []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("write engine users file: %w", err)
	}
	configPath := filepath.Join(dir, "config.xml")
	conf := "<clickhouse>\n  <users_config>" + xmlEscape(usersPath) + "</users_config>\n</clickhouse>\n"
	if err := os.WriteFile(configPath, []byte(conf), 0o600); err != nil {
		return "", fmt.Errorf("write engine config file: %w", err)
	}
	return configPath, nil
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// guardRules is the guard's rules for a user of the role.
func (r Role) guardRules() sqlguard.Rules {
	switch r {
	case RoleWriter:
		return sqlguard.RulesWriter
	case RoleTenant:
		return sqlguard.RulesTenant
	}
	return sqlguard.RulesAdmin
}
