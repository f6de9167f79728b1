package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

// Settings are the datasource's jsonData and secureJsonData. The connection
// keys follow the official ClickHouse datasource, so users recognise them.
type Settings struct {
	// Host of the ClickHouse server.
	Host string `json:"host"`
	// Port of the server; default 9000 (native) or 8123 (http), 9440/8443 with TLS.
	Port int `json:"port"`
	// Protocol is "native" (default) or "http".
	Protocol string `json:"protocol"`
	// Secure enables TLS.
	Secure bool `json:"secure"`
	// TLSSkipVerify skips server certificate checks.
	TLSSkipVerify bool `json:"tlsSkipVerify"`
	// Username to authenticate as; default "default".
	Username string `json:"username"`
	// DefaultDatabase is the ClickHouse plugin's default database; Flamehouse
	// uses Profiles.Database for its tables.
	DefaultDatabase string `json:"defaultDatabase"`
	// DialTimeout in seconds; default 10.
	DialTimeout string `json:"dialTimeout"`
	// QueryTimeout in seconds; default 60.
	QueryTimeout string `json:"queryTimeout"`
	// TLSAuth sends a client certificate (secure tlsClientCert and
	// tlsClientKey).
	TLSAuth bool `json:"tlsAuth"`
	// TLSAuthWithCACert verifies the server with secure tlsCACert.
	TLSAuthWithCACert bool `json:"tlsAuthWithCACert"`
	// Path is the HTTP interface's URL path (behind a proxy).
	Path string `json:"path"`
	// HTTPHeaders are sent with every HTTP request; secure ones take their
	// value from secureJsonData "secureHttpHeaders.<name>".
	HTTPHeaders []HTTPHeader `json:"httpHeaders"`
	// CustomSettings are ClickHouse settings sent with every query.
	CustomSettings []CustomSetting `json:"customSettings"`
	// Profiles locates the Flamehouse tables.
	Profiles ProfilesSettings `json:"profiles"`

	// Password comes from secureJsonData.
	Password secret.String `json:"-"`
	// TLS material from secureJsonData.
	TLSCACert, TLSClientCert string        `json:"-"`
	TLSClientKey             secret.String `json:"-"`
	secureHeaders            map[string]secret.String
}

// HTTPHeader is one configured HTTP header.
type HTTPHeader struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Secure bool   `json:"secure"`
}

// CustomSetting is one ClickHouse setting.
type CustomSetting struct {
	Setting string `json:"setting"`
	Value   string `json:"value"`
}

// SettingNamePattern is a ClickHouse setting's name (customSettings), in
// the syntax Go's regexp and JavaScript's RegExp share.
const SettingNamePattern = `^[a-zA-Z_][a-zA-Z0-9_]*$`

var settingName = regexp.MustCompile(SettingNamePattern)

// HTTPHeaderNameForbidden are the characters an HTTP header's name may not
// contain.
const HTTPHeaderNameForbidden = " :\r\n"

// Defaults of the settings a datasource leaves empty that are the
// datasource's own; LoadSettings and the accessors below apply them, and
// the config editor shows them (src/generated/backend.ts, written by go
// generate ./internal/tsgen). The others are the defaults of the packages
// that own them: the connection's (chclient.DefaultProtocol,
// chclient.DefaultUsername, chclient.DefaultDialTimeout), the schema's
// (schema.DefaultDatabase, schema.DefaultTablePrefix) and the query's
// (query.DefaultSchema, query.DefaultOTelTable, query.DefaultTracesTable,
// query.DefaultMaxNodes, query.DefaultCacheMode, query.DefaultCacheTTL,
// query.DefaultCacheClosedAfter).
const (
	DefaultQueryTimeout      = time.Minute
	DefaultSpanWindowPadding = time.Minute
	DefaultMinStep           = 15 * time.Second
)

// The server's port when a datasource sets none, by protocol and TLS.
const (
	DefaultPortNative       = 9000
	DefaultPortNativeSecure = 9440
	DefaultPortHTTP         = 8123
	DefaultPortHTTPSecure   = 8443
)

