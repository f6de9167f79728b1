// Package otelcoltest runs a real OpenTelemetry Collector in integration
// tests. The Collectors are small Go modules of their own under collectors/
// (collectors/otelcol: OTLP receiver with OTLP exporters;
// collectors/otelcol-clickhouse: OTLP receiver with the contrib ClickHouse
// exporter), so their dependencies stay out of Flamehouse's go.mod. They are built from the module proxy.
//
// Build compiles a Collector once per test binary and keeps the binary in a
// cache directory keyed by a hash of the module's files and the Go version,
// so later test binaries and runs skip even the link step. Start writes a
// configuration with an OTLP receiver on free loopback ports, starts the
// Collector, waits until both OTLP endpoints accept connections and stops
// it when the test ends:
//
//	bin := otelcoltest.Build(t, otelcoltest.ClickHouseCollector)
//	col := otelcoltest.Start(t, bin, otelcoltest.Config{
//		Exporters: map[string]any{"clickhouse": otelcoltest.ClickHouseExporter(chtest.Get(t), db)},
//		Pipelines: map[string]otelcoltest.Pipeline{"traces": {Exporters: []string{"clickhouse"}}},
//	})
//	// send OTLP to col.GRPCEndpoint or http://col.HTTPEndpoint
package otelcoltest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flamehouse/flamehouse/internal/harness"
)

// Collector modules under collectors/.
const (
	// OTLPCollector is collectors/otelcol: OTLP receiver, otlp_grpc and otlp_http exporters.
	OTLPCollector = "otelcol"
	// ClickHouseCollector is collectors/otelcol-clickhouse: OTLP receiver and the
	// contrib ClickHouse exporter ("clickhouse").
	ClickHouseCollector = "otelcol-clickhouse"
)

// buildTimeout bounds a Collector build: a cold one (empty Go build cache)
// takes about five minutes on a 2-core machine.
const buildTimeout = 15 * time.Minute

// ReceiverName is the name of the OTLP receiver that Start configures.
const ReceiverName = "otlp"

// CacheEnv names an environment variable with the directory that keeps
// built Collectors. By default it is flamehouse/otelcol under
// os.UserCacheDir (the system temporary directory when there is none).
const CacheEnv = "FLAMEHOUSE_OTELCOL_CACHE"

// ModuleDir returns the directory of a Collector module under collectors/.
func ModuleDir(module string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "collectors", module)
}

type buildResult struct {
	once sync.Once
	bin  string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*buildResult{}
)

// Build returns the path of the Collector binary built from the module
// collectors/<module> (OTLPCollector or ClickHouseCollector). The first call in a
// test binary builds it, or finds it in the cache; later calls return the
// same path. It fails the test when the build fails.
func Build(tb testing.TB, module string) string {
	tb.Helper()
	return BuildDir(tb, ModuleDir(module))
}

// BuildDir is Build for a module in any directory.
func BuildDir(tb testing.TB, dir string) string {
	tb.Helper()
	dir, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatalf("otelcoltest: %v", err)
	}
	return buildOnce(tb, dir, filepath.Base(dir), func() (string, bool, error) { return build(dir) })
}

// buildOnce runs build the first time a test binary asks for key and
// returns its binary ever after, failing the test when it failed.
func buildOnce(tb testing.TB, key, name string, build func() (bin string, cached bool, err error)) string {
	tb.Helper()
	buildsMu.Lock()
	r, ok := builds[key]
	if !ok {
		r = &buildResult{}
		builds[key] = r
	}
	buildsMu.Unlock()
	r.once.Do(func() {
		start := time.Now()
		var cached bool
		r.bin, cached, r.err = build()
		if r.err == nil {
			how := "built"
			if cached {
				how = "found in the cache"
			}
			tb.Logf("otelcoltest: Collector %s %s in %s: %s", name, how, time.Since(start).Round(time.Millisecond), r.bin)
		}
	})
	if r.err != nil {
		tb.Fatalf("otelcoltest: build the Collector %s: %v", name, r.err)
	}
	return r.bin
}

