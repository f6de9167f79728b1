package service

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/dskit/services"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/ingest"
	"github.com/flamehouse/flamehouse/pkg/ingest/pipeline"
	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/pyroscopeapi"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/selfprofile"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
	"github.com/flamehouse/flamehouse/pkg/symbols"
	"github.com/flamehouse/flamehouse/pkg/symbols/debuginfod"
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
	chConfig chclient.Config
	// native carries the ingest's sample inserts over HTTP (nil otherwise).
	native *chclient.NativeInserter
	// writerConn and writerNative are the ingest's connection and inserter
	// as the configured writer user (nil: the ingest writes with conn).
	writerConn   clickhouse.Conn
	writerNative *chclient.NativeInserter
	serveErr     chan error
	ingester     *ingest.Ingester
	// fetcher finds symbols on this host and fetches them from debuginfod (nil when both are off).
	fetcher *debuginfod.Fetcher
	// stopProfiling ends self-profiling; profilingDone closes when it has.
	stopProfiling context.CancelFunc
	profilingDone chan struct{}
	// pyroscope serves the Pyroscope-compatible query API (nil when off).
	pyroscope *pyroscopeapi.Server
	// tracer writes self-tracing's spans (nil when self-tracing is off).
	tracer *sdktrace.TracerProvider
	// Migration is what the schema migration did at start.
	Migration schema.Report
}

// Part selects what Start runs besides ClickHouse and the schema.
type Part int

// Parts of the service.
const (
	// SchemaOnly runs ClickHouse and migrates (the migrate command).
	SchemaOnly Part = iota
	// Everything adds the ingest endpoints, self-profiling and self-tracing
	// (the run command).
	Everything
)

// Start brings up ClickHouse, the embedded engine or a connection to the
// external server, migrates the schema and, for Everything, starts the
// ingest endpoints and self-profiling. Stop undoes it in reverse.
func Start(ctx context.Context, cfg Config, log *slog.Logger, part Part) (*Service, error) {
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
	s.chConfig = chCfg
	migrator, err := schema.NewMigrator(cfg.Schema, conn)
	if err == nil {
		s.Migration, err = migrator.Migrate(ctx)
	}
	if err != nil {
		_ = s.Stop(ctx)
		return nil, fmt.Errorf("migrate schema: %w", err)
	}
	log.Info("schema ready", "database", cfg.Schema.Database, "version", s.Migration.Version,
		"applied", s.Migration.Applied, "retention_changed", s.Migration.RetentionChanged, "access_control", s.Migration.AccessControl)
	if s.Migration.AccessControlSkipped != "" && !cfg.UsesEmbedded() {
		log.Info("roles and row policies not applied (docs/security.md)", "reason", s.Migration.AccessControlSkipped)
	}
	if err := s.applyTenants(ctx); err != nil {
		_ = s.Stop(ctx)
		return nil, err
	}
	if part == Everything && cfg.Ingest.Enabled {
		err := s.startTracing(ctx)
		if err == nil {
			err = s.startIngest(ctx)
		}
		if err != nil {
			_ = s.Stop(ctx)
			return nil, err
		}
	}
	if part == Everything && cfg.PyroscopeAPI.Enabled {
		if err := s.startPyroscopeAPI(ctx); err != nil {
			_ = s.Stop(ctx)
			return nil, err
		}
	}
	return s, nil
}

// startPyroscopeAPI serves the Pyroscope-compatible query API from the
// service's tables, with the ingest's auth, tenants and TLS. It runs with
// the ingest off too: a Collector writes the tables, Grafana reads them.
func (s *Service) startPyroscopeAPI(ctx context.Context) error {
	api := pyroscopeapi.New(s.cfg.PyroscopeAPI, s.cfg.Ingest.Receiver, s.conn, s.cfg.Schema, s.log)
	if err := api.Start(ctx); err != nil {
		return fmt.Errorf("start the pyroscope api: %w", err)
	}
	s.pyroscope = api
	return nil
}

// PyroscopeAPIAddress is the bound address of the Pyroscope-compatible
// query API ("" when it is off).
func (s *Service) PyroscopeAPIAddress() string {
	if s.pyroscope == nil {
		return ""
	}
	return s.pyroscope.Addr()
}

// applyTenants creates or updates the configured tenant users on an
// external server (the embedded engine took them at start).
func (s *Service) applyTenants(ctx context.Context) error {
	if len(s.cfg.Tenants) == 0 || s.engine != nil {
		return nil
	}
	if !s.Migration.AccessControl {
		return fmt.Errorf("tenant users are configured, but the roles and row policies were not applied (%s): "+
			"migrate as a user with access management (docs/security.md)", s.Migration.AccessControlSkipped)
	}
	for _, t := range s.cfg.Tenants {
		password := ""
		if !t.Existing {
			var err error
			if password, err = t.password(); err != nil {
				return fmt.Errorf("tenant user %s: %w", t.User, err)
			}
		}
		ddl, err := tenantUserDDL(s.cfg.Schema, t.User, t.Tenant, password, t.Existing)
		if err == nil {
			err = execAll(ctx, s.conn, ddl)
		}
		if err != nil {
			return fmt.Errorf("tenant user %s: %w", t.User, err)
		}
	}
	s.log.Info("tenant users applied", "count", len(s.cfg.Tenants))
	return nil
}

