/**
 * @jest-environment-options {"customExportConditions": ["node", "require", "default"]}
 */
// (yaml's browser build is an ES module; this test reads files, so it takes the Node build.)
import { readFileSync } from 'fs';
import { join } from 'path';
import { parse } from 'yaml';

import { DEFAULTS, JSON_DATA_KEYS, PROFILES_KEYS, SECURE_HEADER_PREFIX, SECURE_KEYS } from './options';
import plugin from './plugin.json';

/**
 * The provisioning examples against the code that reads them: the datasource
 * YAML against the backend's settings structs (pkg/plugin/settings.go) and
 * the frontend's option types; the example dashboard against the backend's
 * query model (pkg/query/request.go). The Go files are read as text, so a
 * renamed or added key fails here.
 */

const root = join(__dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** Keys the frontend writes that the backend does not read (yet); it ignores unknown keys. */
const FRONTEND_ONLY_PROFILES_KEYS = ['tracesDatasourceUid', 'logsDatasourceUid'];

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
/** The same server, on the OpenTelemetry Collector ClickHouse exporter's profiles table. */
const otelDs = datasources.datasources[1];

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

  it('provisions two datasources of this plugin: Flamehouse tables, then the exporter table', () => {
    expect(datasources.apiVersion).toBe(1);
    expect(datasources.datasources).toHaveLength(2);
    expect(ds).toMatchObject({ type: plugin.id, uid: 'flamehouse', access: 'proxy' });
    expect(otelDs).toMatchObject({ type: plugin.id, uid: 'flamehouse-otel', access: 'proxy' });
    expect(new Set(datasources.datasources.map((d) => d.name)).size).toBe(2);
  });

  it.each([0, 1])('datasource %d uses only keys the backend reads, with types it decodes', (i) => {
    expect(jsonDataProblems(datasources.datasources[i].jsonData)).toEqual([]);
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

  it('names the schemas and the exporter table default as pkg/query/layout.go does', () => {
    expect(goConst('SchemaFlamehouse')).toBe('flamehouse');
    expect(goConst('SchemaOTel')).toBe('otel');
    expect(goConst('DefaultOTelTable')).toBe(DEFAULTS.otelTable);
    expect(DEFAULTS.schema).toBe(goConst('SchemaFlamehouse'));
  });

  it('points the exporter-table datasource at the same server, on the exporter table', () => {
    const connection = ['host', 'port', 'protocol', 'secure', 'username'];
    const pick = (j: Record<string, unknown>) => Object.fromEntries(connection.map((k) => [k, j[k]]));
    expect(pick(otelDs.jsonData)).toEqual(pick(ds.jsonData));
    // No tablePrefix or tenant: they are ignored with schema otel, and setting them would mislead.
    expect(otelDs.jsonData.profiles).toEqual({
      schema: 'otel',
      database: ds.jsonData.profiles.database,
      otelTable: DEFAULTS.otelTable,
    });
    expect(otelDs.secureJsonData).toEqual({ password: ds.secureJsonData.password });
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
  panels: Array<{ id: number; type: string; title: string; datasource: { uid: string }; targets: Target[] }>;
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

  it('has a time series by pod, a flame graph and a top-functions table', () => {
    const byType = (type: string) => dashboard.panels.find((p) => p.type === type)?.targets[0];
    expect(byType('timeseries')).toMatchObject({ queryType: 'metrics', groupBy: ['k8s_pod_name'] });
    expect(byType('flamegraph')).toMatchObject({ queryType: 'profile' });
    expect(byType('table')).toMatchObject({ queryType: 'table' });
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
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
