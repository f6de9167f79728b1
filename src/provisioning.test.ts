/**
 * @jest-environment-options {"customExportConditions": ["node", "require", "default"]}
 */
// (yaml's browser build is an ES module; this test reads files, so it takes the Node build.)
import { readdirSync, readFileSync } from 'fs';
import { join } from 'path';
import { parse } from 'yaml';

import { metricsQueryError } from './components/config/validation';
import { LinkContext, LinkTarget, logsQuery, metricsQuery, traceQuery } from './links';
import { DEFAULTS, JSON_DATA_KEYS, PROFILES_KEYS, ProfilesOptions, SECURE_HEADER_PREFIX, SECURE_KEYS } from './options';
import plugin from './plugin.json';
import { unescapeDollars } from './testing/provisioning';

/**
 * The provisioning examples against the code that reads them: the datasource
 * YAML against the backend's settings structs (pkg/plugin/settings.go) and
 * the frontend's option types; the example dashboard against the backend's
 * query model (pkg/query/request.go); the examples of provisioning/examples
 * (Tempo, the ClickHouse plugin, correlations) against each other and
 * against the query model and the links. The Go files are read as text, so a
 * renamed or added key fails here.
 */

const root = join(__dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/**
 * Keys the frontend writes that the backend does not read (it ignores unknown keys): the metrics link's query
 * template is used by the links the frontend builds only.
 */
const FRONTEND_ONLY_PROFILES_KEYS = ['metricsQuery'];

/** The json tags and Go types of a struct's fields, without `json:"-"` ones. */
function goStruct(source: string, name: string): Map<string, string> {
  const body = source.match(new RegExp(`type ${name} struct \\{([\\s\\S]*?)\\n\\}`));
  if (!body) {
    throw new Error(`struct ${name} not found`);
  }
  const fields = new Map<string, string>();
  for (const m of body[1].matchAll(/^\s*\w+\s+(\S+)\s+`json:"([^",]+)/gm)) {
    if (m[2] !== '-') {
      fields.set(m[2], m[1]);
    }
  }
  return fields;
}

/**
 * Named string types the settings structs use, such as query.Schema (from
 * `type Schema string` in pkg/query): encoding/json decodes them as strings.
 */
const namedStringTypes = new Set(
  [
    { pkg: 'query', file: 'pkg/query/layout.go' },
    { pkg: 'query', file: 'pkg/query/cache.go' },
    { pkg: '', file: 'pkg/plugin/settings.go' },
  ].flatMap(({ pkg, file }) =>
    [...read(file).matchAll(/^type (\w+) string$/gm)].map((m) => (pkg ? `${pkg}.${m[1]}` : m[1]))
  )
);

/** Whether a YAML value fits a Go field type as encoding/json decodes it. */
function fitsGoType(goType: string, value: unknown): boolean {
  if (namedStringTypes.has(goType)) {
    return typeof value === 'string';
  }
  switch (goType) {
    case 'string':
      return typeof value === 'string';
    case 'bool':
      return typeof value === 'boolean';
    case 'int':
      return Number.isInteger(value);
    case '*int64':
      return value === null || Number.isInteger(value);
    case '[]string':
      return Array.isArray(value) && value.every((v) => typeof v === 'string');
  }
  if (goType.startsWith('[]')) {
    return Array.isArray(value) && value.every((v) => typeof v === 'object' && v !== null);
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Problems of an object against a Go struct: unknown keys and type mismatches. */
function checkAgainst(
  struct: Map<string, string>,
  obj: Record<string, unknown>,
  where: string,
  allowed: string[] = []
) {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(obj)) {
    const goType = struct.get(key);
    if (goType === undefined) {
      if (!allowed.includes(key)) {
        problems.push(`${where}.${key} is not read by the backend`);
      }
    } else if (!fitsGoType(goType, value)) {
      problems.push(`${where}.${key} = ${JSON.stringify(value)} does not decode into Go ${goType}`);
    }
  }
  return problems;
}

const settingsGo = read('pkg/plugin/settings.go');
const settingsStruct = goStruct(settingsGo, 'Settings');
const headerStruct = goStruct(settingsGo, 'HTTPHeader');
const customSettingStruct = goStruct(settingsGo, 'CustomSetting');
const profilesStruct = goStruct(settingsGo, 'ProfilesSettings');
const goSecureKeys = [...settingsGo.matchAll(/DecryptedSecureJSONData\["(\w+)"\]/g)].map((m) => m[1]);

interface ProvisionedDatasource {
  name: string;
  uid: string;
  type: string;
  jsonData: Record<string, unknown> & {
    httpHeaders?: Array<Record<string, unknown>>;
    customSettings?: Array<Record<string, unknown>>;
    profiles: Record<string, unknown>;
  };
  secureJsonData: Record<string, string | null>;
}

const datasources = parse(read('provisioning/datasources/datasources.yml')) as {
  apiVersion: number;
  datasources: ProvisionedDatasource[];
};
/** The full example: every key set, on Flamehouse's tables. The dashboard and the browser tests use it. */
const ds = datasources.datasources[0];

/** Problems of a datasource's jsonData against the Go settings structs. */
function jsonDataProblems(j: ProvisionedDatasource['jsonData']) {
  return [
    ...checkAgainst(settingsStruct, j, 'jsonData'),
    ...checkAgainst(profilesStruct, j.profiles, 'jsonData.profiles', FRONTEND_ONLY_PROFILES_KEYS),
    ...(j.httpHeaders ?? []).flatMap((h, i) => checkAgainst(headerStruct, h, `jsonData.httpHeaders[${i}]`)),
    ...(j.customSettings ?? []).flatMap((c, i) =>
      checkAgainst(customSettingStruct, c, `jsonData.customSettings[${i}]`)
    ),
  ];
}

/** The table layouts of pkg/query/layout.go, by constant name. */
const layoutGo = read('pkg/query/layout.go');
const goConst = (name: string) => layoutGo.match(new RegExp(`\\b${name}\\b[^=\\n]*=\\s*"([^"]*)"`))?.[1];

describe('provisioning/datasources/datasources.yml', () => {
  it('reads the Go settings structs it is checked against', () => {
    expect([...settingsStruct.keys()]).toEqual(expect.arrayContaining(['host', 'port', 'httpHeaders', 'profiles']));
    expect([...profilesStruct.keys()]).toEqual(expect.arrayContaining(['database', 'defaultMaxNodes', 'minStep']));
    expect(goSecureKeys).toEqual(expect.arrayContaining(['password', 'tlsCACert']));
  });

  it("provisions one datasource of this plugin, on Flamehouse's tables: what `flamehouse run` creates", () => {
    // Grafana loads this directory as it is: a datasource here that needs more than the main job's tables (the
    // Collector exporter's, say) would fail "Save & test". Such datasources are examples (provisioning/examples).
    expect(datasources.apiVersion).toBe(1);
    expect(datasources.datasources).toHaveLength(1);
    expect(ds).toMatchObject({ type: plugin.id, uid: 'flamehouse', access: 'proxy' });
    expect(ds.jsonData.profiles.schema).toBe(goConst('SchemaFlamehouse'));
  });

  it('uses only keys the backend reads, with types it decodes', () => {
    expect(jsonDataProblems(ds.jsonData)).toEqual([]);
  });

  it('sets every key of the backend and of the config editor', () => {
    const j = ds.jsonData;
    expect(Object.keys(j).sort()).toEqual([...settingsStruct.keys()].sort());
    expect(Object.keys(j.profiles).sort()).toEqual(
      [...new Set([...profilesStruct.keys(), ...FRONTEND_ONLY_PROFILES_KEYS])].sort()
    );
    expect([...JSON_DATA_KEYS].sort()).toEqual([...settingsStruct.keys()].sort());
    expect([...PROFILES_KEYS].sort()).toEqual(Object.keys(j.profiles).sort());
    const headers = j.httpHeaders ?? [];
    expect(headers.some((h) => h.secure === true) && headers.some((h) => h.secure === false)).toBe(true);
    expect(j.customSettings?.length).toBeGreaterThan(0);
    expect(j.profiles).toMatchObject({ schema: DEFAULTS.schema, otelTable: DEFAULTS.otelTable });
  });

  it('sets the traces table and the metrics link to their defaults, the template escaped for provisioning', () => {
    const p = ds.jsonData.profiles;
    expect(p).toMatchObject({ tracesDatabase: p.database, tracesTable: DEFAULTS.tracesTable });
    expect(read('pkg/query/traces.go')).toContain(`DefaultTracesTable = "${DEFAULTS.tracesTable}"`);
    const template = String(p.metricsQuery);
    // Every $ doubled: a single one would be taken for an environment variable and replaced by Grafana.
    expect(template.replace(/\$\$/g, '')).not.toContain('$');
    expect(unescapeDollars(template)).toBe(DEFAULTS.metricsQuery);
  });

  it('names the schemas and the exporter table default as pkg/query/layout.go does', () => {
    expect(goConst('SchemaFlamehouse')).toBe('flamehouse');
    expect(goConst('SchemaOTel')).toBe('otel');
    expect(goConst('DefaultOTelTable')).toBe(DEFAULTS.otelTable);
    expect(DEFAULTS.schema).toBe(goConst('SchemaFlamehouse'));
  });

  it('sets every secure field, from the environment only', () => {
    const secureHeaders = (ds.jsonData.httpHeaders ?? [])
      .filter((h) => h.secure)
      .map((h) => `${SECURE_HEADER_PREFIX}${h.name}`);
    expect([...SECURE_KEYS].sort()).toEqual([...goSecureKeys].sort());
    expect(Object.keys(ds.secureJsonData).sort()).toEqual([...SECURE_KEYS, ...secureHeaders].sort());
    for (const [key, value] of Object.entries(ds.secureJsonData)) {
      expect([key, value]).toEqual([key, expect.stringMatching(/^\$\{\w+\}$/)]);
    }
    expect(settingsGo).toContain(`"${SECURE_HEADER_PREFIX}"`);
  });

  it('points at the embedded engine: HTTP on 127.0.0.1:8123 as user default', () => {
    expect(ds.jsonData).toMatchObject({
      host: '127.0.0.1',
      port: 8123,
      protocol: 'http',
      secure: false,
      username: 'default',
    });
    expect(read('README.md')).toContain('127.0.0.1:8123');
  });
});

interface Target {
  refId: string;
  datasource: { type: string; uid: string };
  queryType: string;
  profileTypeId: string;
  labelSelector: string;
  groupBy?: string[];
  [key: string]: unknown;
}

interface Dashboard {
  uid: string;
  templating: {
    list: Array<{
      name: string;
      type: string;
      datasource: { type: string; uid: string };
      query: Record<string, unknown>;
      multi: boolean;
      includeAll: boolean;
      allValue?: string;
    }>;
  };
  links: Array<{ title: string; type: string; url: string }>;
  panels: Array<{
    id: number;
    type: string;
    title: string;
    datasource: { uid: string };
    targets: Target[];
    fieldConfig?: { overrides?: Array<{ properties?: Array<{ id: string; value?: unknown }> }> };
    options?: { sortBy?: Array<{ displayName: string }> };
  }>;
}

const queryStruct = goStruct(read('pkg/query/request.go'), 'JSON');
/** Keys every Grafana query has besides the datasource's own. */
const GRAFANA_QUERY_KEYS = ['refId', 'datasource', 'hide', 'key', 'queryType'];
/** The variable query model (src/types.ts VariableQuery). */
const VARIABLE_QUERY_KEYS = ['refId', 'type', 'label', 'profileTypeId', 'labelSelector'];
const PROFILE_TYPE = /^[^:]+:[^:]+:[^:]*:[^:]*:[^:]*$/;

const dashboard = JSON.parse(read('provisioning/dashboards/flamehouse.json')) as Dashboard;
const variables = dashboard.templating.list.map((v) => v.name);

describe('provisioning/dashboards', () => {
  it('has a file provider for this directory', () => {
    const providers = parse(read('provisioning/dashboards/dashboards.yml')) as {
      apiVersion: number;
      providers: Array<{ type: string; options: { path: string } }>;
    };
    expect(providers.apiVersion).toBe(1);
    expect(providers.providers).toHaveLength(1);
    expect(providers.providers[0].type).toBe('file');
    expect(providers.providers[0].options.path).toMatch(/\/dashboards$/);
  });

  it('queries the provisioned datasource with keys the backend reads', () => {
    expect([...queryStruct.keys()]).toEqual(expect.arrayContaining(['queryType', 'profileTypeId', 'labelSelector']));
    const targets = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p, t })));
    expect(targets.length).toBe(dashboard.panels.length);
    for (const { panel, t } of targets) {
      expect(panel.datasource.uid).toBe(ds.uid);
      expect(t.datasource).toEqual({ type: plugin.id, uid: ds.uid });
      const problems = checkAgainst(queryStruct, t, `${panel.title}: target`, GRAFANA_QUERY_KEYS);
      expect(problems).toEqual([]);
      expect(t.profileTypeId).toMatch(PROFILE_TYPE);
    }
  });

  it('has a time series by pod, a flame graph, a top-functions table and a diff flame graph', () => {
    const byType = (type: string) => dashboard.panels.find((p) => p.type === type)?.targets[0];
    expect(byType('timeseries')).toMatchObject({ queryType: 'metrics', groupBy: ['k8s_pod_name'] });
    expect(byType('flamegraph')).toMatchObject({ queryType: 'profile' });
    expect(byType('table')).toMatchObject({ queryType: 'table' });
    const diff = dashboard.panels.find((p) => p.targets[0].queryType === 'diff');
    expect(diff?.type).toBe('flamegraph');
    expect(diff?.targets[0]).toMatchObject({ left: {} });
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
  });

  it('lists single profiles and opens a node of a small flame graph in place', () => {
    const profiles = dashboard.panels.find((p) => p.targets[0].queryType === 'profiles');
    expect(profiles?.type).toBe('table');
    const focused = dashboard.panels.find((p) => p.targets[0].focusPath !== undefined);
    expect(focused?.type).toBe('flamegraph');
    expect(focused?.targets[0]).toMatchObject({
      queryType: 'profile',
      maxNodes: 100,
      focusPath: ['runtime.gcBgMarkWorker'],
    });
  });

  it("links to the pprof file of the service's CPU over the dashboard's range", () => {
    expect(dashboard.links).toHaveLength(1);
    const url = new URL(dashboard.links[0].url.replace('${service:percentencode}', 'checkout'), 'http://grafana');
    expect(url.pathname).toBe(`/api/datasources/uid/${ds.uid}/resources/pprof`);
    expect(url.searchParams.get('from')).toBe('${__from}');
    expect(url.searchParams.get('to')).toBe('${__to}');
    const query = JSON.parse(url.searchParams.get('query') ?? '') as Target;
    expect(checkAgainst(queryStruct, query, 'pprof link', GRAFANA_QUERY_KEYS)).toEqual([]);
    expect(query).toEqual({
      queryType: 'profile',
      profileTypeId: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
      labelSelector: '{service_name="checkout"}',
    });
  });

  it("shows the backend's column names: no panel renames a field", () => {
    // pkg/query/flame TableFrame names the top table's columns (DisplayNameFromDS), so Explore and every panel
    // show the same; the table sorts by one of those names.
    const functionsGo = read('pkg/query/flame/functions.go');
    const shown = [...functionsGo.matchAll(/DisplayNameFromDS: "(\w+)"/g)].map((m) => m[1]);
    expect(shown).toEqual(['Function', 'Self', 'Total']);
    for (const p of dashboard.panels) {
      const renames = (p.fieldConfig?.overrides ?? [])
        .flatMap((o) => o.properties ?? [])
        .filter((x) => x.id === 'displayName');
      expect([p.title, renames]).toEqual([p.title, []]);
    }
    const table = dashboard.panels.find((p) => p.type === 'table');
    expect(table?.options?.sortBy?.map((s) => s.displayName)).toEqual(['Self']);
    expect(shown).toContain(table?.options?.sortBy?.[0].displayName);
  });

  it('filters every panel by the service, namespace and pod variables', () => {
    for (const p of dashboard.panels) {
      const selector = p.targets[0].labelSelector;
      expect(selector).toMatch(/^\{.*\}$/);
      expect(selector).toContain('service_name="$service"');
      expect(selector).toContain('k8s_namespace_name=~"$namespace"');
      expect(selector).toContain('k8s_pod_name=~"$pod"');
      const referenced = [...selector.matchAll(/\$\{?(\w+)/g)].map((m) => m[1]);
      expect(referenced.filter((name) => !variables.includes(name))).toEqual([]);
    }
  });

  it('defines the variables as label values of this datasource', () => {
    expect(variables).toEqual(['service', 'namespace', 'pod']);
    const labels = dashboard.templating.list.map((v) => v.query.label);
    expect(labels).toEqual(['service_name', 'k8s_namespace_name', 'k8s_pod_name']);
    for (const v of dashboard.templating.list) {
      expect(v.type).toBe('query');
      expect(v.datasource).toEqual({ type: plugin.id, uid: ds.uid });
      expect(v.query).toMatchObject({ refId: 'FlamehouseVariableQuery', type: 'labelValues' });
      expect(v.query.profileTypeId).toMatch(PROFILE_TYPE);
      expect(Object.keys(v.query).filter((k) => !VARIABLE_QUERY_KEYS.includes(k))).toEqual([]);
      // Chained: a variable narrows by the variables before it, never after.
      const before = variables.slice(0, variables.indexOf(v.name));
      const used = [...String(v.query.labelSelector ?? '').matchAll(/\$(\w+)/g)].map((m) => m[1]);
      expect(used.filter((name) => !before.includes(name))).toEqual([]);
      // A multi-value variable's "All" must match pods without the label too.
      if (v.includeAll) {
        expect(v.allValue).toBe('.*');
      }
    }
  });
});