// BuildModule is Build outside a test: the path of the Collector binary of
// collectors/<module>, built or found in the cache, and whether it was cached.
func BuildModule(module string) (bin string, cached bool, err error) {
	return build(ModuleDir(module))
}

// build compiles the module in dir into the cache directory, under a name
// that carries the hash of its sources, unless that file is already there.
func build(dir string) (bin string, cached bool, err error) {
	goVersion, err := goVersion()
	if err != nil {
		return "", false, err
	}
	sum, err := sourceHash(dir, goVersion)
	if err != nil {
		return "", false, err
	}
	return cachedBuild(filepath.Base(dir), sum, func(ctx context.Context, out string) error {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".") //nolint:gosec // G204: builds a module of this repository
		cmd.Dir = dir
		if output, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %w\n%s", err, output)
		}
		return nil
	})
}

// goVersion is the Go toolchain's version, part of every cache key.
func goVersion() (string, error) {
	out, err := exec.CommandContext(context.Background(), "go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// staleBuild is how long a cached Collector binary of other sources stays
// unused before a build of the same module removes it.
const staleBuild = 24 * time.Hour

// cachedBuild returns the cache's binary name-sum, building it with
// compile (which writes the binary to out) when it is not there yet.
func cachedBuild(name, sum string, compile func(ctx context.Context, out string) error) (bin string, cached bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cacheDir, err := cacheDir()
	if err != nil {
		return "", false, err
	}
	bin = filepath.Join(cacheDir, name+"-"+sum)
	// Test binaries run in parallel (go test -p); one Collector build at a
	// time keeps a cold build from competing with another for the CPUs, and
	// a binary that waited finds the Collector it needs already built.
	unlock, err := lockDir(cacheDir)
	if err != nil {
		return "", false, fmt.Errorf("lock %s: %w", cacheDir, err)
	}
	defer unlock()
	if fi, statErr := os.Stat(bin); statErr == nil && fi.Mode().IsRegular() && fi.Mode()&0o100 != 0 {
		now := time.Now()
		_ = os.Chtimes(bin, now, now) // in use: not stale for another checkout's pruning
		return bin, true, nil
	}
	// Build next to the final name, then rename, so that nothing ever runs
	// a half-written file.
	tmp, err := os.MkdirTemp(cacheDir, ".build-")
	if err != nil {
		return "", false, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	out := filepath.Join(tmp, name)
	if err := compile(ctx, out); err != nil {
		return "", false, err
	}
	if err := os.Rename(out, bin); err != nil {
		return "", false, err
	}
	// Binaries of older sources of the same module are of no further use
	// once no checkout runs them: those not used for a day go (the pattern
	// does not match other modules: "otelcol-" + 16 hex digits never is
	// "otelcol-clickhouse-" + 16 hex digits). Another checkout's tests may
	// be running a binary built from its own sources right now.
	old, _ := filepath.Glob(filepath.Join(cacheDir, name+"-"+strings.Repeat("[0-9a-f]", len(sum))))
	for _, o := range old {
		if info, err := os.Stat(o); err == nil && o != bin && time.Since(info.ModTime()) > staleBuild {
			_ = os.Remove(o)
		}
	}
	return bin, false, nil
}

// lockDir locks the cache directory (harness.LockDir).
var lockDir = harness.LockDir

// sourceHash hashes the Go version and every regular file of the module
// directory (go.mod, go.sum and the sources), which pin everything the
// build reads: dependencies come from the module cache by go.sum.
func sourceHash(dir, goVersion string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\n%s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name())) //nolint:gosec // G304: the module's own files
		if err != nil {
			return "", err
		}
		_, _ = fmt.Fprintf(h, "%s %d\n", e.Name(), len(data))
		_, _ = h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func cacheDir() (string, error) {
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		if base, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(base, "flamehouse", "otelcol")
		} else {
			dir = filepath.Join(os.TempDir(), "flamehouse-otelcol-cache")
		}
	}
	return dir, os.MkdirAll(dir, 0o750) //nolint:gosec // G703: a cache directory the user chose
}

