package chembed

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/flamehouse/flamehouse/pkg/secret"
)

// Config configures the embedded engine and its HTTP endpoint.
type Config struct {
	// LibraryPath is libchdb.so. Empty: FLAMEHOUSE_CHDB_LIB, then
	// node_modules/@chdb/lib-linux-x64-gnu/libchdb.so in the working
	// directory or a parent of it.
	LibraryPath string `yaml:"library_path"`
	// DataDir holds the engine's tables. It is created if missing; one
	// process at a time may use it.
	DataDir string `yaml:"data_dir"`
	// ListenAddress is the host:port of the HTTP interface. Default
	// 127.0.0.1:8123 (loopback only). Any other address requires a password.
	ListenAddress string `yaml:"listen_address"`
	// User is the one user the server accepts. Default "default".
	User string `yaml:"user"`
	// Password is the user's password. Empty means no password, which is
	// allowed only on a loopback address.
	Password secret.String `yaml:"password"`
	// Connections is how many engine connections serve requests
	// concurrently (each runs one statement at a time). Default 2.
	Connections int `yaml:"connections"`
	// QueueTimeout is how long a request waits for a free connection before
	// it is refused with 503. Default 10s.
	QueueTimeout time.Duration `yaml:"queue_timeout"`
	// MaxExecutionTime caps every statement's run time (the client may ask
	// for less with max_execution_time). Default 10m; 0 means no cap.
	MaxExecutionTime time.Duration `yaml:"max_execution_time"`
	// MaxQueryBytes caps the SQL text of a request (not INSERT data that
	// follows FORMAT). Default 1 MiB (a real server's max_query_size is 256 KiB).
	MaxQueryBytes int64 `yaml:"max_query_bytes"`
	// MaxBodyBytes caps one request body, INSERT data included. Default 1 GiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxSpoolBytes caps the INSERT data spooled to disk by all requests
	// together; beyond it, inserts are refused with 503. Default 4 GiB.
	MaxSpoolBytes int64 `yaml:"max_spool_bytes"`
	// MaxResultBytes caps a buffered (non-streamed) result. Default 256 MiB.
	MaxResultBytes int64 `yaml:"max_result_bytes"`
	// MaxServerMemoryBytes caps the engine's memory
	// (--max_server_memory_usage). 0 leaves the engine's default (90% of RAM).
	MaxServerMemoryBytes int64 `yaml:"max_server_memory_bytes"`
	// ShutdownTimeout bounds how long shutdown waits for running requests. Default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// Users are further users besides User (who is an admin): writers,
	// readers of every tenant and readers of one tenant (access.go).
	Users []User `yaml:"users"`
	// UsersFile holds users added at run time by `flamehouse tenants`; the
	// server re-reads it when it changes. Default <data_dir>/users.yaml.
	UsersFile string `yaml:"users_file"`
	// TenantTables are the tables ("database.table") with a TenantId column
	// whose rows tenant users may read only for their own tenant: the
	// engine starts with a row policy on each. Set by the service from the
	// schema; empty: no row policies, and tenant users are refused.
	TenantTables []string `yaml:"-"`
}

// Defaults, in one place.
const (
	DefaultListenAddress    = "127.0.0.1:8123"
	DefaultUser             = "default"
	DefaultConnections      = 2
	DefaultQueueTimeout     = 10 * time.Second
	DefaultMaxExecutionTime = 10 * time.Minute
	DefaultMaxQueryBytes    = 1 << 20
	DefaultMaxBodyBytes     = 1 << 30
	DefaultMaxSpoolBytes    = 4 << 30
	DefaultMaxResultBytes   = 256 << 20
	DefaultShutdownTimeout  = 30 * time.Second
	DefaultUsersFile        = "users.yaml"
)

// DefaultConfig returns a Config with every default set and no data directory.
func DefaultConfig() Config {
	return Config{
		ListenAddress:    DefaultListenAddress,
		User:             DefaultUser,
		Connections:      DefaultConnections,
		QueueTimeout:     DefaultQueueTimeout,
		MaxExecutionTime: DefaultMaxExecutionTime,
		MaxQueryBytes:    DefaultMaxQueryBytes,
		MaxBodyBytes:     DefaultMaxBodyBytes,
		MaxSpoolBytes:    DefaultMaxSpoolBytes,
		MaxResultBytes:   DefaultMaxResultBytes,
		ShutdownTimeout:  DefaultShutdownTimeout,
	}
}