const hosts = JSON.parse(read('provisioning/dashboards/hosts.json')) as Dashboard & {
  templating: { list: Array<{ name: string; type: string; query: unknown; current?: { value?: string } }> };
};

describe('provisioning/dashboards/hosts.json', () => {
  it('queries the provisioned datasource with keys the backend reads', () => {
    expect(hosts.uid).not.toBe(dashboard.uid);
    for (const panel of hosts.panels) {
      expect(panel.datasource.uid).toBe(ds.uid);
      for (const t of panel.targets) {
        expect(t.datasource).toEqual({ type: plugin.id, uid: ds.uid });
        expect(checkAgainst(queryStruct, t, `${panel.title}: target`, GRAFANA_QUERY_KEYS)).toEqual([]);
        expect(t.profileTypeId).toMatch(PROFILE_TYPE);
        expect(t.labelSelector).toBe('{process_executable_name=~"$process"}');
      }
    }
    expect(new Set(hosts.panels.map((p) => p.id)).size).toBe(hosts.panels.length);
  });

  it('picks a view by process without a selector: a process variable and a group-by variable of identity labels', () => {
    const [process, groupBy] = hosts.templating.list;
    expect(process).toMatchObject({
      name: 'process',
      type: 'query',
      datasource: { type: plugin.id, uid: ds.uid },
      query: { type: 'labelValues', label: 'process_executable_name' },
      includeAll: true,
      allValue: '.*',
    });
    expect(groupBy).toMatchObject({ name: 'groupby', type: 'custom', current: { value: 'process_executable_name' } });
    const values = String(groupBy.query)
      .split(',')
      .map((o) => o.split(' : ')[1]);
    expect(values).toEqual(
      expect.arrayContaining(['process_executable_name', 'process_pid', 'thread_name', 'container_id'])
    );
    const byType = (type: string) => hosts.panels.filter((p) => p.type === type).map((p) => p.targets[0]);
    expect(byType('timeseries')).toEqual([expect.objectContaining({ queryType: 'metrics', groupBy: ['$groupby'] })]);
    expect(byType('flamegraph')).toEqual([expect.objectContaining({ queryType: 'profile', groupBy: ['$groupby'] })]);
    expect(byType('table').map((t) => t.queryType)).toEqual(['table', 'executables']);
    expect(byType('table')[0]).toMatchObject({ hideFrames: ['kernel'] });
  });
});