// Config is what Start adds to the OTLP receiver: components and pipelines.
type Config struct {
	// Extensions, Processors and Exporters are component configurations by
	// component ID ("file_storage", "clickhouse", "otlp_grpc/a", ...),
	// written as YAML; every extension is enabled in the service.
	Extensions map[string]any
	Processors map[string]any
	Exporters  map[string]any
	// Pipelines by ID ("traces", "logs", "profiles", "profiles/x", ...).
	Pipelines map[string]Pipeline
	// FeatureGates are passed with --feature-gates. Start adds
	// +service.profilesSupport when a pipeline carries profiles.
	FeatureGates []string
	// LogLevel is the Collector's own log level; "" is info.
	LogLevel string
	// ReadyTimeout bounds the wait for the OTLP endpoints; 0 is one minute.
	ReadyTimeout time.Duration
	// HTTPEndpoint is the OTLP/HTTP receiver's host:port; "" is a free
	// loopback port. For senders configured before the Collector starts.
	HTTPEndpoint string
}

// Pipeline lists a pipeline's components; Receivers defaults to the OTLP
// receiver.
type Pipeline struct {
	Receivers  []string `yaml:"receivers"`
	Processors []string `yaml:"processors,omitempty"`
	Exporters  []string `yaml:"exporters"`
}

