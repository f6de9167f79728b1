// Package selfprofile profiles the running flamehouse process with the Go
// runtime's profilers and sends the profiles, converted to OTLP, to
// Flamehouse's own OTLP endpoint: a fresh installation has real flame
// graphs of a real service right away, taken through the real ingest path.
package selfprofile

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/google/pprof/profile"

	"github.com/flamehouse/flamehouse/pkg/otlphttp"
	"github.com/flamehouse/flamehouse/pkg/pprofconv"
)

// Config configures self-profiling.
type Config struct {
	// Enabled sends profiles of this process to its own ingest endpoint.
	Enabled bool `yaml:"enabled"`
	// Interval is the time between two rounds. Default 15s.
	Interval time.Duration `yaml:"interval"`
	// CPUDuration is how long each CPU profile runs. Default 10s.
	CPUDuration time.Duration `yaml:"cpu_duration"`
	// ServiceName is the service.name of the profiles. Default "flamehouse".
	ServiceName string `yaml:"service_name"`
}

// DefaultConfig returns the defaults (enabled).
func DefaultConfig() Config {
	return Config{Enabled: true, Interval: 15 * time.Second, CPUDuration: 10 * time.Second, ServiceName: "flamehouse"}
}

// RegisterFlags binds the config to flags with the given prefix.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.BoolVar(&c.Enabled, prefix+"enabled", c.Enabled, "profile this process and ingest the profiles (demo data)")
	f.DurationVar(&c.Interval, prefix+"interval", c.Interval, "time between self-profiling rounds")
	f.DurationVar(&c.CPUDuration, prefix+"cpu-duration", c.CPUDuration, "length of each CPU profile (shorter than the interval)")
}

// Profiler sends the process's CPU and heap profiles.
type Profiler struct {
	cfg    Config
	client *otlphttp.Client
	log    *slog.Logger
	attrs  []string
}

// New returns a profiler that sends to an OTLP/HTTP base URL.
func New(cfg Config, baseURL, authorization string, log *slog.Logger) *Profiler {
	host, _ := os.Hostname()
	pid := strconv.Itoa(os.Getpid())
	return &Profiler{
		cfg: cfg, client: otlphttp.New(baseURL, authorization), log: log,
		attrs: []string{
			"service.name", cfg.ServiceName, "service.instance.id", host + "/" + pid, "host.name", host,
			"process.pid", pid, "process.runtime.name", "go", "telemetry.sdk.language", "go",
		},
	}
}

// Run profiles until ctx ends.
func (p *Profiler) Run(ctx context.Context) {
	ticker := time.NewTicker(p.cfg.Interval)
	defer ticker.Stop()
	for {
		p.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// round takes a CPU profile and a heap profile and sends both.
func (p *Profiler) round(ctx context.Context) {
	cpu, err := p.cpuProfile(ctx)
	if err != nil {
		p.log.Debug("self-profiling: no CPU profile this round", "error", err)
	} else {
		p.send(ctx, cpu)
	}
	var heap bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&heap, 0); err == nil {
		p.send(ctx, heap.Bytes())
	}
}

func (p *Profiler) cpuProfile(ctx context.Context) ([]byte, error) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, fmt.Errorf("start CPU profile: %w", err) // another CPU profile is running
	}
	select {
	case <-ctx.Done():
	case <-time.After(p.cfg.CPUDuration):
	}
	pprof.StopCPUProfile()
	return buf.Bytes(), nil
}

func (p *Profiler) send(ctx context.Context, raw []byte) {
	prof, err := profile.ParseData(raw)
	if err != nil {
		p.log.Warn("self-profiling: cannot parse own profile", "error", err)
		return
	}
	req, err := pprofconv.Convert(prof, pprofconv.Options{ResourceAttributes: p.attrs, ScopeName: "flamehouse/selfprofile"})
	if err != nil {
		p.log.Debug("self-profiling: nothing to send", "error", err)
		return
	}
	sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := p.client.Export(sendCtx, req); err != nil {
		p.log.Warn("self-profiling: export failed", "error", err)
	}
}