interface AlertQuery {
  refId: string;
  datasourceUid: string;
  relativeTimeRange?: { from: number; to: number };
  model: Record<string, unknown> & { refId: string; type?: string; expression?: string };
}

const alerting = parse(read('provisioning/alerting/flamehouse.yaml')) as {
  apiVersion: number;
  groups: Array<{
    orgId: number;
    name: string;
    folder: string;
    interval: string;
    rules: Array<{ uid: string; title: string; condition: string; data: AlertQuery[]; for: string }>;
  }>;
};
/** Keys of an alert query's model that Grafana's rule editor saves besides the datasource's own. */
const ALERT_MODEL_KEYS = [...GRAFANA_QUERY_KEYS, 'intervalMs', 'maxDataPoints'];

describe('provisioning/alerting', () => {
  const rules = alerting.groups.flatMap((g) => g.rules);

  it("is a Grafana alerting file of rules in the dashboard's folder", () => {
    expect(alerting.apiVersion).toBe(1);
    expect(plugin.alerting).toBe(true);
    expect(rules.length).toBeGreaterThan(0);
    expect(new Set(rules.map((r) => r.uid)).size).toBe(rules.length);
    for (const g of alerting.groups) {
      expect(g).toMatchObject({ orgId: 1, folder: 'Flamehouse' });
      expect(g.interval).toMatch(/^\d+[sm]$/);
    }
  });

  it('queries the provisioned datasource with keys the backend reads, then reduces and thresholds', () => {
    for (const rule of rules) {
      const refs = rule.data.map((d) => d.refId);
      expect(refs).toContain(rule.condition);
      const queries = rule.data.filter((d) => d.datasourceUid !== '__expr__');
      expect(queries.length).toBeGreaterThan(0);
      for (const q of queries) {
        expect(q.datasourceUid).toBe(ds.uid);
        expect(q.model.datasource).toEqual({ type: plugin.id, uid: ds.uid });
        expect(q.model.refId).toBe(q.refId);
        expect(checkAgainst(queryStruct, q.model, `${rule.title}: ${q.refId}`, ALERT_MODEL_KEYS)).toEqual([]);
        // Alert rules read numbers: time series (metrics) or a number per function (table).
        expect(['metrics', 'table']).toContain(q.model.queryType);
        expect(q.model.profileTypeId).toMatch(PROFILE_TYPE);
        expect(q.relativeTimeRange?.from).toBeGreaterThan(0);
      }
      for (const e of rule.data.filter((d) => d.datasourceUid === '__expr__')) {
        expect(refs).toContain(e.model.expression);
        expect(['reduce', 'threshold', 'math', 'classic_conditions']).toContain(e.model.type);
      }
    }
  });

  it('watches the demo service with a function filter and a ratio, and per pod', () => {
    const models = rules.flatMap((r) => r.data.map((d) => d.model));
    expect(models).toContainEqual(
      expect.objectContaining({ labelSelector: '{service_name="flamehouse"}', function: '[libchdb.so]', ratio: true })
    );
    expect(models).toContainEqual(expect.objectContaining({ groupBy: ['k8s_pod_name'] }));
  });
});

