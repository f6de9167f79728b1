// Package service is the flamehouse binary: its configuration (YAML file
// plus flags), its subcommands and the main job that runs the embedded
// ClickHouse engine (or connects to an external server), keeps the schema
// migrated and serves the OTLP profiles ingest endpoints.
package service

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/ingest"
	"github.com/flamehouse/flamehouse/pkg/pyroscopeapi"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
	"github.com/flamehouse/flamehouse/pkg/selfprofile"
	"github.com/flamehouse/flamehouse/pkg/symbols"
	"github.com/flamehouse/flamehouse/pkg/symbols/debuginfod"
)

// Config is the whole configuration of the flamehouse binary.
type Config struct {
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text or json. Default text.
	LogFormat string `yaml:"log_format"`
	// ClickHouse names an external server. When its address is empty, the
	// embedded engine configured under Embedded is started instead.
	ClickHouse chclient.Config `yaml:"clickhouse"`
	// Embedded configures the embedded ClickHouse engine.
	Embedded chembed.Config `yaml:"embedded"`
	// Schema says where the tables live and how long data is kept.
	Schema schema.Config `yaml:"schema"`
	// Ingest is the OTLP profiles ingest service.
	Ingest ingest.Config `yaml:"ingest"`
	// PyroscopeAPI is the Pyroscope-compatible query API that `flamehouse
	// run` serves from the tables (docs/pyroscope-api.md), with the
	// ingest's auth, tenants and TLS; on by default on 127.0.0.1:4040.
	PyroscopeAPI pyroscopeapi.Config `yaml:"pyroscope_api"`
	// SelfProfile sends this process's own profiles through the ingest
	// path, and traces its own work into the traces table, so that a fresh
	// installation has data to look at.
	SelfProfile selfprofile.Config `yaml:"selfprofile"`
	// Symbols is how executables' symbols get into the symbol store
	// (docs/symbols.md).
	Symbols SymbolsConfig `yaml:"symbols"`
	// Writer, when its username is set, is the ClickHouse user the ingest
	// writes samples with: one that may only insert (the writer role,
	// docs/security.md). The clickhouse (or embedded) user then applies
	// the schema and serves the symbol store. Empty: that user writes too.
	Writer Credentials `yaml:"writer"`
	// Tenants are tenant users that `flamehouse run` and `flamehouse
	// migrate` create or update at start, as `flamehouse tenants add`
	// does: users of the embedded engine, or users with row policies on an
	// external server (which then must have access control applied).
	Tenants []TenantUserConfig `yaml:"tenants"`
}

// TenantUserConfig declares a read-only user that sees one tenant's rows
// (docs/security.md).
type TenantUserConfig struct {
	// User is the ClickHouse user's name.
	User string `yaml:"user"`
	// Tenant is the tenant whose rows it reads ("" is the default tenant).
	Tenant string `yaml:"tenant"`
	// PasswordFile is a file holding its password (one line).
	PasswordFile string `yaml:"password_file"`
	// PasswordEnv is an environment variable holding its password.
	PasswordEnv string `yaml:"password_env"`
	// Existing: the user exists on the external server already; only the
	// roles and row policies are added (no password).
	Existing bool `yaml:"existing"`
}

// Validate reports every problem of the declaration at once.
func (t *TenantUserConfig) Validate() error {
	var err error
	if t.User == "" {
		err = errors.Join(err, errors.New("user is required"))
	}
	switch {
	case t.Existing && (t.PasswordFile != "" || t.PasswordEnv != ""):
		err = errors.Join(err, fmt.Errorf("tenant user %q: an existing user keeps its password; drop password_file/password_env", t.User))
	case !t.Existing && (t.PasswordFile == "") == (t.PasswordEnv == ""):
		err = errors.Join(err, fmt.Errorf("tenant user %q: give its password with password_file or password_env (one of them)", t.User))
	}
	return err
}

// password reads the declared password.
func (t *TenantUserConfig) password() (string, error) {
	return readPassword(t.PasswordFile, t.PasswordEnv)
}

// Credentials name a ClickHouse user. The password comes from the
// configuration, or better from a file or an environment variable.
type Credentials struct {
	// Username is the ClickHouse user.
	Username string `yaml:"username"`
	// Password is the user's password.
	Password secret.String `yaml:"password"`
	// PasswordFile is a file holding the password (one line).
	PasswordFile string `yaml:"password_file"`
	// PasswordEnv is an environment variable holding the password.
	PasswordEnv string `yaml:"password_env"`
}

