import { DataSourceJsonData } from '@grafana/data';

import {
  CACHE_MODES,
  CPU_PROFILE_TYPE,
  DEFAULT_PORTS,
  PROFILES_SCHEMAS,
  PROTOCOLS,
  QUERY_LIMITS,
  SETTINGS_DEFAULTS,
} from './generated/backend';

/**
 * Datasource settings: jsonData and secureJsonData. The keys mirror the Go
 * backend's pkg/plugin/settings.go, which is authoritative for their meaning
 * and defaults (src/generated/backend.ts carries them here); the connection
 * keys are those of the official ClickHouse datasource.
 */

export type Protocol = (typeof PROTOCOLS)[number];

/** One HTTP header sent with every request (protocol http only). */
export interface HttpHeader {
  name: string;
  /** The value of a plain header; a secure header keeps it in secureJsonData `secureHttpHeaders.<name>`. */
  value: string;
  secure: boolean;
}

/** One ClickHouse setting sent with every query. */
export interface CustomSetting {
  setting: string;
  value: string;
}

/**
 * The table layout profiles are read from: Flamehouse's own tables, or the
 * profiles table of the OpenTelemetry Collector contrib ClickHouse exporter
 * (one row per sample).
 */
export type ProfilesSchema = (typeof PROFILES_SCHEMAS)[number];

/** Where the profile tables are, and query defaults: jsonData.profiles. */
export interface ProfilesOptions {
  /** Table layout; default flamehouse. */
  schema?: ProfilesSchema;
  /** Database of the tables; default otel. */
  database?: string;
  /** Prefix of the table names; default otel_. Ignored with schema otel. */
  tablePrefix?: string;
  /** Tenant whose rows the datasource reads; default '' (the ingest's tenant when its auth is off). Ignored with schema otel. */
  tenant?: string;
  /** The exporter's profiles table in database; default otel_profiles. Read with schema otel only. */
  otelTable?: string;
  /** Profile type of queries that name none, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds. */
  defaultProfileType?: string;
  /** Flame graph nodes of queries that set no maxNodes; default 16384. */
  defaultMaxNodes?: number;
  /** Seconds added on both sides of span and trace queries; default 60. */
  spanWindowPadding?: string;
  /** Shortest time-series interval in seconds; default 15. */
  minStep?: string;
  /**
   * Datasource that opens traces from profiles ("Open trace" on the spans query's trace ids): Tempo, the ClickHouse
   * plugin, Jaeger or Zipkin; unset, this datasource's own traces query.
   */
  tracesDatasourceUid?: string;
  /** Datasource of "Logs for this selection": Loki or the ClickHouse plugin. */
  logsDatasourceUid?: string;
  /** Datasource of "Metrics for this selection": Prometheus (or another that takes PromQL). */
  metricsDatasourceUid?: string;
  /**
   * PromQL of "Metrics for this selection", with placeholders ${service_name}, ${k8s_namespace_name} and
   * ${k8s_pod_name} filled from the query's equality matchers; default DEFAULTS.metricsQuery. Frontend only.
   */
  metricsQuery?: string;
  /** Database of the OpenTelemetry Collector exporter's traces table (traces query type); default: database. */
  tracesDatabase?: string;
  /** The exporter's traces table in tracesDatabase; default otel_traces. */
  tracesTable?: string;
  /**
   * Where answers of closed time ranges are cached: auto (default: ClickHouse's query cache when the server has one
   * the user may use, else the plugin's own), clickhouse, plugin or off.
   */
  cache?: CacheMode;
  /** Seconds a cached answer is served; default 300; 0 turns the cache off. */
  cacheTtl?: string;
  /** Seconds ago a range must end to be cached; default 60. */
  cacheClosedAfter?: string;
}

/** Where answers of closed time ranges are cached (pkg/query/cache.go). */
export type CacheMode = (typeof CACHE_MODES)[number];

