// Package receiver is the OTLP profiles endpoint of the ingest service:
// gRPC ProfilesService/Export on 4317 and HTTP POST /v1development/profiles
// on 4318 (protobuf and JSON, gzip), on a grafana/dskit server with TLS,
// authentication mapped to tenants, per-tenant limits, Prometheus metrics,
// /ready and Go pprof endpoints. It validates and converts each request
// (package convert), hands the rows to the writer and answers only once
// they are committed, with OTLP partial_success for rejected profiles.
package receiver

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/flamehouse/flamehouse/pkg/secret"
)

// Config configures the OTLP endpoints.
type Config struct {
	// GRPCListenAddress is host:port for OTLP/gRPC. Default 127.0.0.1:4317.
	GRPCListenAddress string `yaml:"grpc_listen_address"`
	// HTTPListenAddress is host:port for OTLP/HTTP, /metrics, /ready and
	// /debug/pprof. Default 127.0.0.1:4318.
	HTTPListenAddress string `yaml:"http_listen_address"`
	// TLS, when its cert and key files are set, serves both listeners over TLS.
	TLS TLSConfig `yaml:"tls"`
	// MaxRequestBytes caps a request, compressed and decompressed. Default
	// 64 MiB, as the OTLP specification recommends.
	MaxRequestBytes int `yaml:"max_request_bytes"`
	// RequestTimeout bounds how long a request waits for its rows to be
	// committed before it is answered as retryable. Default 30s.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// Auth maps credentials to tenants. Off by default.
	Auth AuthConfig `yaml:"auth"`
	// DefaultTenant is stored on rows when auth is off. Default "" (none).
	DefaultTenant string `yaml:"default_tenant"`
	// Limits apply per tenant; Tenants overrides them for named tenants.
	Limits  Limits            `yaml:"limits"`
	Tenants map[string]Limits `yaml:"tenant_limits"`
	// CPUSamplesAsTime stores samples/count CPU profiles as CPU time
	// (count × period, process_cpu:cpu:nanoseconds:cpu:nanoseconds). Default true.
	CPUSamplesAsTime bool `yaml:"cpu_samples_as_time"`
	// MaxConcurrentConversions bounds the requests decoded and converted at
	// once; the others wait holding their payload. Conversion is CPU work:
	// more at once than CPUs only holds more temporaries. Default 0: one
	// per CPU (GOMAXPROCS); -1: not bounded.
	MaxConcurrentConversions int `yaml:"max_concurrent_conversions"`
	// ShutdownTimeout bounds the drain of in-flight requests. Default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// TLSConfig names the server certificate and, for mutual TLS, the CAs
// that sign client certificates.
type TLSConfig struct {
	CertFile     string `yaml:"cert_file"`
	KeyFile      string `yaml:"key_file"`
	ClientCAFile string `yaml:"client_ca_file"`
}

// Enabled reports whether TLS is configured.
func (t TLSConfig) Enabled() bool { return t.CertFile != "" }

// AuthConfig lists the credentials the endpoints accept.
type AuthConfig struct {
	// Enabled rejects requests without valid credentials.
	Enabled bool `yaml:"enabled"`
	// Tokens are accepted as "Authorization: Bearer <token>".
	Tokens []TokenCredential `yaml:"tokens"`
	// Basic are accepted as HTTP basic auth (gRPC: the authorization metadata).
	Basic []BasicCredential `yaml:"basic"`
}

// TokenCredential maps a bearer token to a tenant.
type TokenCredential struct {
	Token  secret.String `yaml:"token"`
	Tenant string        `yaml:"tenant"`
}

// BasicCredential maps a user and password to a tenant.
type BasicCredential struct {
	Username string        `yaml:"username"`
	Password secret.String `yaml:"password"`
	Tenant   string        `yaml:"tenant"`
}

// Limits bound what one tenant may send.
type Limits struct {
	// RequestBytes caps one request (at most MaxRequestBytes). 0: MaxRequestBytes.
	RequestBytes int `yaml:"request_bytes"`
	// SamplesPerSecond caps profiling events per second. 0: unlimited.
	SamplesPerSecond float64 `yaml:"samples_per_second"`
	// Burst is how many events may arrive at once above the rate. 0: 10 s worth.
	Burst int `yaml:"burst"`
}

// Defaults, in one place.
const (
	DefaultGRPCListenAddress = "127.0.0.1:4317"
	DefaultHTTPListenAddress = "127.0.0.1:4318"
	DefaultMaxRequestBytes   = 64 << 20
	DefaultRequestTimeout    = 30 * time.Second
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		GRPCListenAddress: DefaultGRPCListenAddress, HTTPListenAddress: DefaultHTTPListenAddress,
		MaxRequestBytes: DefaultMaxRequestBytes, RequestTimeout: DefaultRequestTimeout,
		CPUSamplesAsTime: true, ShutdownTimeout: 30 * time.Second,
	}
}

