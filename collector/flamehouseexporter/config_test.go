package flamehouseexporter

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/flamehouse/flamehouse/collector/flamehouseexporter/internal/metadata"
	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

// loadConfig reads one named instance of testdata/config.yaml into the
// default configuration, as the Collector does.
func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	id := component.NewID(metadata.Type)
	if name != "" {
		id = component.NewIDWithName(metadata.Type, name)
	}
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := createDefaultConfig()
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestLoadConfig(t *testing.T) {
	full := createDefaultConfig()
	full.Endpoint = "tcp://ch.internal?secure=true"
	full.Username, full.Password = "collector", "s3cr3t"
	full.Database, full.TablePrefix, full.Tenant = "profiles", "fh_", "team-a"
	full.CreateSchema = false
	full.TTL = 72 * time.Hour
	full.Retention = schema.Retention{Samples: 24 * time.Hour, Minute: 48 * time.Hour, Hour: 96 * time.Hour, Symbols: 2160 * time.Hour}
	full.ClusterName = "prod"
	full.CPUSamplesAsTime = false
	full.MaxOpenConns = 4
	full.TLS = configtls.ClientConfig{
		Config: configtls.Config{
			CAFile: "/etc/flamehouse/ca.pem", CertFile: "/etc/flamehouse/client.pem", KeyFile: "/etc/flamehouse/client.key",
		},
		InsecureSkipVerify: true,
	}
	full.Writer = writer.Config{
		FlushInterval: 200 * time.Millisecond, MaxBatchSamples: 50_000, MinBatchSamples: 10_000, QuietInterval: 20 * time.Millisecond, MaxConcurrentWrites: 3,
		MaxQueuedSamples: 500_000, RetryInitial: 50 * time.Millisecond, RetryMax: 2 * time.Second, SymbolCacheSize: 100_000,
		MinuteRollupMinMerge: 3,
	}
	full.TimeoutSettings = exporterhelper.TimeoutConfig{Timeout: 10 * time.Second}
	full.BackOffConfig = configretry.BackOffConfig{
		Enabled: true, InitialInterval: time.Second, MaxInterval: 10 * time.Second, MaxElapsedTime: time.Minute,
		Multiplier: full.BackOffConfig.Multiplier, RandomizationFactor: full.BackOffConfig.RandomizationFactor,
	}
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.NumConsumers, queue.QueueSize = 4, 500
	storage := component.MustNewID("file_storage")
	queue.StorageID = &storage
	full.QueueSettings = configoptional.Some(queue)

	defaults := createDefaultConfig()
	defaults.Endpoint = "http://127.0.0.1:8123"

	embedded := createDefaultConfig()
	embedded.Endpoint = "http://127.0.0.1:8123"
	embedded.QueueSettings = configoptional.None[exporterhelper.QueueBatchConfig]()
	embedded.BackOffConfig.Enabled = false

	for _, tc := range []struct {
		name string
		want *Config
	}{
		{"", defaults},
		{"full", full},
		{"embedded", embedded},
	} {
		t.Run("flamehouse/"+tc.name, func(t *testing.T) {
			cfg := loadConfig(t, tc.name)
			require.NoError(t, confmap.Validate(cfg))
			require.Equal(t, tc.want, cfg)
		})
	}
}

// TestDefaults pins the defaults that come from Flamehouse's packages, so
// that the exporter and `flamehouse run` write the same tables by default.
func TestDefaults(t *testing.T) {
	cfg := createDefaultConfig()
	require.Equal(t, schema.DefaultDatabase, cfg.Database)
	require.Equal(t, schema.DefaultTablePrefix, cfg.TablePrefix)
	require.Equal(t, schema.DefaultConfig().Retention, cfg.tables().Retention)
	require.True(t, cfg.CreateSchema)
	require.True(t, cfg.CPUSamplesAsTime)
	require.Equal(t, DefaultTimeout, cfg.TimeoutSettings.Timeout)
	require.True(t, cfg.QueueSettings.HasValue(), "the sending queue is on, as in the contrib exporters")
	require.False(t, cfg.persistent())
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
}

