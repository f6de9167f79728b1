// Package chtest gives integration tests a real ClickHouse: the embedded
// engine (started once per test binary on a temporary data directory and
// served over HTTP on a loopback port) or an external server named by
// FLAMEHOUSE_CLICKHOUSE_URL. Tests never get a fake.
//
// A package that uses it calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { chtest.Main(m) }
//
// and Get from each integration test. With -short, Get skips the test and
// says why. A package whose TestMain is generated (the Collector exporter's,
// by mdatagen) calls Main from the generated TestMain's setup. Main must
// run: an engine still running when a race-detector test binary exits can
// crash the detector's finalisation. Should a test binary die anyway, the
// next engine a test binary starts removes the data directories of test
// binaries that no longer run.
package chtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

// URLEnv names the environment variable with an external server's DSN,
// e.g. clickhouse://default:@127.0.0.1:9000/default (native) or
// http://default:@127.0.0.1:8123/default (HTTP).
const URLEnv = "FLAMEHOUSE_CLICKHOUSE_URL"

// Server is the ClickHouse the tests run against.
type Server struct {
	// Options connect clickhouse-go to it (no database set).
	Options clickhouse.Options
	// Addr is host:port.
	Addr string
	// Engine is the embedded engine, nil for an external server.
	Engine *chembed.Engine
	// usersFile is the embedded server's users file (AddUser).
	usersFile string
	// HTTP is the embedded engine's HTTP server, nil for an external server.
	HTTP *chembed.Server
	// External is true for a server named by FLAMEHOUSE_CLICKHOUSE_URL.
	External bool
}

var (
	once    sync.Once
	current *Server
	errUp   error
	dataDir string
)

// Main runs the package's tests and then shuts the embedded engine down if
// a test started it.
func Main(m *testing.M) {
	code := m.Run()
	if current != nil && current.Engine != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = current.HTTP.Shutdown(ctx)
		cancel()
		current.Engine.Close()
	}
	if dataDir != "" {
		_ = os.RemoveAll(dataDir)
	}
	os.Exit(code)
}

// Get returns the server, starting the embedded engine on first use. It
// fails the test when no server can be had, and skips it only under -short.
func Get(tb testing.TB) *Server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test skipped under -short: it needs the embedded ClickHouse engine or " + URLEnv)
	}
	once.Do(func() { current, errUp = start() })
	require.NoError(tb, errUp, "no ClickHouse for integration tests: run `npm ci` (installs libchdb) or set %s", URLEnv)
	return current
}

func start() (*Server, error) {
	if dsn := os.Getenv(URLEnv); dsn != "" {
		opts, err := clickhouse.ParseDSN(dsn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", URLEnv, err)
		}
		opts.Auth.Database = ""
		return &Server{Options: *opts, Addr: opts.Addr[0], External: true}, nil
	}
	removeAbandoned()
	var err error
	dataDir, err = os.MkdirTemp("", dataDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, err
	}
	cfg := chembed.DefaultConfig()
	cfg.DataDir = dataDir
	cfg.ListenAddress = "127.0.0.1:0"
	for _, db := range tenancyDatabases {
		tables := schema.DefaultConfig()
		tables.Database = db
		cfg.TenantTables = append(cfg.TenantTables, tables.TenantTables()...)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	engine, err := chembed.Open(cfg, log)
	if err != nil {
		return nil, err
	}
	srv, err := chembed.NewServer(engine, cfg, log)
	if err != nil {
		engine.Close()
		return nil, err
	}
	ln, err := srv.Listen(context.Background())
	if err != nil {
		engine.Close()
		return nil, err
	}
	go func() { _ = srv.Serve(ln) }()
	addr := ln.Addr().String()
	return &Server{
		Options: clickhouse.Options{
			Protocol: clickhouse.HTTP,
			Addr:     []string{addr},
			Auth:     clickhouse.Auth{Username: chembed.DefaultUser},
		},
		Addr:      addr,
		Engine:    engine,
		HTTP:      srv,
		usersFile: filepath.Join(dataDir, chembed.DefaultUsersFile),
	}, nil
}

// dataDirPrefix starts the names of the engines' data directories, which
// go on with the test binary's process id.
const dataDirPrefix = "flamehouse-chtest-"

// removeAbandoned removes the data directories of engines whose test
// binary exited without Main: those whose process no longer runs.
func removeAbandoned() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dataDirPrefix+"*-*"))
	for _, dir := range dirs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), dataDirPrefix), "-")
		if n, err := strconv.Atoi(pid); err == nil && n > 0 && errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