// ProfilesSettings locate the Flamehouse tables and set query defaults.
type ProfilesSettings struct {
	// Database of the tables; default "otel".
	Database string `json:"database"`
	// TablePrefix of the tables; default "otel_".
	TablePrefix string `json:"tablePrefix"`
	// Tenant whose rows the datasource reads; default "" (the ingest's
	// tenant when auth is off).
	Tenant string `json:"tenant"`
	// DefaultProfileType is used by queries that name none, e.g.
	// process_cpu:cpu:nanoseconds:cpu:nanoseconds.
	DefaultProfileType string `json:"defaultProfileType"`
	// DefaultMaxNodes caps flame graph nodes when a query sets no
	// maxNodes; default 16384.
	DefaultMaxNodes int `json:"defaultMaxNodes"`
	// SpanWindowPadding widens span and trace queries' time range, in
	// seconds; default 60.
	SpanWindowPadding string `json:"spanWindowPadding"`
	// MinStep is the shortest time-series interval, in seconds; default 15.
	MinStep string `json:"minStep"`
	// TracesDatasourceUID names the datasource that opens trace links from
	// profiles (Tempo, the ClickHouse plugin, ...); used by the frontend.
	TracesDatasourceUID string `json:"tracesDatasourceUid"`
	// LogsDatasourceUID names the datasource that opens log links from
	// profiles (Loki, the ClickHouse plugin, ...); used by the frontend.
	LogsDatasourceUID string `json:"logsDatasourceUid"`
	// MetricsDatasourceUID names the datasource that opens metric links
	// from profiles (Prometheus, ...); used by the frontend.
	MetricsDatasourceUID string `json:"metricsDatasourceUid"`
	// TracesDatabase holds the OpenTelemetry Collector ClickHouse
	// exporter's spans table, read by traces queries, by spans queries (for
	// names and durations) and to keep trace-wide reads to the trace's
	// spans; default: Database.
	TracesDatabase string `json:"tracesDatabase"`
	// TracesTable is the exporter's spans table in TracesDatabase; its
	// trace id lookup table is TracesTable + "_trace_id_ts", as the
	// exporter names it; default "otel_traces".
	TracesTable string `json:"tracesTable"`
	// Schema picks the tables read: "flamehouse" (default), Flamehouse's
	// own tables, or "otel", the OpenTelemetry Collector ClickHouse
	// exporter's profiles table (no tenants: Tenant and TablePrefix are
	// not used).
	Schema query.Schema `json:"schema"`
	// OTelTable is the exporter's profiles table in Database when Schema
	// is "otel"; default "otel_profiles".
	OTelTable string `json:"otelTable"`
	// Cache is where answers over closed time ranges are cached: "auto"
	// (default: ClickHouse's query cache when the server has one the user
	// may use, else the plugin's), "clickhouse", "plugin" or "off".
	Cache query.CacheMode `json:"cache"`
	// CacheTTL is how long a cached answer is served, in seconds; default
	// 300.
	CacheTTL string `json:"cacheTtl"`
	// CacheClosedAfter is how long ago a range must end to be cached, in
	// seconds; default 60.
	CacheClosedAfter string `json:"cacheClosedAfter"`
}

var errNoHost = errors.New("server address (host) is missing: set it in the datasource's connection settings")