/** jsonData, with connection keys named as in the official ClickHouse datasource. */
export interface FlamehouseOptions extends DataSourceJsonData {
  host?: string;
  /** Server port; 0 or unset means the protocol's default (see defaultPort). */
  port?: number;
  /** native (default) or http. */
  protocol?: Protocol;
  /** TLS on the connection. */
  secure?: boolean;
  tlsSkipVerify?: boolean;
  /** Send a client certificate (secure tlsClientCert, tlsClientKey). */
  tlsAuth?: boolean;
  /** Verify the server with a CA certificate (secure tlsCACert). */
  tlsAuthWithCACert?: boolean;
  /** URL path of the HTTP interface behind a proxy (protocol http only). */
  path?: string;
  httpHeaders?: HttpHeader[];
  customSettings?: CustomSetting[];
  /** ClickHouse user; default "default". */
  username?: string;
  /** The ClickHouse datasource's default database; Flamehouse reads its tables from profiles.database. */
  defaultDatabase?: string;
  /** Seconds; default 10. */
  dialTimeout?: string;
  /** Seconds; default 60; also the queries' max_execution_time. */
  queryTimeout?: string;
  profiles?: ProfilesOptions;
}

/** Prefix of the secureJsonData key holding a secure HTTP header's value. */
export const SECURE_HEADER_PREFIX = 'secureHttpHeaders.';

export type SecureHeaderKey = `secureHttpHeaders.${string}`;

/** secureJsonData: write-only, sent to the backend only. */
export interface FlamehouseSecureJsonData {
  password?: string;
  tlsCACert?: string;
  tlsClientCert?: string;
  tlsClientKey?: string;
  [secureHeader: SecureHeaderKey]: string | undefined;
}

/** The secureJsonData key of the secure HTTP header `name`. */
export function secureHeaderKey(name: string): SecureHeaderKey {
  return `${SECURE_HEADER_PREFIX}${name}`;
}

/** The backend's defaults, shown as placeholders, and the frontend's own (host, logsTable, metricsQuery). */
export const DEFAULTS = {
  ...SETTINGS_DEFAULTS,
  /** The editor's suggestion; the backend requires a host. */
  host: 'localhost',
  maxMaxNodes: QUERY_LIMITS.maxNodes,
  profileType: CPU_PROFILE_TYPE,
  /** The exporter's logs table that "Logs for this selection" reads through the ClickHouse plugin. */
  logsTable: 'otel_logs',
  metricsQuery:
    'sum by (k8s_pod_name) (rate(process_cpu_seconds_total{service_name="${service_name}"}[$__rate_interval]))',
};

/** The port the backend uses when none is set: 9000 native, 8123 http, 9440 and 8443 with TLS. */
export function defaultPort(protocol: Protocol | undefined, secure: boolean | undefined): number {
  const ports = DEFAULT_PORTS[protocol ?? DEFAULTS.protocol];
  return secure ? ports.secure : ports.plain;
}

/**
 * Every jsonData key the editor writes, for the tests that compare the
 * frontend, the backend's settings.go and the provisioning example.
 */
export const JSON_DATA_KEYS = [
  'host',
  'port',
  'protocol',
  'secure',
  'tlsSkipVerify',
  'tlsAuth',
  'tlsAuthWithCACert',
  'path',
  'httpHeaders',
  'customSettings',
  'username',
  'defaultDatabase',
  'dialTimeout',
  'queryTimeout',
  'profiles',
] as const satisfies ReadonlyArray<keyof FlamehouseOptions>;

export const PROFILES_KEYS = [
  'schema',
  'database',
  'tablePrefix',
  'tenant',
  'otelTable',
  'defaultProfileType',
  'defaultMaxNodes',
  'spanWindowPadding',
  'minStep',
  'tracesDatasourceUid',
  'logsDatasourceUid',
  'metricsDatasourceUid',
  'metricsQuery',
  'tracesDatabase',
  'tracesTable',
  'cache',
  'cacheTtl',
  'cacheClosedAfter',
] as const satisfies ReadonlyArray<keyof ProfilesOptions>;

/** Fixed secureJsonData keys; secure HTTP headers add secureHttpHeaders.<name>. */
export const SECURE_KEYS = ['password', 'tlsCACert', 'tlsClientCert', 'tlsClientKey'] as const satisfies ReadonlyArray<
  keyof FlamehouseSecureJsonData
>;

// The lists above name every key of the interfaces: a key added to an
// interface and not to its list fails to compile here.
type Unlisted<T, Listed> = Exclude<keyof T, Listed>;
const everyKeyListed: [
  Unlisted<Omit<FlamehouseOptions, keyof DataSourceJsonData>, (typeof JSON_DATA_KEYS)[number]>,
  Unlisted<ProfilesOptions, (typeof PROFILES_KEYS)[number]>,
  Exclude<Unlisted<FlamehouseSecureJsonData, (typeof SECURE_KEYS)[number]>, SecureHeaderKey>,
] extends [never, never, never]
  ? true
  : false = true;
void everyKeyListed;