// RegisterFlags binds the credentials to flags with the given prefix.
func (c *Credentials) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.StringVar(&c.Username, prefix+"username", c.Username, "ClickHouse user")
	f.StringVar(&c.PasswordFile, prefix+"password-file", c.PasswordFile, "file holding the user's password")
	f.StringVar(&c.PasswordEnv, prefix+"password-env", c.PasswordEnv, "environment variable holding the user's password")
}

// Validate reports conflicting password sources.
func (c *Credentials) Validate() error {
	n := 0
	for _, set := range []bool{c.Password != "", c.PasswordFile != "", c.PasswordEnv != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return errors.New("give the password one way: password, password_file or password_env")
	}
	if n == 1 && c.Username == "" {
		return errors.New("a password needs a username")
	}
	return nil
}

// password reads the password from where the credentials say.
func (c *Credentials) password() (secret.String, error) {
	if c.PasswordFile == "" && c.PasswordEnv == "" {
		return c.Password, nil
	}
	p, err := readPassword(c.PasswordFile, c.PasswordEnv)
	if err != nil {
		return "", fmt.Errorf("password of %s: %w", c.Username, err)
	}
	return secret.String(p), nil
}

// SymbolsConfig is the symbols section.
type SymbolsConfig struct {
	// Debuginfod fetches, in the background, the symbols of executables
	// that ingested frames left unsymbolized from debuginfod servers
	// (docs/symbols-debuginfod.md). Off without urls.
	Debuginfod debuginfod.Config `yaml:"debuginfod"`
	// Host looks for those executables' files on the ingest's own machine,
	// by build id (debug dirs, the mapping's path), before any server; on
	// by default, since a file is used only when its build id is the
	// frame's (docs/symbols.md, "On host"). Its size limit is
	// debuginfod.max_file_bytes.
	Host debuginfod.HostConfig `yaml:"host"`
	// Upload is the PUT /v1/symbols/<build id> endpoint on the ingest
	// service's HTTP listener; its byte limit also bounds
	// `flamehouse symbols upload` (docs/symbols-upload.md).
	Upload symbols.UploadConfig `yaml:"upload"`
}

// DefaultSymbolsConfig returns the symbols section's defaults.
func DefaultSymbolsConfig() SymbolsConfig {
	return SymbolsConfig{Debuginfod: debuginfod.DefaultConfig(), Host: debuginfod.DefaultHostConfig(), Upload: symbols.DefaultUploadConfig()}
}

// RegisterFlags binds the symbols section to flags with the given prefix.
func (c *SymbolsConfig) RegisterFlags(f *flag.FlagSet, prefix string) {
	c.Debuginfod.RegisterFlags(f, prefix+"debuginfod.")
	c.Host.RegisterFlags(f, prefix+"host.")
	c.Upload.RegisterFlags(f, prefix+"upload.")
}

// Validate reports every problem of the symbols section at once.
func (c *SymbolsConfig) Validate() error {
	var err error
	if e := c.Debuginfod.Validate(); e != nil {
		err = errors.Join(err, prefixed("debuginfod", e))
	}
	if e := c.Host.Validate(); e != nil {
		err = errors.Join(err, prefixed("host", e))
	}
	if e := c.Upload.Validate(); e != nil {
		err = errors.Join(err, prefixed("upload", e))
	}
	return err
}

// DefaultDataDir is where the embedded engine keeps its tables by default,
// relative to the working directory.
const DefaultDataDir = "data/clickhouse"

// DefaultConfig returns every default, from the packages that own them.
func DefaultConfig() Config {
	emb := chembed.DefaultConfig()
	emb.DataDir = DefaultDataDir
	return Config{
		LogLevel:     "info",
		LogFormat:    "text",
		ClickHouse:   chclient.DefaultConfig(),
		Embedded:     emb,
		Schema:       schema.DefaultConfig(),
		Ingest:       ingest.DefaultConfig(),
		PyroscopeAPI: pyroscopeapi.DefaultConfig(),
		SelfProfile:  selfprofile.DefaultConfig(),
		Symbols:      DefaultSymbolsConfig(),
	}
}

