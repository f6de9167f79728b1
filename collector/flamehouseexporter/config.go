package flamehouseexporter

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

// Config is the exporter's configuration. The keys the contrib clickhouse
// exporter also has (endpoint, username, password, database, tls, ttl,
// cluster_name, create_schema, timeout, retry_on_failure, sending_queue)
// mean what they mean there.
type Config struct {
	// TimeoutSettings is "timeout": how long one push may take, the wait
	// for its rows' commit included. Default 30s.
	TimeoutSettings exporterhelper.TimeoutConfig `mapstructure:",squash"`
	// BackOffConfig is "retry_on_failure": retries of pushes that failed
	// with a retryable error (ClickHouse unavailable, the write queue full).
	// Invalid profiles are permanent errors, never retried.
	BackOffConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`
	// QueueSettings is "sending_queue". With "storage" set to a storage
	// extension (file_storage) the queue is persistent: requests survive a
	// crash, and each request's samples are then written under a
	// deduplication token derived from its content, so that a request
	// replayed after its rows were committed is not stored twice.
	QueueSettings configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`

	// Endpoint is the ClickHouse server: http://host:8123 or
	// https://host:8443 (ClickHouse's HTTP interface; the embedded engine of
	// `flamehouse run` has only this one), or tcp://host:9000 (also
	// clickhouse://host:9000; the native protocol, TLS with ?secure=true).
	// Without a port: 8123, 8443, 9000, 9440 with TLS. Required.
	Endpoint string `mapstructure:"endpoint"`
	// Username and Password authenticate. Username defaults to "default".
	Username string              `mapstructure:"username"`
	Password configopaque.String `mapstructure:"password"`
	// Database holds Flamehouse's tables. Default "otel" (next to the
	// contrib exporter's otel_traces and otel_logs).
	Database string `mapstructure:"database"`
	// TablePrefix starts every table name. Default "otel_" (otel_profile_samples, ...).
	TablePrefix string `mapstructure:"table_prefix"`
	// Tenant is stored on every row (Flamehouse's TenantId). Default "".
	Tenant string `mapstructure:"tenant"`
	// TLS configures TLS for https:// and tcp://...?secure=true endpoints:
	// ca_file, cert_file, key_file (or ca_pem, cert_pem, key_pem) and
	// insecure_skip_verify.
	TLS configtls.ClientConfig `mapstructure:"tls"`
	// CreateSchema applies Flamehouse's schema migrations (and retention
	// changes) when the exporter starts. Default true.
	CreateSchema bool `mapstructure:"create_schema"`
	// TTL, when not zero, is the retention of every table: raw samples and
	// both rollups (the contrib exporter's meaning). 0: Retention applies.
	TTL time.Duration `mapstructure:"ttl"`
	// Retention is the retention per table when TTL is 0 (samples,
	// minute, hour, symbols: Flamehouse's schema.Retention, the same keys
	// as the ingest service's schema.retention); a 0 keeps data forever.
	// Applied by create_schema.
	Retention schema.Retention `mapstructure:"retention"`
	// ClusterName, when set, creates the tables ON CLUSTER as
	// Replicated*MergeTree tables with Distributed tables over them, and
	// writes through the Distributed tables.
	ClusterName string `mapstructure:"cluster_name"`
	// ReplicationPath and ReplicaName are the replicated tables' Keeper
	// path and replica name in cluster mode.
	ReplicationPath string `mapstructure:"replication_path"`
	ReplicaName     string `mapstructure:"replica_name"`
	// CPUSamplesAsTime stores samples/count CPU profiles (the eBPF
	// profiler's) as CPU time, count × period. Default true.
	CPUSamplesAsTime bool `mapstructure:"cpu_samples_as_time"`
	// MaxOpenConns bounds the connections to ClickHouse. Default 8.
	MaxOpenConns int `mapstructure:"max_open_conns"`
	// Writer combines the rows of concurrent pushes into few inserts:
	// Flamehouse's writer.Config, the same keys and defaults as the ingest
	// service's ingest.writer section (flush_interval, max_batch_samples,
	// min_batch_samples, quiet_interval, max_concurrent_writes,
	// max_queued_samples, retry_initial, retry_max, symbol_cache_size).
	Writer writer.Config `mapstructure:"writer"`
}

// DefaultTimeout bounds a push by default: rows wait up to the writer's
// flush interval, then for their insert.
const DefaultTimeout = 30 * time.Second

// createDefaultConfig is the defaults, in one place: Flamehouse's schema,
// client and writer defaults, exporterhelper's queue and retries.
func createDefaultConfig() *Config {
	tables := schema.DefaultConfig()
	ch := chclient.DefaultConfig()
	return &Config{
		TimeoutSettings:  exporterhelper.TimeoutConfig{Timeout: DefaultTimeout},
		BackOffConfig:    configretry.NewDefaultBackOffConfig(),
		QueueSettings:    configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		Username:         ch.Username,
		Database:         tables.Database,
		TablePrefix:      tables.TablePrefix,
		CreateSchema:     true,
		Retention:        tables.Retention,
		ReplicationPath:  tables.ReplicationPath,
		ReplicaName:      tables.ReplicaName,
		CPUSamplesAsTime: true,
		MaxOpenConns:     ch.MaxOpenConns,
		Writer:           writer.DefaultConfig(),
	}
}

