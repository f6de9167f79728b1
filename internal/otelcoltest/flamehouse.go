package otelcoltest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/flamehouse/flamehouse/internal/chtest"
)

// FlamehouseExporter returns the configuration of the flamehouse exporter
// (the distribution's component "flamehouse") that writes into database on
// the tests' server: the same endpoint and credentials as
// ClickHouseExporter, Flamehouse's migrations at start (create_schema), a
// 100 ms writer flush, and no sending queue and no retries, so that an
// export returns once its rows are committed and fails with the write's
// error. The caller may change the returned map before passing it to Start.
func FlamehouseExporter(srv *chtest.Server, database string) map[string]any {
	ch := ClickHouseExporter(srv, database)
	cfg := map[string]any{
		"endpoint":         ch["endpoint"],
		"username":         ch["username"],
		"password":         ch["password"],
		"database":         database,
		"create_schema":    true,
		"timeout":          ch["timeout"],
		"writer":           map[string]any{"flush_interval": "100ms"},
		"sending_queue":    map[string]any{"enabled": false},
		"retry_on_failure": map[string]any{"enabled": false},
	}
	if tls, ok := ch["tls"]; ok {
		cfg["tls"] = tls
	}
	return cfg
}

// ExampleConfigFile is the distribution's example configuration.
func ExampleConfigFile() string { return filepath.Join(CollectorDir(), "otelcol-flamehouse.yaml") }

// LoadConfig reads a Collector configuration file into a Config: its
// extensions, processors, exporters and pipelines. Receivers are left to
// Start, which adds the OTLP receiver on free ports (pipelines keep their
// receiver names, so they must use "otlp"); values such as
// ${env:NAME:-default} stay as they are for the Collector to resolve.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path) //nolint:gosec // G304: a configuration the test names
	if err != nil {
		return Config{}, err
	}
	var doc struct {
		Extensions map[string]any `yaml:"extensions"`
		Processors map[string]any `yaml:"processors"`
		Exporters  map[string]any `yaml:"exporters"`
		Service    struct {
			Pipelines map[string]Pipeline `yaml:"pipelines"`
		} `yaml:"service"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Service.Pipelines) == 0 {
		return Config{}, errors.New(path + ": no pipelines")
	}
	for id, p := range doc.Service.Pipelines {
		for _, r := range p.Receivers {
			if r != ReceiverName {
				return Config{}, fmt.Errorf("%s: pipeline %s uses receiver %q; only %q is started", path, id, r, ReceiverName)
			}
		}
	}
	return Config{Extensions: doc.Extensions, Processors: doc.Processors, Exporters: doc.Exporters, Pipelines: doc.Service.Pipelines}, nil
}
