package pyroscopeapi

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/flamehouse/flamehouse/pkg/query"
)

// Config is the Pyroscope-compatible query API of the ingest service.
type Config struct {
	// Enabled serves the API. Default true: a Grafana user adds a Pyroscope
	// datasource at Pyroscope's own address and port and expects it to
	// answer, as the OTLP endpoints answer on the OTLP ports.
	Enabled bool `yaml:"enabled"`
	// ListenAddress is host:port of the API (connect, gRPC, gRPC-Web and
	// the /pyroscope/render endpoints). Default 127.0.0.1:4040, Pyroscope's
	// port, on loopback like the ingest's other listeners.
	ListenAddress string `yaml:"listen_address"`
	// DefaultMaxNodes bounds flame graphs of requests without max_nodes.
	// Default 8192, Pyroscope's (querier.max-flamegraph-nodes-default), so
	// that the same request truncates alike.
	DefaultMaxNodes int `yaml:"default_max_nodes"`
	// QueryTimeout bounds one request's ClickHouse queries
	// (max_execution_time) and the request. Default 60s.
	QueryTimeout time.Duration `yaml:"query_timeout"`
}

// Defaults, in one place.
const (
	DefaultListenAddress   = "127.0.0.1:4040"
	DefaultMaxNodes        = 8192
	DefaultQueryTimeout    = 60 * time.Second
	maxQueryTimeoutSeconds = 24 * 3600
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Enabled: true, ListenAddress: DefaultListenAddress, DefaultMaxNodes: DefaultMaxNodes, QueryTimeout: DefaultQueryTimeout}
}

// RegisterFlags binds the config to flags with the given prefix.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.BoolVar(&c.Enabled, prefix+"enabled", c.Enabled, "serve the Pyroscope-compatible query API (docs/pyroscope-api.md)")
	f.StringVar(&c.ListenAddress, prefix+"listen-address", c.ListenAddress, "host:port of the Pyroscope-compatible query API")
	f.IntVar(&c.DefaultMaxNodes, prefix+"default-max-nodes", c.DefaultMaxNodes, "flame graph nodes of requests without max_nodes")
	f.DurationVar(&c.QueryTimeout, prefix+"query-timeout", c.QueryTimeout, "time limit of one request's queries")
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	var err error
	if _, _, e := net.SplitHostPort(c.ListenAddress); e != nil {
		err = errors.Join(err, fmt.Errorf("listen_address %q: %w", c.ListenAddress, e))
	}
	if c.DefaultMaxNodes < 1 || c.DefaultMaxNodes > query.MaxMaxNodes {
		err = errors.Join(err, fmt.Errorf("default_max_nodes %d must be between 1 and %d", c.DefaultMaxNodes, query.MaxMaxNodes))
	}
	if c.QueryTimeout < time.Second || c.QueryTimeout > maxQueryTimeoutSeconds*time.Second {
		err = errors.Join(err, fmt.Errorf("query_timeout %s must be between 1s and 24h", c.QueryTimeout))
	}
	return err
}