// RegisterFlags binds the config to flags with the given prefix.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.StringVar(&c.GRPCListenAddress, prefix+"grpc-listen-address", c.GRPCListenAddress, "host:port of OTLP/gRPC")
	f.StringVar(&c.HTTPListenAddress, prefix+"http-listen-address", c.HTTPListenAddress, "host:port of OTLP/HTTP, /metrics and /ready")
	f.StringVar(&c.TLS.CertFile, prefix+"tls.cert-file", c.TLS.CertFile, "TLS certificate of both listeners")
	f.StringVar(&c.TLS.KeyFile, prefix+"tls.key-file", c.TLS.KeyFile, "TLS key of both listeners")
	f.StringVar(&c.TLS.ClientCAFile, prefix+"tls.client-ca-file", c.TLS.ClientCAFile, "CAs of client certificates (mutual TLS)")
	f.IntVar(&c.MaxRequestBytes, prefix+"max-request-bytes", c.MaxRequestBytes, "largest request, compressed or not")
	f.StringVar(&c.DefaultTenant, prefix+"default-tenant", c.DefaultTenant, "tenant stored on rows when auth is off")
	f.BoolVar(&c.Auth.Enabled, prefix+"auth.enabled", c.Auth.Enabled, "require credentials (configured in the YAML file)")
	f.Float64Var(&c.Limits.SamplesPerSecond, prefix+"limits.samples-per-second", c.Limits.SamplesPerSecond, "events per second per tenant (0: unlimited)")
	f.BoolVar(&c.CPUSamplesAsTime, prefix+"cpu-samples-as-time", c.CPUSamplesAsTime, "store CPU sample counts as CPU time (count × period)")
	f.IntVar(&c.MaxConcurrentConversions, prefix+"max-concurrent-conversions", c.MaxConcurrentConversions, "requests decoded and converted at once (0: one per CPU, -1: not bounded)")
}

// conversions is the bound on concurrent conversions that
// MaxConcurrentConversions asks for (0: not bounded, as pipeline.Options
// says).
func (c *Config) conversions() int {
	switch {
	case c.MaxConcurrentConversions == 0:
		return runtime.GOMAXPROCS(0)
	case c.MaxConcurrentConversions < 0:
		return 0
	}
	return c.MaxConcurrentConversions
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var err error
	if c.MaxConcurrentConversions < -1 {
		err = errors.Join(err, errors.New("max_concurrent_conversions must be -1 (not bounded), 0 (one per CPU) or positive"))
	}
	for name, addr := range map[string]string{"grpc_listen_address": c.GRPCListenAddress, "http_listen_address": c.HTTPListenAddress} {
		if _, _, e := net.SplitHostPort(addr); e != nil {
			err = errors.Join(err, fmt.Errorf("%s %q: %w", name, addr, e))
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		err = errors.Join(err, errors.New("tls cert_file and key_file must be set together"))
	}
	if c.TLS.ClientCAFile != "" && !c.TLS.Enabled() {
		err = errors.Join(err, errors.New("tls client_ca_file needs cert_file and key_file"))
	}
	if c.MaxRequestBytes <= 0 || c.RequestTimeout <= 0 || c.ShutdownTimeout <= 0 {
		err = errors.Join(err, errors.New("max_request_bytes, request_timeout and shutdown_timeout must be positive"))
	}
	if c.Auth.Enabled && len(c.Auth.Tokens) == 0 && len(c.Auth.Basic) == 0 {
		err = errors.Join(err, errors.New("auth is enabled but no tokens or basic credentials are configured"))
	}
	for i, t := range c.Auth.Tokens {
		if t.Token == "" {
			err = errors.Join(err, fmt.Errorf("auth tokens[%d]: token is empty", i))
		}
	}
	for i, b := range c.Auth.Basic {
		if b.Username == "" || b.Password == "" {
			err = errors.Join(err, fmt.Errorf("auth basic[%d]: username and password are required", i))
		}
	}
	for name, l := range c.allLimits() {
		if l.RequestBytes < 0 || l.SamplesPerSecond < 0 || l.Burst < 0 {
			err = errors.Join(err, fmt.Errorf("limits %s: values must not be negative", name))
		}
	}
	return err
}

func (c *Config) allLimits() map[string]Limits {
	out := map[string]Limits{"default": c.Limits}
	for t, l := range c.Tenants {
		out["tenant "+t] = l
	}
	return out
}

// limitsFor returns a tenant's limits.
func (c *Config) limitsFor(tenant string) Limits {
	if l, ok := c.Tenants[tenant]; ok {
		return l
	}
	return c.Limits
}
