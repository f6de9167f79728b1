import type { Locator, Page, Response } from '@playwright/test';
import { readFileSync } from 'node:fs';

/**
 * What the browser tests share: the provisioning they read, the demo data
 * they expect, and reading query responses. The Grafana under test must have
 * the plugin and provisioning/ loaded and its datasource must reach a
 * Flamehouse ClickHouse with data: `flamehouse run` profiles itself as
 * service "flamehouse" every 15 s (set FLAMEHOUSE_E2E_SERVICE for another).
 */

export const SKIP_REASON =
  process.env.FLAMEHOUSE_E2E_SKIP_REASON || 'GRAFANA_URL is not set: no Grafana to run the browser tests against';

export const DATASOURCES_FILE = 'datasources.yml';
export const DASHBOARD_FILE = 'flamehouse.json';

export const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
export const SERVICE = process.env.FLAMEHOUSE_E2E_SERVICE || 'flamehouse';

/** The flame graph and top table of Grafana's flame graph component. */
export const FLAME_GRAPH = 'canvas[data-testid="flameGraph"]';
export const TOP_TABLE = 'topTable';

export interface DatasourceRef {
  uid: string;
  type: string;
}

export interface Query {
  refId: string;
  queryType: 'profile' | 'metrics' | 'both' | 'table' | 'spans' | 'traces' | 'diff';
  profileTypeId: string;
  labelSelector?: string;
  groupBy?: string[];
  traceId?: string;
  /** A diff query's baseline. */
  left?: { labelSelector?: string; offset?: string; from?: string; to?: string };
}

export interface Range {
  from: string;
  to: string;
}

/**
 * The hour up to a minute ago, in epoch milliseconds: queries over it see the
 * same samples however late they run, as comparisons need.
 */
export function settledHour(): Range {
  const to = Date.now() - 60_000;
  return { from: String(to - 3_600_000), to: String(to) };
}

/** A query of another datasource's model (Tempo's TraceQL, say): its refId and its own keys. */
export type ForeignQuery = { refId: string } & Record<string, unknown>;

/** An Explore URL that runs the queries on the datasource, by default over the last hour. */
export function exploreUrl(
  ds: DatasourceRef,
  queries: Array<Query | ForeignQuery>,
  range: Range = { from: 'now-1h', to: 'now' }
): string {
  const panes = {
    flamehouse: {
      datasource: ds.uid,
      queries: queries.map((q) => ({ ...q, datasource: { type: ds.type, uid: ds.uid } })),
      range,
    },
  };
  return `/explore?schemaVersion=1&orgId=1&panes=${encodeURIComponent(JSON.stringify(panes))}`;
}

/** Waits for the /api/ds/query response to the query with this label selector. */
export function queryResponse(page: Page, labelSelector: string): Promise<Response> {
  return queryResponseWhere(page, (q) => q.labelSelector === labelSelector);
}

/** Waits for the /api/ds/query response to a request with a query that matches. */
export function queryResponseWhere(page: Page, match: (q: Partial<Query>) => boolean): Promise<Response> {
  return page.waitForResponse((resp) => {
    if (!resp.url().includes('/api/ds/query')) {
      return false;
    }
    const body = resp.request().postDataJSON() as { queries?: Array<Partial<Query>> } | null;
    return !!body?.queries?.some(match);
  });
}

export interface FrameJSON {
  schema: { name?: string; fields: Array<{ name: string }> };
  data?: { values: unknown[][] };
}

/** The frames of one refId in a query response; fails on a query error. */
export async function framesOf(resp: Pick<Response, 'json'>, refId: string): Promise<FrameJSON[]> {
  const body = (await resp.json()) as { results: Record<string, { error?: string; frames?: FrameJSON[] }> };
  const result = body.results[refId];
  if (!result) {
    throw new Error(`no result for ${refId}`);
  }
  if (result.error) {
    throw new Error(`query ${refId} failed: ${result.error}`);
  }
  return result.frames ?? [];
}