// RegisterFlags binds every setting to a flag; flag defaults are the
// config's current values, so flags override the file.
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	f.StringVar(&c.LogLevel, "log.level", c.LogLevel, "log level: debug, info, warn, error")
	f.StringVar(&c.LogFormat, "log.format", c.LogFormat, "log format: text or json")
	c.ClickHouse.RegisterFlags(f, "clickhouse.")
	c.Embedded.RegisterFlags(f, "embedded.")
	c.Writer.RegisterFlags(f, "writer.")
	c.Schema.RegisterFlags(f, "schema.")
	c.Ingest.RegisterFlags(f, "ingest.")
	c.PyroscopeAPI.RegisterFlags(f, "pyroscope-api.")
	c.SelfProfile.RegisterFlags(f, "selfprofile.")
	c.Symbols.RegisterFlags(f, "symbols.")
}

// UsesEmbedded reports whether the service runs the embedded engine.
func (c *Config) UsesEmbedded() bool { return c.ClickHouse.Address == "" }

// Validate reports every problem of the configuration at once, each
// prefixed with the section it belongs to.
func (c *Config) Validate() error {
	var err error
	if _, levelErr := parseLevel(c.LogLevel); levelErr != nil {
		err = errors.Join(err, levelErr)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		err = errors.Join(err, fmt.Errorf("log_format must be text or json, got %q", c.LogFormat))
	}
	if e := c.ClickHouse.Validate(); e != nil {
		err = errors.Join(err, prefixed("clickhouse", e))
	}
	if c.UsesEmbedded() {
		if e := c.Embedded.Validate(); e != nil {
			err = errors.Join(err, prefixed("embedded", e))
		}
	}
	if e := c.Schema.Validate(); e != nil {
		err = errors.Join(err, prefixed("schema", e))
	}
	if e := c.Ingest.Validate(); e != nil {
		err = errors.Join(err, prefixed("ingest", e))
	}
	if e := c.PyroscopeAPI.Validate(); e != nil {
		err = errors.Join(err, prefixed("pyroscope_api", e))
	}
	if e := c.SelfProfile.Validate(); e != nil {
		err = errors.Join(err, prefixed("selfprofile", e))
	}
	if e := c.Symbols.Validate(); e != nil {
		err = errors.Join(err, prefixed("symbols", e))
	}
	if e := c.Writer.Validate(); e != nil {
		err = errors.Join(err, prefixed("writer", e))
	}
	for i := range c.Tenants {
		if e := c.Tenants[i].Validate(); e != nil {
			err = errors.Join(err, prefixed(fmt.Sprintf("tenants[%d]", i), e))
		}
		if c.UsesEmbedded() && c.Tenants[i].Existing {
			err = errors.Join(err, fmt.Errorf("tenants[%d]: existing is for an external server", i))
		}
	}
	return err
}

// prefixed puts a section name in front of each joined error (of nested
// joins too, so that a subsection's errors carry both names).
func prefixed(section string, err error) error {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var out error
		for _, e := range joined.Unwrap() {
			out = errors.Join(out, prefixed(section, e))
		}
		return out
	}
	return fmt.Errorf("%s: %w", section, err)
}

// loadFile reads a YAML config file over c. Unknown keys are errors, so a
// misspelt setting is not silently ignored.
func (c *Config) loadFile(path string) error {
	raw, err := os.ReadFile(path) //nolint:gosec // G304: the operator names the config file
	if err != nil {
		return fmt.Errorf("read config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// configFileFlag is the flag that names the YAML file.
const configFileFlag = "config.file"

// ParseConfig builds the configuration for a subcommand: defaults, then the
// YAML file named by -config.file, then the other flags; extra registers
// the subcommand's own flags.
func ParseConfig(name string, args []string, extra ...func(*flag.FlagSet)) (Config, *flag.FlagSet, error) {
	cfg := DefaultConfig()
	if path := findConfigFile(args); path != "" {
		if err := cfg.loadFile(path); err != nil {
			return cfg, nil, err
		}
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.String(configFileFlag, "", "YAML configuration file (flags override it)")
	cfg.RegisterFlags(fs)
	for _, register := range extra {
		register(fs)
	}
	if err := fs.Parse(args); err != nil {
		return cfg, fs, err
	}
	return cfg, fs, nil
}

// findConfigFile finds -config.file's value before the other flags are
// parsed, so that the file can supply their defaults.
func findConfigFile(args []string) string {
	for i, a := range args {
		name := strings.TrimLeft(a, "-")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if v, ok := strings.CutPrefix(name, configFileFlag+"="); ok {
			return v
		}
		if name == configFileFlag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("log_level must be debug, info, warn or error, got %q", s)
	}
	return l, nil
}

// newLogger builds the structured logger the config asks for.
func (c *Config) newLogger() *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
