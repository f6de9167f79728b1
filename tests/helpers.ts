import type { Page, Response } from '@playwright/test';

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
  queryType: 'profile' | 'metrics' | 'both' | 'table' | 'spans' | 'traces';
  profileTypeId: string;
  labelSelector?: string;
  groupBy?: string[];
  traceId?: string;
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

/** An Explore URL that runs the queries on the datasource, by default over the last hour. */
export function exploreUrl(ds: DatasourceRef, queries: Query[], range: Range = { from: 'now-1h', to: 'now' }): string {
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

interface FrameJSON {
  schema: { name?: string; fields: Array<{ name: string }> };
  data?: { values: unknown[][] };
}

/** The frames of one refId in a query response; fails on a query error. */
export async function framesOf(resp: Response, refId: string): Promise<FrameJSON[]> {
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
