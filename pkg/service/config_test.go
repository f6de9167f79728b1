package service

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/selftrace/tracetable"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flamehouse.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestParseConfigFileThenFlags(t *testing.T) {
	path := writeFile(t, `
log_level: debug
embedded:
  data_dir: /var/lib/flamehouse
  listen_address: 0.0.0.0:8123
  password: from-file
  max_execution_time: 90s
schema:
  database: profiles
  retention:
    samples: 72h
`)
	cfg, _, err := ParseConfig("run", []string{"-config.file", path, "-schema.database", "flags_win", "-embedded.connections", "4"})
	require.NoError(t, err)
	require.Equal(t, "debug", cfg.LogLevel)
	require.Equal(t, "/var/lib/flamehouse", cfg.Embedded.DataDir)
	require.Equal(t, "from-file", cfg.Embedded.Password.Value())
	require.Equal(t, 90*time.Second, cfg.Embedded.MaxExecutionTime)
	require.Equal(t, 4, cfg.Embedded.Connections)
	require.Equal(t, "flags_win", cfg.Schema.Database)
	require.Equal(t, 72*time.Hour, cfg.Schema.Retention.Samples)
	require.Equal(t, 30*24*time.Hour, cfg.Schema.Retention.Minute, "unset keys keep their defaults")
	require.NoError(t, cfg.Validate())
}

func TestParseConfigRejectsUnknownKeys(t *testing.T) {
	path := writeFile(t, "schema:\n  databse: typo\n")
	_, _, err := ParseConfig("run", []string{"-config.file=" + path})
	require.ErrorContains(t, err, "databse")
}

func TestParseConfigEmptyFile(t *testing.T) {
	cfg, _, err := ParseConfig("run", []string{"-config.file", writeFile(t, "")})
	require.NoError(t, err)
	require.Equal(t, DefaultConfig(), cfg)
}

func TestValidateReportsEveryProblemWithItsSection(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LogLevel = "loud"
	cfg.ClickHouse.Protocol = "carrier-pigeon"
	cfg.Embedded.ListenAddress = "0.0.0.0:8123"
	cfg.Schema.Database = "bad-name"
	cfg.SelfProfile.TracesTable = "otel.traces"
	cfg.SelfProfile.Interval = 0
	err := cfg.Validate()
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"log_level", "clickhouse: protocol", "embedded: listen address", "schema: database",
		"selfprofile: interval", "selfprofile: traces_table must be a plain identifier",
	} {
		require.Contains(t, msg, want)
	}

	external := DefaultConfig()
	external.ClickHouse.Address = "ch.example:9000"
	external.Embedded.DataDir = "" // not used with an external server
	require.NoError(t, external.Validate())
}

func TestSelfTracingFlags(t *testing.T) {
	cfg, _, err := ParseConfig("run", nil)
	require.NoError(t, err)
	require.True(t, cfg.SelfProfile.TracesEnabled(), "self-tracing is on with the demo by default")
	require.Equal(t, "otel_traces", cfg.SelfProfile.TracesTable)
	cfg, _, err = ParseConfig("run", []string{"-selfprofile.traces=false", "-selfprofile.traces-table", "spans"})
	require.NoError(t, err)
	require.False(t, cfg.SelfProfile.TracesEnabled())
	require.Equal(t, "spans", cfg.SelfProfile.TracesTable)
	cfg, _, err = ParseConfig("run", []string{"-selfprofile.enabled=false"})
	require.NoError(t, err)
	require.False(t, cfg.SelfProfile.TracesEnabled(), "no self-tracing without self-profiling")
	defaults := DefaultConfig()
	require.Equal(t, tracetable.Table{Database: "otel", Name: "otel_traces", TTL: 7 * 24 * time.Hour}, defaults.tracesTable(),
		"spans are kept as long as raw samples")
}

func TestSecretsAreNotPrinted(t *testing.T) {
	cfg, _, err := ParseConfig("run", []string{"-embedded.password", "hunter2", "-clickhouse.password", "hunter3"})
	require.NoError(t, err)
	shown := fmtConfig(cfg)
	require.NotContains(t, shown, "hunter2")
	require.NotContains(t, shown, "hunter3")
}

func TestSymbolsDebuginfodConfig(t *testing.T) {
	defaults := DefaultConfig()
	require.False(t, defaults.Symbols.Debuginfod.Enabled(), "off without urls")
	require.Equal(t, 4, defaults.Symbols.Debuginfod.Concurrency)
	require.Equal(t, time.Hour, defaults.Symbols.Debuginfod.NegativeCacheTTL)

	path := writeFile(t, `
symbols:
  debuginfod:
    urls: [https://debuginfod.debian.net, "https://user:hunter4@mirror.example/debuginfod"]
    concurrency: 2
    negative_cache_ttl: 30m
`)
	cfg, _, err := ParseConfig("run", []string{"-config.file", path, "-symbols.debuginfod.timeout", "10s"})
	require.NoError(t, err)
	d := cfg.Symbols.Debuginfod
	require.Equal(t, []string{"https://debuginfod.debian.net", "https://user:hunter4@mirror.example/debuginfod"}, []string(d.URLs))
	require.Equal(t, 2, d.Concurrency)
	require.Equal(t, 30*time.Minute, d.NegativeCacheTTL)
	require.Equal(t, 10*time.Second, d.Timeout)
	require.Equal(t, defaults.Symbols.Debuginfod.Retries, d.Retries, "unset keys keep their defaults")
	require.NoError(t, cfg.Validate())
	require.NotContains(t, fmtConfig(cfg), "hunter4", "the shown configuration redacts passwords")

	cfg, _, err = ParseConfig("run", []string{"-symbols.debuginfod.urls", "http://127.0.0.1:8002, ftp://nope", "-symbols.debuginfod.concurrency", "0"})
	require.NoError(t, err)
	require.Equal(t, []string{"http://127.0.0.1:8002", "ftp://nope"}, []string(cfg.Symbols.Debuginfod.URLs))
	err = cfg.Validate()
	require.ErrorContains(t, err, "symbols: debuginfod: urls[1]: ftp://nope: the scheme must be http or https")
	require.ErrorContains(t, err, "symbols: debuginfod: concurrency must be at least 1")
}