// startIngest starts the OTLP endpoints and, when enabled, self-profiling,
// both traced when self-tracing is on.
func (s *Service) startIngest(ctx context.Context) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var native writer.NativeInserter
	if s.chConfig.Protocol == chclient.ProtocolHTTP {
		inserter, err := chclient.NewNativeInserter(s.chConfig)
		if err != nil {
			return fmt.Errorf("start ingest: %w", err)
		}
		s.native, native = inserter, inserter
	}
	var sink pipeline.UnsymbolizedSink
	if sym := s.cfg.Symbols; sym.Debuginfod.Enabled() || sym.Host.Enabled {
		var symNative symbols.NativeInserter
		if s.native != nil {
			symNative = s.native
		}
		store := symbols.NewStore(s.cfg.Schema, s.conn, symNative)
		f, err := debuginfod.NewWithHost(sym.Debuginfod, sym.Host, store, debuginfod.NewTableKnown(s.conn, s.cfg.Schema), s.log, reg)
		if err != nil {
			return fmt.Errorf("start ingest: %w", err)
		}
		s.fetcher, sink = f, f
		s.log.Info("fetching symbols of unsymbolized executables", "host", sym.Host.Enabled, "debug_dirs", sym.Host.DebugDirs, "search_dirs", sym.Host.SearchDirs,
			"debuginfod_servers", len(sym.Debuginfod.URLs), "concurrency", sym.Debuginfod.Concurrency)
	}
	ingestConn, ingestNative, err := s.ingestWriter(native)
	if err != nil {
		return fmt.Errorf("start ingest: %w", err)
	}
	in, err := ingest.NewWithSink(s.cfg.Ingest, s.cfg.Schema, ingestConn, ingestNative, sink, s.log, reg, s.tracingOptions()...)
	if err != nil {
		return fmt.Errorf("start ingest: %w", err)
	}
	if up := s.cfg.Symbols.Upload; up.Enabled {
		var symNative symbols.NativeInserter
		if s.native != nil {
			symNative = s.native
		}
		in.HandleSymbols(symbols.NewStore(s.cfg.Schema, s.conn, symNative), receiver.SymbolsOptions{MaxBytes: up.MaxBytes, Timeout: up.Timeout})
	}
	// The ingester's lifetime is not ctx's: dskit stops a service when the
	// context it was started with ends, and Stop orders the shutdown.
	if err := services.StartAndAwaitRunning(context.WithoutCancel(ctx), in); err != nil {
		return fmt.Errorf("start ingest: %w", err)
	}
	s.ingester = in
	if s.cfg.SelfProfile.Enabled {
		scheme := "http"
		if s.cfg.Ingest.Receiver.TLS.Enabled() {
			scheme = "https"
		}
		p := selfprofile.New(s.cfg.SelfProfile, scheme+"://"+in.HTTPAddress(), selfAuthorization(s.cfg.Ingest.Receiver.Auth), s.log,
			s.tracingOptions()...)
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.stopProfiling, s.profilingDone = cancel, make(chan struct{})
		go func() {
			defer close(s.profilingDone)
			p.Run(pctx)
		}()
	}
	return nil
}

// ingestWriter returns the connection and inserter the ingest writes
// samples with: as the configured writer user (a user that may only
// insert, docs/security.md), or the service's own.
func (s *Service) ingestWriter(native writer.NativeInserter) (clickhouse.Conn, writer.NativeInserter, error) {
	w := s.cfg.Writer
	if w.Username == "" {
		return s.conn, native, nil
	}
	password, err := w.password()
	if err != nil {
		return nil, nil, err
	}
	cfg := s.chConfig
	cfg.Username, cfg.Password = w.Username, password
	conn, err := chclient.Open(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("connect as the writer user %s: %w", w.Username, err)
	}
	s.writerConn = conn
	if cfg.Protocol != chclient.ProtocolHTTP {
		return conn, nil, nil
	}
	s.writerNative, err = chclient.NewNativeInserter(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("connect as the writer user %s: %w", w.Username, err)
	}
	return conn, s.writerNative, nil
}

// selfAuthorization is the header self-profiling sends when auth is on:
// the first configured credential.
func selfAuthorization(a receiver.AuthConfig) string {
	switch {
	case !a.Enabled:
		return ""
	case len(a.Tokens) > 0:
		return "Bearer " + a.Tokens[0].Token.Value()
	case len(a.Basic) > 0:
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(a.Basic[0].Username+":"+a.Basic[0].Password.Value()))
	}
	return ""
}

