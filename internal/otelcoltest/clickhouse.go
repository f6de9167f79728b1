package otelcoltest

import (
	"net/url"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/flamehouse/flamehouse/internal/chtest"
)

// ClickHouseExporter returns the configuration of the contrib ClickHouse
// exporter (component "clickhouse" of ClickHouseCollector) that writes into
// database on the tests' server, with the exporter's default table names
// (otel_traces, otel_logs, otel_profiles, otel_metrics_*), its own DDL
// (create_schema) and the settings the embedded engine needs:
//
//   - endpoint http://host:port, ClickHouse's HTTP interface (tcp:// for an
//     external server reached over the native protocol);
//   - compress: none, because the exporter's default lz4 is ClickHouse's
//     native block compression, which the embedded server refuses (501);
//   - async_insert: false, so that rows are in the table when an insert
//     returns;
//   - no sending queue and no retries, so that an export fails with the
//     insert's error instead of logging it and retrying in the background.
//
// The caller may change the returned map before passing it to Start.
func ClickHouseExporter(srv *chtest.Server, database string) map[string]any {
	scheme := "http"
	if srv.Options.Protocol != clickhouse.HTTP {
		scheme = "tcp"
	}
	endpoint := url.URL{Scheme: scheme, Host: srv.Addr}
	if srv.Options.TLS != nil {
		if scheme == "http" {
			endpoint.Scheme = "https"
		} else {
			endpoint.RawQuery = "secure=true"
		}
	}
	cfg := ClickHouseExporterAt(endpoint.String(), srv.Options.Auth.Username, srv.Options.Auth.Password, database)
	if srv.Options.TLS != nil && srv.Options.TLS.InsecureSkipVerify {
		cfg["tls"] = map[string]any{"insecure_skip_verify": true}
	}
	return cfg
}

// ClickHouseExporterAt is ClickHouseExporter for a server named by its
// endpoint URL (http://host:port, tcp://host:port) and credentials.
func ClickHouseExporterAt(endpoint, username, password, database string) map[string]any {
	return map[string]any{
		"endpoint":         endpoint,
		"username":         username,
		"password":         password,
		"database":         database,
		"create_schema":    true,
		"compress":         "none",
		"async_insert":     false,
		"timeout":          (30 * time.Second).String(),
		"sending_queue":    map[string]any{"enabled": false},
		"retry_on_failure": map[string]any{"enabled": false},
	}
}
