package chembed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Engine is the embedded ClickHouse engine of this process: the loaded
// library and a pool of connections to one data directory.
type Engine struct {
	cfg  Config
	lib  *Library
	log  *slog.Logger
	info serverInfo
	pool *pool
	// allMarker is the access marker of unrestricted statements when the
	// engine enforces tenant row policies ("" when it does not; access.go).
	allMarker string
	// tableOnlyFunctions are the table functions that are not also scalar
	// functions, lower-cased: what a tenant user may not call.
	tableOnlyFunctions map[string]bool
	// ConnectDuration is how long the first chdb_connect took (engine start).
	ConnectDuration time.Duration
	closeOnce       sync.Once
}

var (
	engineMu   sync.Mutex
	engineOpen bool
)

// errEngineOpen is returned when a second engine is opened in one process.
var errEngineOpen = errors.New("an embedded engine is already open in this process " +
	"(libchdb supports one data directory per process)")

// Open loads libchdb, starts the engine on cfg.DataDir and opens
// cfg.Connections connections. Zero-valued limits take their defaults.
func Open(cfg Config, log *slog.Logger) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("embedded clickhouse config: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	engineMu.Lock()
	defer engineMu.Unlock()
	if engineOpen {
		return nil, errEngineOpen
	}
	libPath, err := FindLibrary(cfg.LibraryPath)
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data directory %q: %w", cfg.DataDir, err)
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	cfg.DataDir = dataDir
	if err := prepareSpoolDir(dataDir); err != nil {
		return nil, err
	}

	signals := snapshotSignals()
	lib, err := LoadLibrary(libPath)
	if err != nil {
		return nil, err
	}
	if lib.PackageVersion != "" && lib.PackageVersion != PinnedVersion {
		log.Warn("libchdb version differs from the pinned one", "found", lib.PackageVersion, "pinned", PinnedVersion, "path", libPath)
	}
	var args []string
	allMarker := ""
	if len(cfg.TenantTables) > 0 {
		allMarker = newAllMarker()
		conf, err := writeAccessConfig(filepath.Join(dataDir, "access"), cfg.TenantTables, allMarker)
		if err != nil {
			return nil, err
		}
		args = append(args, "--config-file="+conf)
	}
	if cfg.MaxServerMemoryBytes > 0 {
		args = append(args, "--max_server_memory_usage="+strconv.FormatInt(cfg.MaxServerMemoryBytes, 10))
	}
	start := time.Now()
	conns := make([]*Conn, 0, cfg.Connections)
	for range cfg.Connections {
		c, err := lib.openConn(dataDir, args...)
		if err != nil {
			for _, open := range conns {
				open.Close()
			}
			signals.restoreGoSignals()
			return nil, err
		}
		conns = append(conns, c)
	}
	e := &Engine{cfg: cfg, lib: lib, log: log, allMarker: allMarker, ConnectDuration: time.Since(start)}
	if restored := signals.restoreGoSignals(); len(restored) > 0 {
		log.Debug("restored Go signal handlers replaced by libchdb", "signals", restored)
	}
	e.pool, err = newPool(conns)
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return nil, err
	}
	if err := e.loadInfo(); err != nil {
		e.pool.close()
		return nil, err
	}
	engineOpen = true
	log.Info("embedded clickhouse started", "version", e.info.version, "data_dir", dataDir,
		"library", libPath, "load", lib.LoadDuration, "connect", e.ConnectDuration, "connections", cfg.Connections)
	return e, nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	setDefault := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	if c.ListenAddress == "" {
		c.ListenAddress = d.ListenAddress
	}
	if c.User == "" {
		c.User = d.User
	}
	if c.Connections == 0 {
		c.Connections = d.Connections
	}
	if c.QueueTimeout == 0 {
		c.QueueTimeout = d.QueueTimeout
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = d.ShutdownTimeout
	}
	c.UsersFile = c.UsersFilePath()
	setDefault(&c.MaxQueryBytes, d.MaxQueryBytes)
	setDefault(&c.MaxBodyBytes, d.MaxBodyBytes)
	setDefault(&c.MaxSpoolBytes, d.MaxSpoolBytes)
	setDefault(&c.MaxResultBytes, d.MaxResultBytes)
	return c
}

// loadInfo reads what the hello handshake reports, and the settings
// libchdb itself changed at start, which session resets restore.
func (e *Engine) loadInfo() error {
	s, err := e.pool.acquire(context.Background(), e.cfg.QueueTimeout)
	if err != nil {
		return err
	}
	defer e.pool.release(s)
	var out string
	_, err = s.conn.Query("SELECT displayName(), version(), timezone()", "TabSeparated", nil, func(b []byte, _ Stats) error {
		out = string(b)
		return nil
	})
	if err != nil {
		return fmt.Errorf("query engine version: %w", err)
	}
	fields := strings.Split(strings.TrimSpace(out), "\t")
	if len(fields) != 3 {
		return fmt.Errorf("unexpected engine version answer %q", out)
	}
	e.info = serverInfo{displayName: fields[0], version: fields[1], timezone: fields[2]}
	e.tableOnlyFunctions = map[string]bool{}
	_, err = s.conn.Query("SELECT lower(name) FROM system.table_functions WHERE name NOT IN (SELECT name FROM system.functions)",
		"TabSeparatedRaw", nil, func(b []byte, _ Stats) error {
			for name := range strings.FieldsSeq(string(b)) {
				e.tableOnlyFunctions[name] = true
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("list table functions: %w", err)
	}
	for _, sess := range e.pool.all {
		// clickhouse-local accepts a bare expression as a query
		// (implicit_select); a real server does not, so neither do we.
		_, _ = sess.conn.Query("SET implicit_select = 0", "Null", nil, nil)
		if e.allMarker != "" {
			// Unrestricted unless a request says otherwise: the baseline
			// that every session reset returns to.
			if _, err := sess.conn.Query("SET "+markerSetting+" = "+quoteString(e.allMarker), "Null", nil, nil); err != nil {
				return fmt.Errorf("set the access marker: %w", err)
			}
		}
		if err := sess.loadBaseline(); err != nil {
			return err
		}
	}
	return nil
}

// Version is the engine's ClickHouse version, e.g. 26.5.1.1.
func (e *Engine) Version() string { return e.info.version }

// Library is the loaded libchdb.
func (e *Engine) Library() *Library { return e.lib }

// Config is the effective configuration (defaults applied).
func (e *Engine) Config() Config { return e.cfg }

// Exec runs one trusted statement (no guard) on a pooled connection, for
// the server's own use such as schema migrations at start.
func (e *Engine) Exec(ctx context.Context, sql string) error {
	s, err := e.pool.acquire(ctx, e.cfg.QueueTimeout)
	if err != nil {
		return err
	}
	defer e.pool.release(s)
	_, err = s.conn.Query(sql, "Null", nil, nil)
	return err
}

// Close closes every connection exactly once, which shuts the engine down.
// It waits for connections in use to be returned. A new engine may be
// opened in the same process afterwards.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		e.pool.close()
		engineMu.Lock()
		engineOpen = false
		engineMu.Unlock()
		e.log.Info("embedded clickhouse stopped")
	})
}