/** The query types of the backend (pkg/query/request.go constants). */
const goQueryTypes = [...read('pkg/query/request.go').matchAll(/^\s*Type\w+\s*=\s*"(\w+)"/gm)].map((m) => m[1]);

interface ExampleDatasource extends Omit<ProvisionedDatasource, 'jsonData' | 'secureJsonData'> {
  /** The URL of a datasource of another type (Grafana's Pyroscope datasource, Tempo). */
  url?: string;
  jsonData?: Record<string, unknown>;
  secureJsonData?: Record<string, string | null>;
  correlations?: Array<Record<string, unknown>>;
}

const EXAMPLE_FILES = readdirSync(join(root, 'provisioning/examples'))
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();
const examples = EXAMPLE_FILES.map((file) => ({
  file,
  text: read(`provisioning/examples/${file}`),
  parsed: parse(read(`provisioning/examples/${file}`)) as { apiVersion: number; datasources: ExampleDatasource[] },
}));
const exampleDatasources = examples.flatMap((e) => e.parsed.datasources.map((d) => ({ file: e.file, ...d })));
/** Every datasource Grafana gets when the examples are copied next to datasources.yml. */
const allDatasources: ExampleDatasource[] = [...datasources.datasources, ...exampleDatasources];
const byUid = (uid: unknown) => allDatasources.find((d) => d.uid === uid);