// LoadSettings parses and checks the datasource settings.
func LoadSettings(s backend.DataSourceInstanceSettings) (Settings, error) {
	var st Settings
	if len(s.JSONData) > 0 {
		if err := json.Unmarshal(s.JSONData, &st); err != nil {
			return st, fmt.Errorf("datasource settings are not valid JSON: %w", err)
		}
	}
	st.Password = secret.String(s.DecryptedSecureJSONData["password"])
	st.TLSCACert = s.DecryptedSecureJSONData["tlsCACert"]
	st.TLSClientCert = s.DecryptedSecureJSONData["tlsClientCert"]
	st.TLSClientKey = secret.String(s.DecryptedSecureJSONData["tlsClientKey"])
	st.secureHeaders = map[string]secret.String{}
	for k, v := range s.DecryptedSecureJSONData {
		if name, ok := strings.CutPrefix(k, "secureHttpHeaders."); ok {
			st.secureHeaders[name] = secret.String(v)
		}
	}
	if st.Protocol == "" {
		st.Protocol = chclient.DefaultProtocol
	}
	if st.Username == "" {
		st.Username = chclient.DefaultUsername
	}
	if st.Profiles.Database == "" {
		st.Profiles.Database = schema.DefaultDatabase
	}
	if st.Profiles.TablePrefix == "" {
		st.Profiles.TablePrefix = schema.DefaultTablePrefix
	}
	if st.Profiles.Schema == "" {
		st.Profiles.Schema = query.DefaultSchema
	}
	if st.Profiles.OTelTable == "" {
		st.Profiles.OTelTable = query.DefaultOTelTable
	}
	if st.Profiles.TracesDatabase == "" {
		st.Profiles.TracesDatabase = st.Profiles.Database
	}
	if st.Profiles.TracesTable == "" {
		st.Profiles.TracesTable = query.DefaultTracesTable
	}
	if st.Profiles.Cache == "" {
		st.Profiles.Cache = query.DefaultCacheMode
	}
	return st, st.validate()
}

func (s *Settings) validate() error {
	var err error
	if s.Host == "" {
		err = errors.Join(err, errNoHost)
	}
	if s.Port < 0 || s.Port > 65535 {
		err = errors.Join(err, fmt.Errorf("port %d is out of range", s.Port))
	}
	for _, c := range s.CustomSettings {
		if !settingName.MatchString(c.Setting) {
			err = errors.Join(err, fmt.Errorf("custom setting name %q is not a ClickHouse setting name", c.Setting))
		}
	}
	for _, h := range s.HTTPHeaders {
		if h.Name == "" || strings.ContainsAny(h.Name, HTTPHeaderNameForbidden) {
			err = errors.Join(err, fmt.Errorf("HTTP header name %q is not valid", h.Name))
		}
	}
	if s.TLSAuth && (s.TLSClientCert == "" || s.TLSClientKey.Value() == "") {
		err = errors.Join(err, errors.New("TLS client authentication is on but the client certificate or key is missing"))
	}
	if s.TLSAuthWithCACert && s.TLSCACert == "" {
		err = errors.Join(err, errors.New("TLS with a CA certificate is on but the CA certificate is missing"))
	}
	if s.Profiles.DefaultMaxNodes < 0 || s.Profiles.DefaultMaxNodes > query.MaxMaxNodes {
		err = errors.Join(err, fmt.Errorf("default max nodes %d must be between 1 and %d", s.Profiles.DefaultMaxNodes, query.MaxMaxNodes))
	}
	if s.Profiles.DefaultProfileType != "" {
		if _, e := query.ParseProfileType(s.Profiles.DefaultProfileType); e != nil {
			err = errors.Join(err, fmt.Errorf("default profile type: %w", e))
		}
	}
	for name, v := range map[string]string{
		"dial timeout": s.DialTimeout, "query timeout": s.QueryTimeout,
		"span window padding": s.Profiles.SpanWindowPadding, "min step": s.Profiles.MinStep,
		"cache TTL": s.Profiles.CacheTTL, "cache closed after": s.Profiles.CacheClosedAfter,
	} {
		if _, parseErr := seconds(v, time.Second); parseErr != nil {
			err = errors.Join(err, fmt.Errorf("%s %q is not a number of seconds", name, v))
		}
	}
	if !query.ValidCacheMode(s.Profiles.Cache) {
		err = errors.Join(err, fmt.Errorf("profiles cache %q is not one of %q, %q, %q and %q",
			s.Profiles.Cache, query.CacheAuto, query.CacheClickHouse, query.CachePlugin, query.CacheOff))
	}
	if !query.ValidSchema(s.Profiles.Schema) {
		err = errors.Join(err, fmt.Errorf("profiles schema %q is not one of %q (Flamehouse's tables) and %q (the Collector exporter's table)",
			s.Profiles.Schema, query.SchemaFlamehouse, query.SchemaOTel))
	}
	for _, id := range []struct{ name, value string }{
		{"exporter table", s.Profiles.OTelTable}, {"traces database", s.Profiles.TracesDatabase}, {"traces table", s.Profiles.TracesTable},
	} {
		if !schema.IsIdentifier(id.value) {
			err = errors.Join(err, fmt.Errorf("%s %q must be a plain identifier (letters, digits, underscore; not starting with a digit)", id.name, id.value))
		}
	}
	sc := s.schemaConfig()
	if s.Profiles.Schema == query.SchemaOTel {
		sc.TablePrefix = "" // not used: the editor hides it
	}
	if e := sc.Validate(); e != nil {
		err = errors.Join(err, fmt.Errorf("profiles settings: %w", e))
	}
	return err
}