// Collector is a running Collector.
type Collector struct {
	// GRPCEndpoint is the OTLP/gRPC receiver's host:port.
	GRPCEndpoint string
	// HTTPEndpoint is the OTLP/HTTP receiver's host:port (paths /v1/traces,
	// /v1/logs, /v1development/profiles, ...).
	HTTPEndpoint string
	// ConfigFile is the generated configuration.
	ConfigFile string

	cmd      *exec.Cmd
	logs     *lockedBuffer
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// Render returns the YAML configuration of a Collector whose OTLP receiver
// listens on grpcEndpoint and httpEndpoint.
func (c *Config) Render(grpcEndpoint, httpEndpoint string) ([]byte, error) {
	pipelines := make(map[string]Pipeline, len(c.Pipelines))
	for id, p := range c.Pipelines {
		if len(p.Receivers) == 0 {
			p.Receivers = []string{ReceiverName}
		}
		pipelines[id] = p
	}
	logLevel := c.LogLevel
	if logLevel == "" {
		logLevel = "info"
	}
	doc := map[string]any{
		"receivers": map[string]any{ReceiverName: map[string]any{"protocols": map[string]any{
			"grpc": map[string]any{"endpoint": grpcEndpoint},
			"http": map[string]any{"endpoint": httpEndpoint},
		}}},
		"exporters": c.Exporters,
		"service": map[string]any{
			"telemetry": map[string]any{
				"metrics": map[string]any{"level": "none"},
				"logs":    map[string]any{"level": logLevel},
			},
			"pipelines": pipelines,
		},
	}
	if len(c.Processors) > 0 {
		doc["processors"] = c.Processors
	}
	if len(c.Extensions) > 0 {
		doc["extensions"] = c.Extensions
		ids := make([]string, 0, len(c.Extensions))
		for id := range c.Extensions {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		doc["service"].(map[string]any)["extensions"] = ids // built above
	}
	return yaml.Marshal(doc)
}

// featureGates returns the --feature-gates list.
func (c *Config) featureGates() []string {
	gates := slices.Clone(c.FeatureGates)
	for id := range c.Pipelines {
		if (id == "profiles" || strings.HasPrefix(id, "profiles/")) && !slices.Contains(gates, "+service.profilesSupport") {
			gates = append(gates, "+service.profilesSupport")
		}
	}
	return gates
}

// Start starts the Collector binary with cfg and an OTLP receiver on free
// loopback ports, and returns once both OTLP endpoints accept connections
// (the Collector starts receivers after exporters, so exporters have
// started too: the ClickHouse exporter has created its tables). It fails
// the test, with the Collector's log, when the Collector exits or is not
// ready in time. The Collector is stopped when the test ends.
func Start(tb testing.TB, bin string, cfg Config) *Collector {
	tb.Helper()
	return harness.Start(tb, "otelcoltest", func(dir string) (*Collector, error) { return Launch(bin, cfg, dir) })
}

// Launch is Start outside a test: it writes the configuration into dir,
// starts the Collector and waits until it is ready. The caller stops it.
func Launch(bin string, cfg Config, dir string) (*Collector, error) {
	grpcAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	httpAddr := cfg.HTTPEndpoint
	if httpAddr == "" {
		if httpAddr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	c := &Collector{GRPCEndpoint: grpcAddr, HTTPEndpoint: httpAddr, logs: &lockedBuffer{}, exited: make(chan struct{})}
	config, err := cfg.Render(c.GRPCEndpoint, c.HTTPEndpoint)
	if err != nil {
		return nil, fmt.Errorf("render the configuration: %w", err)
	}
	c.ConfigFile = filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(c.ConfigFile, config, 0o600); err != nil {
		return nil, err
	}
	args := []string{"--config", c.ConfigFile}
	if gates := cfg.featureGates(); len(gates) > 0 {
		args = append(args, "--feature-gates="+strings.Join(gates, ","))
	}
	// The Collector's lifetime is Stop's business, not a context's.
	c.cmd = exec.CommandContext(context.Background(), bin, args...) //nolint:gosec // G204: the caller's own Collector binary
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()

	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	for !listening(c.GRPCEndpoint) || !listening(c.HTTPEndpoint) {
		select {
		case <-c.exited:
			return nil, fmt.Errorf("the Collector exited before it was ready (%s); configuration:\n%s\nlog:\n%s", exitStatus(c.waitErr), config, c.logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.Stop()
			return nil, fmt.Errorf("the Collector is not listening on %s and %s after %s; log:\n%s", c.GRPCEndpoint, c.HTTPEndpoint, timeout, c.logs)
		}
	}
	return c, nil
}

// Logs returns what the Collector has written to stdout and stderr so far.
func (c *Collector) Logs() string { return c.logs.String() }

// Stop interrupts the Collector, as Ctrl-C does, and waits up to 30 s for
// it to drain and exit; then it is killed. It returns an error when the
// Collector did not exit cleanly. Stopping twice returns the first result.
func (c *Collector) Stop() error {
	c.stopOnce.Do(func() {
		select {
		case <-c.exited:
			c.stopErr = fmt.Errorf("the Collector had exited on its own (%s); log:\n%s", exitStatus(c.waitErr), c.logs)
			return
		default:
		}
		if err := c.cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
			c.stopErr = fmt.Errorf("interrupt the Collector: %w", err)
		}
		select {
		case <-c.exited:
			if c.waitErr != nil && c.stopErr == nil {
				c.stopErr = fmt.Errorf("the Collector did not exit cleanly: %w; log:\n%s", c.waitErr, c.logs)
			}
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
			c.stopErr = fmt.Errorf("the Collector did not stop within 30 s of an interrupt and was killed; log:\n%s", c.logs)
		}
	})
	return c.stopErr
}

// Kill ends the Collector with SIGKILL, as a crash or the OOM killer
// does: nothing is drained or flushed. A later Stop returns nil.
func (c *Collector) Kill() error {
	var err error
	c.stopOnce.Do(func() {
		if kerr := c.cmd.Process.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) {
			err = fmt.Errorf("kill the Collector: %w", kerr)
		}
		<-c.exited
	})
	return err
}

// exitStatus describes how the Collector exited.
var exitStatus = harness.ExitStatus

var freeAddr = harness.FreeAddr

func listening(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// lockedBuffer collects the Collector's output for failure messages.
type lockedBuffer = harness.Output