func (s *Service) startEmbedded(ctx context.Context) error {
	embedded := s.cfg.Embedded
	embedded.TenantTables = s.cfg.Schema.TenantTables() // row policies for tenant users
	embedded.Users = slices.Clone(embedded.Users)
	for _, t := range s.cfg.Tenants {
		password, err := t.password()
		if err != nil {
			return fmt.Errorf("tenant user %s: %w", t.User, err)
		}
		embedded.Users = append(embedded.Users, chembed.User{
			Name: t.User, Role: chembed.RoleTenant, Tenant: t.Tenant, PasswordSHA256Hex: chembed.PasswordSHA256(password),
		})
	}
	engine, err := chembed.Open(embedded, s.log)
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
	ingestDone := make(chan error, 1)
	if s.ingester != nil {
		in := s.ingester
		go func() { ingestDone <- in.AwaitTerminated(context.WithoutCancel(ctx)) }()
	}
	var apiDone <-chan error
	if s.pyroscope != nil {
		apiDone = s.pyroscope.Err()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-s.serveErr:
		return err
	case err := <-ingestDone:
		return fmt.Errorf("ingest stopped: %w", err)
	case err := <-apiDone:
		return fmt.Errorf("pyroscope api stopped: %w", err)
	}
}

// Stop shuts down in reverse order of start: self-profiling, then the
// ingest endpoints (requests in flight finish and the writer drains), then
// the debuginfod fetcher (fetches in flight are cancelled), then
// self-tracing (every span that ended is written), then the ClickHouse
// connection and the embedded engine.
func (s *Service) Stop(ctx context.Context) error {
	var err error
	if s.pyroscope != nil {
		err = errors.Join(err, s.pyroscope.Stop(ctx))
	}
	if s.stopProfiling != nil {
		s.stopProfiling()
		<-s.profilingDone
	}
	if s.ingester != nil {
		err = errors.Join(err, services.StopAndAwaitTerminated(ctx, s.ingester))
	}
	if s.fetcher != nil {
		err = errors.Join(err, s.fetcher.Close(ctx))
	}
	err = errors.Join(err, s.stopTracing(ctx))
	if s.native != nil {
		s.native.Close()
	}
	if s.writerNative != nil {
		s.writerNative.Close()
	}
	if s.writerConn != nil {
		err = errors.Join(err, s.writerConn.Close())
	}
	if s.conn != nil {
		err = errors.Join(err, s.conn.Close())
	}
	s.stopEmbedded(ctx)
	return err
}

// IngestAddresses are the bound OTLP/gRPC and OTLP/HTTP addresses ("" when
// ingest is off).
func (s *Service) IngestAddresses() (grpcAddr, httpAddr string) {
	if s.ingester == nil {
		return "", ""
	}
	return s.ingester.GRPCAddress(), s.ingester.HTTPAddress()
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
	if s.ingester != nil {
		p("  OTLP profiles: gRPC %s, HTTP http://%s/v1development/profiles (metrics on http://%s/metrics)",
			s.ingester.GRPCAddress(), s.ingester.HTTPAddress(), s.ingester.HTTPAddress())
		if cfg.Symbols.Upload.Enabled {
			p("  Symbols:  PUT http://%s/v1/symbols/<build id>, or flamehouse symbols upload FILE... (docs/symbols.md)", s.ingester.HTTPAddress())
		}
		if cfg.SelfProfile.Enabled {
			p("  Demo data: this process profiles itself every %s as service %q.", cfg.SelfProfile.Interval, cfg.SelfProfile.ServiceName)
		}
		if s.tracer != nil && cfg.Schema.Cluster == "" {
			p("  Demo traces: its own work is traced into %s.%s, CPU samples linked to their spans.", cfg.Schema.Database, cfg.SelfProfile.TracesTable)
		}
		if s.tracer != nil && cfg.SelfProfile.TracesOTLPEndpoint != "" {
			p("  Demo traces over OTLP: %s (spans carry pyroscope.profile.id for Grafana's trace to profiles).",
				selftrace.OTLPTracesURL(cfg.SelfProfile.TracesOTLPEndpoint))
		}
	}
	if s.pyroscope != nil {
		p("  Pyroscope API: http://%s  (Grafana's Pyroscope datasource, docs/pyroscope-api.md)", s.pyroscope.Addr())
	}
	if s.ingester == nil && !cfg.Ingest.Enabled {
		p("  OTLP ingest is off (ingest.enabled=false): no OTLP endpoints, no self-profiling or self-tracing.")
		p("  Send profiles through an OpenTelemetry Collector with the flamehouse exporter (docs/topologies.md).")
	}
	p("Stop with Ctrl-C (the engine shuts down cleanly; data stays in the data directory).")
}

// stopTimeout bounds shutdown when the caller gives no deadline.
const stopTimeout = 45 * time.Second

// errUsage marks command-line mistakes (exit code 2).
var errUsage = errors.New("usage")