/** Every string of a value, with its path. */
function strings(value: unknown, path: string): Array<[string, string]> {
  if (typeof value === 'string') {
    return [[path, value]];
  }
  if (Array.isArray(value)) {
    return value.flatMap((v, i) => strings(v, `${path}[${i}]`));
  }
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => strings(v, `${path}.${k}`));
  }
  return [];
}

/** A link target as Grafana's datasource service describes a provisioned datasource. */
function target(d: ExampleDatasource): LinkTarget {
  return { uid: d.uid, type: d.type, name: d.name, jsonData: d.jsonData };
}

describe('provisioning/examples', () => {
  it('has the Tempo, ClickHouse plugin, correlations, exporter table and Pyroscope API examples, each a datasource file', () => {
    expect(EXAMPLE_FILES).toEqual([
      'clickhouse.yaml',
      'correlations.yaml',
      'otel-exporter.yaml',
      'pyroscope-api.yaml',
      'tempo.yaml',
    ]);
    for (const e of examples) {
      expect([e.file, e.parsed.apiVersion]).toEqual([e.file, 1]);
      expect(e.parsed.datasources.length).toBeGreaterThan(0);
    }
    expect(goQueryTypes).toEqual(expect.arrayContaining(['profile', 'traces', 'spans']));
  });

  it("points Grafana's own Pyroscope datasource at the API's default address, and a Tempo's trace to profiles at it", () => {
    const pyroscope = exampleDatasources.filter((d) => d.type === 'grafana-pyroscope-datasource');
    expect(pyroscope.map((d) => [d.uid, d.url])).toEqual([['flamehouse-pyroscope', 'http://127.0.0.1:4040']]);
    const tempo = byUid('tempo-pyroscope-api');
    const toProfiles = (tempo?.jsonData?.tracesToProfiles ?? {}) as { datasourceUid?: string; profileTypeId?: string };
    expect(toProfiles.datasourceUid).toBe('flamehouse-pyroscope');
    expect(toProfiles.profileTypeId).toBe(DEFAULTS.profileType);
  });

  it('loads next to datasources.yml: every uid and name is unique', () => {
    const uids = allDatasources.map((d) => d.uid);
    const names = allDatasources.map((d) => d.name);
    expect(uids.filter((u, i) => uids.indexOf(u) !== i)).toEqual([]);
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
  });

  it('doubles every literal $, which Grafana would otherwise take for an environment variable', () => {
    for (const d of exampleDatasources) {
      const { secureJsonData, ...rest } = d;
      const single = strings(rest, `${d.file}: ${d.uid}`).filter(([, v]) => v.replace(/\$\$/g, '').includes('$'));
      expect(single).toEqual([]);
      for (const [key, value] of Object.entries(secureJsonData ?? {})) {
        expect([key, value]).toEqual([key, expect.stringMatching(/^\$\{\w+\}$/)]);
      }
    }
  });

  it('configures each Flamehouse datasource with keys the backend reads, on the provisioned server', () => {
    const ours = exampleDatasources.filter((d) => d.type === plugin.id);
    expect(ours.map((d) => d.uid).sort()).toEqual(['flamehouse-clickhouse', 'flamehouse-otel', 'flamehouse-tempo']);
    const connection = ['host', 'port', 'protocol', 'username'];
    const pick = (j: Record<string, unknown> = {}) => Object.fromEntries(connection.map((k) => [k, j[k]]));
    for (const d of ours) {
      expect(jsonDataProblems(d.jsonData as ProvisionedDatasource['jsonData'])).toEqual([]);
      expect(pick(d.jsonData)).toEqual(pick(ds.jsonData));
      expect(d.secureJsonData).toEqual({ password: ds.secureJsonData.password });
      const profiles = (d.jsonData?.profiles ?? {}) as Record<string, unknown>;
      expect(metricsQueryError(unescapeDollars(String(profiles.metricsQuery ?? '')))).toBeUndefined();
    }
  });

  it('links each Flamehouse datasource to datasources whose query model the links know', () => {
    for (const d of exampleDatasources.filter((x) => x.type === plugin.id)) {
      const profiles = (d.jsonData?.profiles ?? {}) as ProfilesOptions;
      const ctx: LinkContext = {
        self: target(d),
        profiles: { ...profiles, metricsQuery: unescapeDollars(profiles.metricsQuery ?? '') },
      };
      const checkout = [{ name: 'service_name', op: '=' as const, value: 'checkout' }];
      const linked = (uid: string | undefined) => {
        const found = byUid(uid);
        expect([d.uid, uid, found?.uid]).toEqual([d.uid, uid, uid]);
        return target(found!);
      };
      if (profiles.tracesDatasourceUid) {
        expect(traceQuery(linked(profiles.tracesDatasourceUid), '${__value.raw}', ctx)).toBeDefined();
      }
      if (profiles.logsDatasourceUid) {
        expect(logsQuery(linked(profiles.logsDatasourceUid), checkout, ctx)).toBeDefined();
      }
      if (profiles.metricsDatasourceUid) {
        expect(metricsQuery(linked(profiles.metricsDatasourceUid), checkout, ctx)).toBeDefined();
      }
    }
    const tempoLinked = byUid('flamehouse-tempo')?.jsonData?.profiles as ProfilesOptions;
    expect(tempoLinked).toMatchObject({ tracesDatasourceUid: 'tempo', logsDatasourceUid: 'loki' });
    expect(tempoLinked.metricsDatasourceUid).toBe('prometheus');
  });

  it("reads the Collector exporter's profiles table, and says what it needs", () => {
    const example = examples.find((e) => e.file === 'otel-exporter.yaml')!;
    expect(example.parsed.datasources.map((d) => d.uid)).toEqual(['flamehouse-otel']);
    const otel = byUid('flamehouse-otel')!;
    expect(otel).toMatchObject({ type: plugin.id, name: 'Flamehouse (exporter table)', access: 'proxy' });
    // No tablePrefix or tenant: they are ignored with schema otel, and setting them would mislead.
    expect(otel.jsonData?.profiles).toEqual({
      schema: goConst('SchemaOTel'),
      database: ds.jsonData.profiles.database,
      otelTable: goConst('DefaultOTelTable'),
      defaultProfileType: ds.jsonData.profiles.defaultProfileType,
    });
    // The comment names what must write the table, and the docs.
    const comment = example.text.slice(0, example.text.indexOf('apiVersion'));
    for (const needed of [
      'OpenTelemetry Collector',
      'ClickHouse exporter',
      'otel_profiles',
      'docs/otel-exporter-schema.md',
    ]) {
      expect([needed, comment.replace(/\s*\n#\s*/g, ' ')]).toEqual([needed, expect.stringContaining(needed)]);
    }
  });

  it('reads the same traces table in Flamehouse and in the ClickHouse plugin', () => {
    const clickhouse = byUid('clickhouse-otel')!;
    expect(clickhouse.type).toBe('grafana-clickhouse-datasource');
    const traces = clickhouse.jsonData?.traces as Record<string, unknown>;
    const profiles = byUid('flamehouse-clickhouse')?.jsonData?.profiles as ProfilesOptions;
    expect(profiles.tracesDatasourceUid).toBe(clickhouse.uid);
    expect([traces.defaultDatabase, traces.defaultTable]).toEqual([profiles.tracesDatabase, profiles.tracesTable]);
    expect(clickhouse.jsonData?.logs).toMatchObject({ defaultTable: 'otel_logs', otelEnabled: true });
  });

  it("points Tempo's trace to profiles at Flamehouse with a query our model reads", () => {
    const tempo = byUid('tempo')!;
    const opts = tempo.jsonData?.tracesToProfiles as {
      datasourceUid: string;
      tags: Array<{ key: string; value?: string }>;
      profileTypeId: string;
      customQuery: boolean;
    };
    expect(byUid(opts.datasourceUid)?.type).toBe(plugin.id);
    expect(opts.profileTypeId).toMatch(PROFILE_TYPE);
    expect(opts.customQuery).toBe(false);
    expect(opts.tags).toEqual([{ key: 'service.name', value: 'service_name' }]);
    // The query Tempo's link and span flame graph build (docs/navigation.md), after interpolation.
    const built = {
      refId: 'profile',
      queryType: 'profile',
      labelSelector: '{service_name="checkout"}',
      profileTypeId: opts.profileTypeId,
      spanSelector: ['00000000000000a1'],
      groupBy: [],
    };
    expect(checkAgainst(queryStruct, built, 'tracesToProfiles query', GRAFANA_QUERY_KEYS)).toEqual([]);
  });

  it('correlates Tempo spans with their flame graph in Flamehouse', () => {
    const source = byUid('tempo-correlations')!;
    expect(source.type).toBe('tempo');
    expect(source.correlations).toHaveLength(1);
    for (const c of source.correlations ?? []) {
      // Grafana's provisioning reads label and description as strings, and transformations only inside config.
      expect(typeof c.label).toBe('string');
      expect(typeof c.description).toBe('string');
      expect(c.transformations).toBeUndefined();
      expect(c.type).toBe('query');
      expect(byUid(c.targetUID)?.type).toBe(plugin.id);
      const config = c.config as { type: string; field: string; target: Record<string, unknown> };
      expect(config).toMatchObject({ type: 'query', field: 'traceID' });
      const query = JSON.parse(unescapeDollars(JSON.stringify(config.target))) as Record<string, unknown>;
      expect(checkAgainst(queryStruct, query, 'correlation target', GRAFANA_QUERY_KEYS)).toEqual([]);
      expect(goQueryTypes).toContain(query.queryType);
      expect(query).toMatchObject({ queryType: 'profile', spanSelector: ['${spanID}'], labelSelector: '{}' });
      expect(query.profileTypeId).toMatch(PROFILE_TYPE);
    }
  });
});