// tenancyDatabases are the databases whose Flamehouse tables the engine
// guards with tenant row policies (which are fixed when it starts).
var tenancyDatabases = []string{"tenancy_1", "tenancy_2", "tenancy_3", "tenancy_4"}

var (
	tenancyMu   sync.Mutex
	tenancyUsed = map[string]bool{}
)

// NewTenancyDatabase returns, for one test, an empty database whose
// Flamehouse tables (once migrated into it with the default prefix) carry
// the embedded engine's tenant row policies, and drops it when the test
// ends. It skips on an external server, whose access control the test
// cannot configure.
func (s *Server) NewTenancyDatabase(tb testing.TB) string {
	tb.Helper()
	if s.External {
		tb.Skip("tenant row policies of the embedded engine: not on an external server")
	}
	tenancyMu.Lock()
	name := ""
	for _, db := range tenancyDatabases {
		if !tenancyUsed[db] {
			name, tenancyUsed[db] = db, true
			break
		}
	}
	tenancyMu.Unlock()
	require.NotEmpty(tb, name, "all %d tenancy databases are in use", len(tenancyDatabases))
	conn := s.Open(tb)
	ctx := context.Background()
	require.NoError(tb, conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name))
	require.NoError(tb, conn.Exec(ctx, "CREATE DATABASE "+name))
	tb.Cleanup(func() {
		_ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name)
		tenancyMu.Lock()
		delete(tenancyUsed, name)
		tenancyMu.Unlock()
	})
	return name
}

// AddUser adds a user to the embedded server's users file for one test
// (removed when it ends); the server picks it up on the next request.
func (s *Server) AddUser(tb testing.TB, u chembed.User) {
	tb.Helper()
	if s.External {
		tb.Skip("users of the embedded engine: not on an external server")
	}
	if u.Password != "" {
		u.PasswordSHA256Hex, u.Password = chembed.PasswordSHA256(u.Password.Value()), ""
	}
	change := func(edit func(*chembed.UsersFile)) {
		tenancyMu.Lock()
		defer tenancyMu.Unlock()
		f, err := chembed.ReadUsersFile(s.usersFile)
		require.NoError(tb, err)
		edit(&f)
		require.NoError(tb, chembed.WriteUsersFile(s.usersFile, f))
	}
	drop := func(f *chembed.UsersFile) {
		f.Users = slices.DeleteFunc(f.Users, func(x chembed.User) bool { return x.Name == u.Name })
	}
	change(func(f *chembed.UsersFile) { drop(f); f.Users = append(f.Users, u) })
	tb.Cleanup(func() { change(drop) })
}

// Open connects clickhouse-go with the server's options, changed by the
// given functions, and closes the connection when the test ends.
func (s *Server) Open(tb testing.TB, change ...func(*clickhouse.Options)) clickhouse.Conn {
	tb.Helper()
	opts := s.Options
	for _, c := range change {
		c(&opts)
	}
	conn, err := clickhouse.Open(&opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}

// NewDatabase creates a database with a unique name for one test and drops
// it when the test ends.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "test_" + hex.EncodeToString(b[:])
	conn := s.Open(tb)
	ctx := context.Background()
	require.NoError(tb, conn.Exec(ctx, "CREATE DATABASE "+name))
	tb.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name) })
	return name
}

// NativeInserter returns an inserter of Native-format blocks for the
// server, or nil when the server is reached over the native protocol.
func (s *Server) NativeInserter(tb testing.TB) *chclient.NativeInserter {
	tb.Helper()
	if s.Options.Protocol != clickhouse.HTTP {
		return nil
	}
	cfg := chclient.DefaultConfig()
	cfg.Address, cfg.Protocol = s.Addr, chclient.ProtocolHTTP
	cfg.Username, cfg.Password = s.Options.Auth.Username, secret.String(s.Options.Auth.Password)
	if s.Options.TLS != nil {
		cfg.Secure, cfg.TLSSkipVerify = true, s.Options.TLS.InsecureSkipVerify
	}
	n, err := chclient.NewNativeInserter(cfg)
	require.NoError(tb, err)
	tb.Cleanup(n.Close)
	return n
}

// Int64sByKey runs a query whose rows are (String, Int64) — a sum per
// service, say — and returns them as a map.
func Int64sByKey(tb testing.TB, conn clickhouse.Conn, query string, args ...any) map[string]int64 {
	tb.Helper()
	rows, err := conn.Query(context.Background(), query, args...)
	require.NoError(tb, err, query)
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		require.NoError(tb, rows.Scan(&k, &v))
		out[k] = v
	}
	require.NoError(tb, rows.Err())
	return out
}