// Validate reports every problem at once (the Collector calls it when it
// loads the configuration). Names, retention and writer settings are
// checked by the packages that use them (schema, chclient, writer).
func (cfg *Config) Validate() error {
	var err error
	if _, e := cfg.clickhouse(); e != nil {
		err = errors.Join(err, e)
	}
	if e := unsupportedTLS(cfg.TLS); e != nil {
		err = errors.Join(err, e)
	}
	tables := cfg.tables()
	if e := tables.Validate(); e != nil {
		err = errors.Join(err, e)
	}
	if e := cfg.Writer.Validate(); e != nil {
		err = errors.Join(err, fmt.Errorf("writer: %w", e))
	}
	if cfg.TTL < 0 {
		err = errors.Join(err, errors.New("ttl must not be negative"))
	}
	if cfg.TimeoutSettings.Timeout <= 0 {
		err = errors.Join(err, errors.New("timeout must be positive: a push waits for its rows' commit"))
	}
	return err
}

// errEndpoint explains the endpoint forms.
var errEndpoint = errors.New("endpoint must be http://host[:port], https://host[:port] or tcp://host[:port] (clickhouse://, ?secure=true for TLS)")

// clickhouse is the connection configuration the endpoint, credentials,
// TLS and pool settings describe.
func (cfg *Config) clickhouse() (chclient.Config, error) {
	ch := chclient.DefaultConfig()
	ch.Username, ch.Password, ch.MaxOpenConns = cfg.Username, secret.String(string(cfg.Password)), cfg.MaxOpenConns
	if ch.Username == "" {
		ch.Username = chclient.DefaultConfig().Username
	}
	if cfg.Endpoint == "" {
		return ch, errors.New("endpoint is required, e.g. http://127.0.0.1:8123")
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return ch, fmt.Errorf("%w: %w", errEndpoint, err)
	}
	var port string
	switch strings.ToLower(u.Scheme) {
	case "http":
		ch.Protocol, port = chclient.ProtocolHTTP, "8123"
	case "https":
		ch.Protocol, ch.Secure, port = chclient.ProtocolHTTP, true, "8443"
	case "tcp", "clickhouse":
		ch.Protocol, port = chclient.ProtocolNative, "9000"
		if s := u.Query().Get("secure"); s == "true" || s == "1" {
			ch.Secure, port = true, "9440"
		}
	default:
		return ch, fmt.Errorf("%w, got scheme %q", errEndpoint, u.Scheme)
	}
	if u.Hostname() == "" {
		return ch, fmt.Errorf("%w: no host in %q", errEndpoint, cfg.Endpoint)
	}
	if strings.Trim(u.Path, "/") != "" {
		return ch, fmt.Errorf("%w: a path (%q) is not supported", errEndpoint, u.Path)
	}
	if u.Port() != "" {
		port = u.Port()
	}
	ch.Address = net.JoinHostPort(u.Hostname(), port)
	t := cfg.TLS
	ch.TLSSkipVerify = t.InsecureSkipVerify
	ch.CAFile, ch.CertFile, ch.KeyFile = t.CAFile, t.CertFile, t.KeyFile
	ch.CAPEM, ch.ClientCertPEM, ch.ClientKeyPEM = string(t.CAPem), string(t.CertPem), secret.String(string(t.KeyPem))
	return ch, ch.Validate()
}

// tables is where the tables are and how long they keep rows.
func (cfg *Config) tables() schema.Config {
	t := schema.DefaultConfig()
	t.Database, t.TablePrefix, t.Cluster = cfg.Database, cfg.TablePrefix, cfg.ClusterName
	t.ReplicationPath, t.ReplicaName = cfg.ReplicationPath, cfg.ReplicaName
	t.Retention = cfg.Retention
	if cfg.TTL > 0 {
		t.Retention.Samples, t.Retention.Minute, t.Retention.Hour = cfg.TTL, cfg.TTL, cfg.TTL
	}
	return t
}

// persistent reports whether the sending queue keeps requests in a
// storage extension across restarts.
func (cfg *Config) persistent() bool {
	return cfg.QueueSettings.HasValue() && cfg.QueueSettings.Get().StorageID != nil
}

// unsupportedTLS names the tls keys this exporter does not apply (the
// client's TLS is Flamehouse's: CAs, a client certificate, verification).
func unsupportedTLS(t configtls.ClientConfig) error {
	var err error
	for _, opt := range []struct {
		key string
		set bool
	}{
		{"insecure", t.Insecure},
		{"server_name_override", t.ServerName != ""},
		{"cipher_suites", len(t.CipherSuites) > 0},
		{"curve_preferences", len(t.CurvePreferences) > 0},
		{"include_insecure_cipher_suites", t.IncludeInsecureCipherSuites},
		{"include_system_ca_certs_pool", t.IncludeSystemCACertsPool},
		{"min_version", t.MinVersion != ""},
		{"max_version", t.MaxVersion != ""},
		{"reload_interval", t.ReloadInterval != 0},
		{"tpm", t.TPMConfig.Enabled},
	} {
		if opt.set {
			err = errors.Join(err, fmt.Errorf("tls.%s is not supported: use ca_file/ca_pem, cert_file/cert_pem, key_file/key_pem and insecure_skip_verify "+
				"(TLS is on for https:// and tcp://...?secure=true endpoints)", opt.key))
		}
	}
	return err
}
