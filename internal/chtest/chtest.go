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
// says why.
package chtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/chembed"
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
	var err error
	dataDir, err = os.MkdirTemp("", "flamehouse-chtest-")
	if err != nil {
		return nil, err
	}
	cfg := chembed.DefaultConfig()
	cfg.DataDir = dataDir
	cfg.ListenAddress = "127.0.0.1:0"
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
		Addr:   addr,
		Engine: engine,
		HTTP:   srv,
	}, nil
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
