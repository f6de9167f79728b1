package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// Service is a running Flamehouse: the ClickHouse it writes to and, in the
// embedded default, the engine and its HTTP interface.
type Service struct {
	cfg    Config
	log    *slog.Logger
	engine *chembed.Engine // nil with an external server
	http   *chembed.Server
	// httpAddr is the embedded HTTP interface's bound address.
	httpAddr string
	conn     clickhouse.Conn
	serveErr chan error
	// Migration is what the schema migration did at start.
	Migration schema.Report
}

// Start brings up ClickHouse, the embedded engine or a connection to the
// external server, and migrates the schema. Stop undoes it.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, log: log, serveErr: make(chan error, 1)}
	chCfg := cfg.ClickHouse
	if cfg.UsesEmbedded() {
		if err := s.startEmbedded(ctx); err != nil {
			return nil, err
		}
		chCfg = chclient.Config{
			Address: s.httpAddr, Protocol: chclient.ProtocolHTTP, Username: cfg.Embedded.User, Password: cfg.Embedded.Password,
			DialTimeout: cfg.ClickHouse.DialTimeout, MaxOpenConns: cfg.ClickHouse.MaxOpenConns,
		}
		if chCfg.Username == "" {
			chCfg.Username = chembed.DefaultUser
		}
	}
	conn, err := chclient.Open(chCfg)
	if err == nil {
		err = conn.Ping(ctx)
	}
	if err != nil {
		s.stopEmbedded(ctx)
		return nil, fmt.Errorf("connect to clickhouse at %s: %w", chCfg.Address, err)
	}
	s.conn = conn
	migrator, err := schema.NewMigrator(cfg.Schema, conn)
	if err == nil {
		s.Migration, err = migrator.Migrate(ctx)
	}
	if err != nil {
		_ = s.Stop(ctx)
		return nil, fmt.Errorf("migrate schema: %w", err)
	}
	log.Info("schema ready", "database", cfg.Schema.Database, "version", s.Migration.Version,
		"applied", s.Migration.Applied, "retention_changed", s.Migration.RetentionChanged)
	return s, nil
}

func (s *Service) startEmbedded(ctx context.Context) error {
	engine, err := chembed.Open(s.cfg.Embedded, s.log)
	if err != nil {
		return fmt.Errorf("start embedded clickhouse: %w", err)
	}
	srv, err := chembed.NewServer(engine, engine.Config(), s.log)
	if err != nil {
		engine.Close()
		return err
	}
	ln, err := srv.Listen(ctx)
	if err != nil {
		engine.Close()
		return err
	}
	s.engine, s.http, s.httpAddr = engine, srv, ln.Addr().String()
	go func() { s.serveErr <- srv.Serve(ln) }()
	return nil
}

// Conn is the service's connection to ClickHouse.
func (s *Service) Conn() clickhouse.Conn { return s.conn }

// HTTPAddress is the embedded HTTP interface's address ("" when external).
func (s *Service) HTTPAddress() string { return s.httpAddr }

// Wait blocks until ctx ends or a server fails.
func (s *Service) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-s.serveErr:
		return err
	}
}

// Stop closes the connection, drains the embedded HTTP interface and shuts
// the engine down.
func (s *Service) Stop(ctx context.Context) error {
	var err error
	if s.conn != nil {
		err = s.conn.Close()
	}
	s.stopEmbedded(ctx)
	return err
}

func (s *Service) stopEmbedded(ctx context.Context) {
	if s.http != nil {
		if err := s.http.Shutdown(ctx); err != nil {
			s.log.Warn("embedded clickhouse did not drain in time", "error", err)
		}
	}
	if s.engine != nil {
		s.engine.Close()
	}
}

// Describe prints how to reach what runs: the schema, and for the embedded
// engine the HTTP endpoint and ready-to-use commands.
func (s *Service) Describe(w io.Writer) {
	cfg := s.cfg
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(w, format+"\n", args...) }
	p("")
	if s.engine != nil {
		host, port, _ := net.SplitHostPort(s.httpAddr)
		user := cfg.Embedded.User
		if user == "" {
			user = chembed.DefaultUser
		}
		pass := "no password"
		if cfg.Embedded.Password != "" {
			pass = "password from the embedded.password setting"
		}
		p("Flamehouse is running on embedded ClickHouse %s (data in %s).", s.engine.Version(), s.engine.Config().DataDir)
		p("  ClickHouse HTTP interface: http://%s  (user %s, %s)", s.httpAddr, user, pass)
		p("  Try:      curl 'http://%s/?query=%s'", s.httpAddr, url.QueryEscape("SELECT name FROM system.tables WHERE database = '"+cfg.Schema.Database+"'"))
		p("  Go:       clickhouse.Open(&clickhouse.Options{Protocol: clickhouse.HTTP, Addr: []string{%q}})", s.httpAddr)
		p("  Grafana ClickHouse plugin: protocol http, host %s, port %s, user %s", host, port, user)
	} else {
		p("Flamehouse is running on ClickHouse at %s (%s).", cfg.ClickHouse.Address, cfg.ClickHouse.Protocol)
	}
	p("  Schema:   database %s, version %d, tables %s*", cfg.Schema.Database, s.Migration.Version, cfg.Schema.TablePrefix+"profile_")
	p("Stop with Ctrl-C (the engine shuts down cleanly; data stays in the data directory).")
}

// stopTimeout bounds shutdown when the caller gives no deadline.
const stopTimeout = 45 * time.Second

// errUsage marks command-line mistakes (exit code 2).
var errUsage = errors.New("usage")