// RegisterFlags binds the config to command-line flags with the given
// prefix; the flags' defaults are the config's current values.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.StringVar(&c.LibraryPath, prefix+"library-path", c.LibraryPath, "path of libchdb.so (default: $"+LibraryEnv+", then node_modules/@chdb/lib-linux-x64-gnu)")
	f.StringVar(&c.DataDir, prefix+"data-dir", c.DataDir, "directory of the embedded engine's tables")
	f.StringVar(&c.ListenAddress, prefix+"listen-address", c.ListenAddress, "host:port of the ClickHouse HTTP interface")
	f.StringVar(&c.User, prefix+"user", c.User, "user name clients authenticate as")
	f.Func(prefix+"password", "password of the user (required unless the listen address is loopback)", func(v string) error {
		c.Password = secret.String(v)
		return nil
	})
	f.IntVar(&c.Connections, prefix+"connections", c.Connections, "engine connections serving requests concurrently")
	f.DurationVar(&c.QueueTimeout, prefix+"queue-timeout", c.QueueTimeout, "how long a request waits for a free connection before a 503")
	f.DurationVar(&c.MaxExecutionTime, prefix+"max-execution-time", c.MaxExecutionTime, "cap on any statement's run time (0: none)")
	f.Int64Var(&c.MaxBodyBytes, prefix+"max-body-bytes", c.MaxBodyBytes, "cap on one request body")
	f.Int64Var(&c.MaxSpoolBytes, prefix+"max-spool-bytes", c.MaxSpoolBytes, "cap on INSERT data spooled to disk at once")
	f.Int64Var(&c.MaxServerMemoryBytes, prefix+"max-server-memory-bytes", c.MaxServerMemoryBytes, "cap on the engine's memory (0: engine default)")
}

var (
	errNoDataDir          = errors.New("data directory must be set")
	errPasswordRequired   = errors.New("a password is required when listening on a non-loopback address")
	errConnections        = errors.New("connections must be between 1 and 64")
	errNegativeLimit      = errors.New("limits and timeouts must not be negative")
	errQueueTimeoutNeeded = errors.New("queue timeout must be positive")
)

// UsersFilePath is UsersFile, or its default in the data directory.
func (c *Config) UsersFilePath() string {
	if c.UsersFile != "" || c.DataDir == "" {
		return c.UsersFile
	}
	return filepath.Join(c.DataDir, DefaultUsersFile)
}

// Validate reports every problem of the config at once.
func (c *Config) Validate() error {
	var err error
	if c.DataDir == "" {
		err = errors.Join(err, errNoDataDir)
	}
	if host, _, splitErr := net.SplitHostPort(c.ListenAddress); splitErr != nil {
		err = errors.Join(err, fmt.Errorf("listen address %q: %w", c.ListenAddress, splitErr))
	} else if !isLoopback(host) && c.Password == "" {
		err = errors.Join(err, fmt.Errorf("listen address %q: %w", c.ListenAddress, errPasswordRequired))
	}
	if c.Connections < 1 || c.Connections > 64 {
		err = errors.Join(err, errConnections)
	}
	if c.QueueTimeout <= 0 {
		err = errors.Join(err, errQueueTimeoutNeeded)
	}
	names := map[string]bool{c.User: true}
	for i := range c.Users {
		err = errors.Join(err, c.Users[i].Validate())
		if names[c.Users[i].Name] {
			err = errors.Join(err, fmt.Errorf("user %q is declared twice", c.Users[i].Name))
		}
		names[c.Users[i].Name] = true
	}
	for _, t := range c.TenantTables {
		if !tableRefRe.MatchString(t) {
			err = errors.Join(err, fmt.Errorf("tenant table %q: want database.table", t))
		}
	}
	if c.MaxExecutionTime < 0 || c.MaxQueryBytes < 0 || c.MaxBodyBytes < 0 || c.MaxSpoolBytes < 0 ||
		c.MaxResultBytes < 0 || c.MaxServerMemoryBytes < 0 || c.ShutdownTimeout < 0 {
		err = errors.Join(err, errNegativeLimit)
	}
	return err
}

// isLoopback reports whether host names only the local machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