// seconds parses a number of seconds, "" giving the default.
func seconds(v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("not a number of seconds: %q", v)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// queryOptions are the query defaults of the settings.
func (s *Settings) queryOptions() query.Options {
	padding, _ := seconds(s.Profiles.SpanWindowPadding, DefaultSpanWindowPadding)
	minStep, _ := seconds(s.Profiles.MinStep, DefaultMinStep)
	return query.Options{
		DefaultProfileType: s.Profiles.DefaultProfileType, DefaultMaxNodes: s.Profiles.DefaultMaxNodes,
		SpanPadding: padding, MinStep: minStep,
	}
}

// cache is the answer cache the settings ask for.
func (s *Settings) cache() *query.Cache {
	ttl, _ := seconds(s.Profiles.CacheTTL, query.DefaultCacheTTL)
	closedAfter, _ := seconds(s.Profiles.CacheClosedAfter, query.DefaultCacheClosedAfter)
	mode := s.Profiles.Cache
	if ttl <= 0 {
		mode = query.CacheOff
	}
	return &query.Cache{Mode: mode, TTL: ttl, ClosedAfter: closedAfter}
}

// queryTimeout is the ClickHouse max_execution_time of a query.
func (s *Settings) queryTimeout() time.Duration {
	d, _ := seconds(s.QueryTimeout, DefaultQueryTimeout)
	return d
}

// schemaConfig is the schema configuration the settings point at.
func (s *Settings) schemaConfig() schema.Config {
	cfg := schema.DefaultConfig()
	cfg.Database = s.Profiles.Database
	cfg.TablePrefix = s.Profiles.TablePrefix
	return cfg
}

// clientConfig turns the settings into a ClickHouse client configuration.
func (s *Settings) clientConfig() chclient.Config {
	port := s.Port
	if port == 0 {
		port = defaultPort(s.Protocol, s.Secure)
	}
	dial, _ := seconds(s.DialTimeout, chclient.DefaultDialTimeout)
	cfg := chclient.DefaultConfig()
	cfg.Address = net.JoinHostPort(s.Host, strconv.Itoa(port))
	cfg.Protocol = s.Protocol
	cfg.Username = s.Username
	cfg.Password = s.Password
	cfg.Secure = s.Secure
	cfg.TLSSkipVerify = s.TLSSkipVerify
	cfg.DialTimeout = dial
	cfg.HTTPPath = s.Path
	if s.TLSAuthWithCACert {
		cfg.CAPEM = s.TLSCACert
	}
	if s.TLSAuth {
		cfg.ClientCertPEM, cfg.ClientKeyPEM = s.TLSClientCert, s.TLSClientKey
	}
	if len(s.HTTPHeaders) > 0 {
		cfg.HTTPHeaders = map[string]string{}
		for _, h := range s.HTTPHeaders {
			v := h.Value
			if h.Secure {
				v = s.secureHeaders[h.Name].Value()
			}
			cfg.HTTPHeaders[h.Name] = v
		}
	}
	if len(s.CustomSettings) > 0 {
		cfg.Settings = map[string]any{}
		for _, c := range s.CustomSettings {
			cfg.Settings[c.Setting] = c.Value
		}
	}
	return cfg
}

func defaultPort(protocol string, secure bool) int {
	switch {
	case protocol == chclient.ProtocolHTTP && secure:
		return DefaultPortHTTPSecure
	case protocol == chclient.ProtocolHTTP:
		return DefaultPortHTTP
	case secure:
		return DefaultPortNativeSecure
	}
	return DefaultPortNative
}