/** A field's values, by name. */
export function column(frame: FrameJSON, name: string): unknown[] {
  const i = frame.schema.fields.findIndex((f) => f.name === name);
  if (i < 0) {
    throw new Error(`frame ${frame.schema.name} has no field ${name}`);
  }
  return frame.data?.values[i] ?? [];
}

/** The root total of a flame graph response frame (0 when empty). */
export function flameGraphTotal(frames: FrameJSON[]): number {
  const frame = frames.find((f) => f.schema.name === 'response');
  if (!frame) {
    throw new Error('no flame graph frame ("response") in the result');
  }
  const values = column(frame, 'value');
  return values.length > 0 ? Number(values[0]) : 0;
}

/** The datasources of the provisioning the Grafana under test runs with. */
export const FLAMEHOUSE: DatasourceRef = { uid: 'flamehouse', type: 'flamehouse-profiles-datasource' };
/** The exporter-table example (provisioning/examples/otel-exporter.yaml): schema otel. */
export const FLAMEHOUSE_OTEL: DatasourceRef = { uid: 'flamehouse-otel', type: 'flamehouse-profiles-datasource' };

export const HEAP = 'memory:inuse_space:bytes:space:bytes';

/**
 * Runs queries through Grafana's query API, as a panel does, and returns the response body. The oracle of what the
 * browser shows: the same backend answer, read without the UI.
 */
export async function dsQuery(
  page: Page,
  ds: DatasourceRef,
  queries: Array<Partial<Query> & Record<string, unknown>>,
  range: Range = settledHour()
): Promise<Pick<Response, 'json'>> {
  const resp = await page.request.post('/api/ds/query', {
    data: {
      from: range.from,
      to: range.to,
      queries: queries.map((q) => ({ refId: 'A', datasource: ds, ...q })),
    },
  });
  if (!resp.ok() && resp.status() !== 400) {
    throw new Error(`/api/ds/query answered ${resp.status()}: ${await resp.text()}`);
  }
  return resp;
}

/** Saves a screenshot of a key view among the test artifacts (FLAMEHOUSE_E2E_ARTIFACTS/screenshots). */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.FLAMEHOUSE_E2E_ARTIFACTS || 'test-results/e2e';
  await page.screenshot({ path: `${dir}/screenshots/${name}.png`, fullPage: true });
}

/** What scripts/e2e.sh loaded through a real Collector into otel_profiles and into Flamehouse's tables. */
export interface ExporterFixture {
  service: string;
  profileType: string;
  from: number;
  to: number;
  cpuNanos: number;
}

/** The exporter-table fixture, or undefined when the Grafana under test was not set up by scripts/e2e.sh. */
export function exporterFixture(): ExporterFixture | undefined {
  const file = process.env.FLAMEHOUSE_E2E_EXPORTER_FIXTURE;
  return file ? (JSON.parse(readFileSync(file, 'utf8')) as ExporterFixture) : undefined;
}

export const EXAMPLES_REASON =
  "FLAMEHOUSE_E2E_EXAMPLES is not set: copy provisioning/examples/*.yaml into Grafana's provisioning/datasources and set it to check them";

export const FIXTURE_REASON =
  'FLAMEHOUSE_E2E_EXPORTER_FIXTURE is not set: scripts/e2e.sh loads the exporter-table fixture through a real Collector';

const NANOS: Record<string, number> = {
  ns: 1,
  µs: 1e3,
  ms: 1e6,
  s: 1e9,
  min: 60e9,
  mins: 60e9,
  hour: 3600e9,
  hours: 3600e9,
  day: 86400e9,
  days: 86400e9,
};
const SHORT: Record<string, number> = { '': 1, K: 1e3, Mil: 1e6, Bil: 1e9, Tri: 1e12 };