func TestConfigReportsEveryProblem(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "invalid"))
	require.Error(t, err)
	for _, want := range []string{
		`endpoint must be http://host[:port]`, `got scheme "ftp"`,
		`database must be a plain identifier`, `table prefix may contain only`,
		"ttl must not be negative", "timeout must be positive", "tls.min_version is not supported",
		"writer: flush_interval must be positive",
	} {
		require.ErrorContains(t, err, want)
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		protocol string
		address  string
		secure   bool
		err      string
	}{
		{endpoint: "http://127.0.0.1:8123", protocol: chclient.ProtocolHTTP, address: "127.0.0.1:8123"},
		{endpoint: "http://ch.internal", protocol: chclient.ProtocolHTTP, address: "ch.internal:8123"},
		{endpoint: "https://ch.internal", protocol: chclient.ProtocolHTTP, address: "ch.internal:8443", secure: true},
		{endpoint: "https://ch.internal:9443/", protocol: chclient.ProtocolHTTP, address: "ch.internal:9443", secure: true},
		{endpoint: "tcp://ch.internal", protocol: chclient.ProtocolNative, address: "ch.internal:9000"},
		{endpoint: "clickhouse://ch.internal:19000", protocol: chclient.ProtocolNative, address: "ch.internal:19000"},
		{endpoint: "tcp://ch.internal?secure=true", protocol: chclient.ProtocolNative, address: "ch.internal:9440", secure: true},
		{endpoint: "tcp://[::1]:9000", protocol: chclient.ProtocolNative, address: "[::1]:9000"},
		{endpoint: "", err: "endpoint is required"},
		{endpoint: "ch.internal:8123", err: "endpoint must be"},
		{endpoint: "ftp://ch.internal", err: `got scheme "ftp"`},
		{endpoint: "http://ch.internal:8123/clickhouse", err: "a path"},
		{endpoint: "http://:8123", err: "no host"},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			cfg := createDefaultConfig()
			cfg.Endpoint, cfg.Password = tc.endpoint, "s3cr3t"
			ch, err := cfg.clickhouse()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.protocol, ch.Protocol)
			require.Equal(t, tc.address, ch.Address)
			require.Equal(t, tc.secure, ch.Secure)
			require.Equal(t, secret.String("s3cr3t"), ch.Password)
			require.Equal(t, "default", ch.Username)
		})
	}
}

func TestTablesFromConfig(t *testing.T) {
	cfg := loadConfig(t, "full")
	tables := cfg.tables()
	require.Equal(t, "profiles", tables.Database)
	require.Equal(t, "fh_", tables.TablePrefix)
	require.Equal(t, "prod", tables.Cluster)
	require.Equal(t, schema.Retention{Samples: 72 * time.Hour, Minute: 72 * time.Hour, Hour: 72 * time.Hour, Symbols: 2160 * time.Hour}, tables.Retention,
		"ttl applies to every sample table, not to symbols")
	cfg.TTL = 0
	require.Equal(t, schema.Retention{Samples: 24 * time.Hour, Minute: 48 * time.Hour, Hour: 96 * time.Hour, Symbols: 2160 * time.Hour}, cfg.tables().Retention)
	require.True(t, cfg.persistent())
	require.Equal(t, 200*time.Millisecond, cfg.Writer.FlushInterval)
	require.Equal(t, 100_000, cfg.Writer.SymbolCacheSize)
	ch, err := cfg.clickhouse()
	require.NoError(t, err)
	require.Equal(t, "/etc/flamehouse/ca.pem", ch.CAFile)
	require.True(t, ch.TLSSkipVerify)
	require.Equal(t, 4, ch.MaxOpenConns)
}

// TestPasswordNeverPrinted: the password is an opaque string in the
// configuration and a secret in the client configuration; neither prints
// its value.
func TestPasswordNeverPrinted(t *testing.T) {
	cfg := loadConfig(t, "full")
	ch, err := cfg.clickhouse()
	require.NoError(t, err)
	for _, v := range []any{cfg.Password, ch.Password, ch} {
		require.NotContains(t, sprint(v), "s3cr3t")
	}
}

// TestEverySharedSettingReachable: each setting of the writer's and the
// schema's retention configuration — declared once, in their packages, and
// embedded here — is set by its key under "writer" or "retention" in the
// Collector's YAML, so that a setting added there reaches Collector users.
func TestEverySharedSettingReachable(t *testing.T) {
	for _, section := range []struct {
		key   string
		field func(*Config) reflect.Value
	}{
		{"writer", func(c *Config) reflect.Value { return reflect.ValueOf(&c.Writer).Elem() }},
		{"retention", func(c *Config) reflect.Value { return reflect.ValueOf(&c.Retention).Elem() }},
	} {
		typ := section.field(createDefaultConfig()).Type()
		require.Positive(t, typ.NumField())
		for i := range typ.NumField() {
			f := typ.Field(i)
			key := f.Tag.Get("mapstructure")
			t.Run(section.key+"."+key, func(t *testing.T) {
				require.NotEmpty(t, key, "%s.%s has no mapstructure tag", typ, f.Name)
				require.Equal(t, f.Tag.Get("yaml"), key, "the Collector's key is the service's")
				var set, want any
				switch f.Type {
				case reflect.TypeFor[time.Duration]():
					set, want = "1234567ms", 1234567*time.Millisecond
				case reflect.TypeFor[int]():
					set, want = 1234567, 1234567
				case reflect.TypeFor[float64]():
					set, want = 1234.5, 1234.5
				default:
					t.Fatalf("%s.%s: a %s setting: teach this test its kind", typ, f.Name, f.Type)
				}
				cfg := createDefaultConfig()
				require.NoError(t, confmap.NewFromStringMap(map[string]any{section.key: map[string]any{key: set}}).Unmarshal(cfg))
				require.Equal(t, want, section.field(cfg).Field(i).Interface())
			})
		}
	}
}
