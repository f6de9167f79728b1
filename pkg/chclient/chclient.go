// Package chclient opens clickhouse-go connections to an external
// ClickHouse server (native or HTTP, with TLS and credentials) from a
// configuration that the service and the migrate command share.
package chclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/pkg/secret"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// Protocols a connection may use.
const (
	ProtocolNative = "native"
	ProtocolHTTP   = "http"
)

// Protocols are the protocols a connection may use.
var Protocols = []string{ProtocolNative, ProtocolHTTP}

// Defaults of a connection (DefaultConfig), which the Grafana datasource
// shares.
const (
	DefaultProtocol     = ProtocolNative
	DefaultUsername     = "default"
	DefaultDialTimeout  = 10 * time.Second
	DefaultMaxOpenConns = 8
)

// Config describes how to reach a ClickHouse server.
type Config struct {
	// Address is host:port. Native defaults to port 9000 (9440 with TLS),
	// HTTP to 8123 (8443 with TLS).
	Address string `yaml:"address"`
	// Protocol is "native" (default) or "http".
	Protocol string `yaml:"protocol"`
	// Username and Password authenticate; Username defaults to "default".
	Username string        `yaml:"username"`
	Password secret.String `yaml:"password"`
	// Secure enables TLS.
	Secure bool `yaml:"secure"`
	// TLSSkipVerify disables server certificate checks (testing only).
	TLSSkipVerify bool `yaml:"tls_skip_verify"`
	// CAFile is a PEM file of CAs that sign the server certificate.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate for mutual TLS.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// CAPEM, ClientCertPEM and ClientKeyPEM are the same as PEM text (the
	// Grafana datasource's secure settings); they add to the files.
	CAPEM         string        `yaml:"-"`
	ClientCertPEM string        `yaml:"-"`
	ClientKeyPEM  secret.String `yaml:"-"`
	// HTTPPath is the URL path of the HTTP interface behind a proxy.
	HTTPPath string `yaml:"-"`
	// HTTPHeaders are sent with every HTTP request.
	HTTPHeaders map[string]string `yaml:"-"`
	// Settings are ClickHouse settings sent with every query.
	Settings map[string]any `yaml:"-"`
	// DialTimeout bounds connecting. Default 10s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// MaxOpenConns bounds concurrent connections. Default 8.
	MaxOpenConns int `yaml:"max_open_conns"`
}

// DefaultConfig returns the defaults: native protocol, user "default".
func DefaultConfig() Config {
	return Config{Protocol: DefaultProtocol, Username: DefaultUsername, DialTimeout: DefaultDialTimeout, MaxOpenConns: DefaultMaxOpenConns}
}

// RegisterFlags binds the config to flags with the given prefix.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.StringVar(&c.Address, prefix+"address", c.Address, "host:port of an external ClickHouse server (empty: the embedded engine)")
	f.StringVar(&c.Protocol, prefix+"protocol", c.Protocol, "protocol of the external server: native or http")
	f.StringVar(&c.Username, prefix+"username", c.Username, "ClickHouse user")
	f.Func(prefix+"password", "ClickHouse password", func(v string) error { c.Password = secret.String(v); return nil })
	f.BoolVar(&c.Secure, prefix+"secure", c.Secure, "connect with TLS")
	f.BoolVar(&c.TLSSkipVerify, prefix+"tls-skip-verify", c.TLSSkipVerify, "do not verify the server certificate")
	f.StringVar(&c.CAFile, prefix+"ca-file", c.CAFile, "PEM file of CAs for the server certificate")
}

var (
	errProtocol = errors.New(`protocol must be "native" or "http"`)
	errKeyPair  = errors.New("cert_file and key_file must be set together")
	errPool     = errors.New("max_open_conns must be positive and dial_timeout not negative")
)

// Validate reports every problem at once. An empty Address is valid: it
// means "no external server".
func (c *Config) Validate() error {
	var err error
	if !slices.Contains(Protocols, c.Protocol) {
		err = errors.Join(err, fmt.Errorf("%w, got %q", errProtocol, c.Protocol))
	}
	if c.Address != "" {
		if _, _, splitErr := net.SplitHostPort(c.Address); splitErr != nil {
			err = errors.Join(err, fmt.Errorf("address %q: %w", c.Address, splitErr))
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		err = errors.Join(err, errKeyPair)
	}
	if c.MaxOpenConns <= 0 || c.DialTimeout < 0 {
		err = errors.Join(err, errPool)
	}
	return err
}

// Options builds clickhouse-go options for the config.
func (c *Config) Options() (*clickhouse.Options, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts := &clickhouse.Options{
		Addr:         []string{c.Address},
		Auth:         clickhouse.Auth{Username: c.Username, Password: c.Password.Value()},
		DialTimeout:  c.DialTimeout,
		MaxOpenConns: c.MaxOpenConns,
		MaxIdleConns: c.MaxOpenConns,
		Protocol:     clickhouse.Native,
	}
	if c.Protocol == ProtocolHTTP {
		opts.Protocol = clickhouse.HTTP
		opts.HttpUrlPath = c.HTTPPath
		opts.HttpHeaders = c.HTTPHeaders
		// Connections outlive the goroutine that opens them: their read and
		// write loops must not inherit its pprof labels (see selftrace).
		opts.TransportFunc = func(t *http.Transport) (http.RoundTripper, error) {
			t.DialContext = selftrace.DialWithoutLabels(t.DialContext)
			return t, nil
		}
	}
	if len(c.Settings) > 0 {
		opts.Settings = clickhouse.Settings(c.Settings)
	}
	if c.Secure {
		tlsCfg, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts.TLS = tlsCfg
	}
	return opts, nil
}

func (c *Config) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{InsecureSkipVerify: c.TLSSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // opt-in for testing
	if host, _, err := net.SplitHostPort(c.Address); err == nil {
		cfg.ServerName = host
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %q holds no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if c.CAPEM != "" {
		if cfg.RootCAs == nil {
			cfg.RootCAs = x509.NewCertPool()
		}
		if !cfg.RootCAs.AppendCertsFromPEM([]byte(c.CAPEM)) {
			return nil, errors.New("the CA certificate is not PEM")
		}
	}
	if c.ClientCertPEM != "" || c.ClientKeyPEM.Value() != "" {
		pair, err := tls.X509KeyPair([]byte(c.ClientCertPEM), []byte(c.ClientKeyPEM.Value()))
		if err != nil {
			return nil, fmt.Errorf("client certificate and key: %w", err)
		}
		cfg.Certificates = append(cfg.Certificates, pair)
	}
	return cfg, nil
}

// Open connects to the server and checks the connection with a ping.
func Open(c Config) (clickhouse.Conn, error) {
	opts, err := c.Options()
	if err != nil {
		return nil, fmt.Errorf("clickhouse config: %w", err)
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", c.Address, err)
	}
	return conn, nil
}