/**
 * Reads the flame graph's header, e.g. "1.97 s | 1.97 Bil samples (Time)": Grafana's rendering of the root's value
 * with the frame's unit, then the raw root value in Grafana's short scale, then the unit's title.
 */
export function parseFlameGraphHeader(text: string): { nanos: number; raw: number; title: string } {
  const m =
    /^\s*([\d.]+)\s*(ns|µs|ms|s|mins?|hours?|days?)\s*\|\s*([\d.]+)\s*(K|Mil|Bil|Tri|)\s*samples\s*\((\w+)\)/.exec(
      text
    );
  if (!m) {
    throw new Error(`not a flame graph header of a time: ${JSON.stringify(text)}`);
  }
  return { nanos: Number(m[1]) * NANOS[m[2]], raw: Number(m[3]) * SHORT[m[4]], title: m[5] };
}

/** The flame graph's header pill: "<value> | <n> samples (<unit title>)". */
export function flameGraphHeader(page: Page) {
  return page.getByText(/ samples \(/).first();
}

/** Whether two numbers agree to the three significant digits Grafana shows. */
export function closeTo(shown: number, exact: number): boolean {
  return Math.abs(shown - exact) <= Math.max(1, Math.abs(exact) * 0.006);
}

/**
 * Self and total per function of a flame graph frame (level, value, self, label): a function's total counts once per
 * path, as Grafana's top table counts it.
 */
export function topFunctions(frame: FrameJSON): Map<string, { self: number; total: number }> {
  const level = column(frame, 'level').map(Number);
  const value = column(frame, 'value').map(Number);
  const self = column(frame, 'self').map(Number);
  const label = labelsOf(frame);
  const out = new Map<string, { self: number; total: number }>();
  const path: string[] = [];
  for (let i = 0; i < level.length; i++) {
    path.length = level[i];
    const name = label[i];
    const entry = out.get(name) ?? { self: 0, total: 0 };
    entry.self += self[i];
    if (!path.includes(name)) {
      entry.total += value[i];
    }
    out.set(name, entry);
    path.push(name);
  }
  return out;
}

/** The label column of a frame, resolving an enum field to its texts. */
export function labelsOf(frame: FrameJSON): string[] {
  const i = frame.schema.fields.findIndex((f) => f.name === 'label');
  const values = frame.data?.values[i] ?? [];
  const field = frame.schema.fields[i] as { config?: { type?: { enum?: { text?: string[] } } } };
  const text = field.config?.type?.enum?.text;
  return values.map((v) => (text ? text[Number(v)] : String(v)));
}

/** The ClickHouse that scripts/e2e.sh started (FLAMEHOUSE_E2E_CLICKHOUSE), or undefined. */
export const CLICKHOUSE = process.env.FLAMEHOUSE_E2E_CLICKHOUSE;

/**
 * Runs one SQL statement on the test's ClickHouse and returns its rows (TabSeparated, split into cells): the oracle
 * of what a query through Grafana must answer.
 */
export async function clickhouseRows(sql: string): Promise<string[][]> {
  if (!CLICKHOUSE) {
    throw new Error('FLAMEHOUSE_E2E_CLICKHOUSE is not set: scripts/e2e.sh sets it to its ClickHouse');
  }
  const resp = await fetch(CLICKHOUSE, { method: 'POST', body: sql });
  const text = await resp.text();
  if (!resp.ok) {
    throw new Error(`ClickHouse answered ${resp.status} to ${sql}: ${text.trim()}`);
  }
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\t'));
}

/**
 * Picks an option of a Grafana Select by a text it shows: types the text to filter the (virtualized) menu, then
 * clicks the option with that exact text. Label names show in OpenTelemetry form ("service.name") with the selector
 * name ("service_name") as the option's description.
 */
export async function choose(page: Page, select: Locator, text: string) {
  await select.locator('input').click();
  await select.locator('input').fill(text);
  await page
    .getByRole('option')
    .filter({ has: page.getByText(text, { exact: true }) })
    .first()
    .click();
}
