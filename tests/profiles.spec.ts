import { expect, test } from './fixtures';
import type { Page, Response } from '@playwright/test';
import { execFileSync } from 'node:child_process';

import { selectors } from '../src/selectors';
import {
  CPU,
  DATASOURCES_FILE,
  FLAME_GRAPH,
  FrameJSON,
  Query,
  SERVICE,
  SKIP_REASON,
  clickhouseRows,
  column,
  dsQuery,
  exploreUrl,
  flameGraphTotal,
  framesOf,
  labelsOf,
  queryResponseWhere,
  screenshot,
  settledHour,
  topFunctions,
} from './helpers';

// Browser tests need a running Grafana with the built plugin and data in
// ClickHouse (docs/grafana.md, "End-to-end tests").
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const service = `{service_name="${SERVICE}"}`;
/** Query types and keys of this spec that helpers' Query does not list. */
type BeyondQuery = Omit<Query, 'queryType'> & {
  queryType: Query['queryType'] | 'profiles';
  maxNodes?: number;
  focusPath?: string[];
  limit?: number;
};

/**
 * `go tool pprof -top` on a file: flat and cumulative nanoseconds per function, and the total it says the profile
 * holds. The Go toolchain is the one scripts/e2e.sh builds with.
 */
function pprofTop(file: string): { flat: Map<string, number>; cum: Map<string, number>; total: number } {
  const out = execFileSync(
    'go',
    // -symbolize=none: the file is symbolized; and pprof would otherwise shorten names it takes for C++ (Go's generic
    // instances, with [...]) by dropping what is in parentheses, which the table shows as recorded.
    [
      'tool',
      'pprof',
      '-top',
      '-symbolize=none',
      '-nodecount=100000',
      '-nodefraction=0',
      '-edgefraction=0',
      '-unit=ns',
      file,
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }
  );
  const flat = new Map<string, number>();
  const cum = new Map<string, number>();
  const total = Number(/of (\d+)ns total/.exec(out)?.[1] ?? NaN);
  let header = false;
  for (const line of out.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[0] === 'flat') {
      header = true;
      continue;
    }
    if (!header || fields.length < 6) {
      continue;
    }
    const name = fields
      .slice(5)
      .join(' ')
      .replace(/ \(inline\)$/, '');
    flat.set(name, (flat.get(name) ?? 0) + Number(fields[0].replace(/ns$/, '')));
    cum.set(name, (cum.get(name) ?? 0) + Number(fields[3].replace(/ns$/, '')));
  }
  return { flat, cum, total };
}

/** A flame graph frame's rows by path from the root's children ("a;b"), "other" rows as "<parent>;other". */
function rowsByPath(frame: FrameJSON): Map<string, { value: number; self: number }> {
  const level = column(frame, 'level').map(Number);
  const value = column(frame, 'value').map(Number);
  const self = column(frame, 'self').map(Number);
  const label = labelsOf(frame);
  const out = new Map<string, { value: number; self: number }>();
  const path: string[] = [];
  for (let i = 1; i < level.length; i++) {
    path.length = level[i] - 1;
    path.push(label[i]);
    out.set(path.join(';'), { value: value[i], self: self[i] });
  }
  return out;
}

const responseFrame = async (resp: Pick<Response, 'json'>) =>
  (await framesOf(resp, 'A')).find((f) => f.schema.name === 'response')!;

/**
 * The hour up to a minute ago, once it holds the query's data: on a fresh start the demo's first profiles are
 * younger than that minute (Grafana's flame graph cannot draw an empty answer).
 */
async function settledWithData(page: Page, ds: { uid: string; type: string }, query: BeyondQuery) {
  let range = settledHour();
  await expect
    .poll(
      async () => {
        range = settledHour();
        const frames = await framesOf(await dsQuery(page, ds, [query as Partial<Query>], range), 'A');
        return frames.length > 0 ? Math.max(...frames.map((f) => (f.data?.values[0] ?? []).length)) : 0;
      },
      { message: 'the demo profiles itself: data a minute old', timeout: 120_000 }
    )
    .toBeGreaterThan(1);
  return range;
}

/** Opens Explore on one query and returns the response to it. */
async function explore(page: Page, ds: { uid: string; type: string }, query: BeyondQuery, range = settledHour()) {
  const response = queryResponseWhere(page, (q) => q.queryType === query.queryType && q.labelSelector === service);
  await page.goto(exploreUrl(ds, [query as Query], range));
  return response;
}

test('Download pprof from Explore: go tool pprof -top on the file equals the top table of the same query', async ({
  readProvisionedDataSource,
  page,
}, testInfo) => {
  test.setTimeout(180_000); // the wait for data a minute old, on a fresh start
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const query: BeyondQuery = { refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: service };
  const range = await settledWithData(page, ds, query);
  await (await explore(page, ds, query, range)).finished();
  await expect(page.locator(FLAME_GRAPH).first()).toBeVisible();

  const download = page.waitForEvent('download');
  await page.getByTestId(selectors.query.downloadPprof).click();
  const file = await download;
  expect(file.suggestedFilename()).toMatch(new RegExp(`^flamehouse-process_cpu-${SERVICE}-\\d{8}T\\d{6}Z\\.pb\\.gz$`));
  const path = testInfo.outputPath('explore.pb.gz');
  await file.saveAs(path);
  const top = pprofTop(path);

  const [table] = await framesOf(
    await dsQuery(page, ds, [{ ...query, queryType: 'table', limit: 10000 } as Partial<Query>], range),
    'A'
  );
  const labels = column(table, 'label').map(String);
  const self = column(table, 'self').map(Number);
  const total = column(table, 'total').map(Number);
  expect(labels.length, 'the demo profiles itself: functions in the hour').toBeGreaterThan(10);
  expect(top.flat, "pprof -top's flat per function is the table's self").toEqual(
    new Map(labels.map((l, i) => [l, self[i]]))
  );
  expect(top.cum, "pprof -top's cum per function is the table's total").toEqual(
    new Map(labels.map((l, i) => [l, total[i]]))
  );
  const flame = await responseFrame(await dsQuery(page, ds, [query as Partial<Query>], range));
  expect(top.total, "the file's total is the flame graph's").toBe(flameGraphTotal([flame]));
  await screenshot(page, 'explore-pprof-download');
});

test('Open "other" in place: the opened subtree shows in full, the rest as it was, totals exact', async ({
  readProvisionedDataSource,
  page,
}) => {
  test.setTimeout(180_000); // the wait for data a minute old, on a fresh start
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const budget = 60;
  const query: BeyondQuery = {
    refId: 'A',
    queryType: 'profile',
    profileTypeId: CPU,
    labelSelector: service,
    maxNodes: budget,
  };
  const range = await settledWithData(page, ds, query);
  const plain = rowsByPath(await responseFrame(await explore(page, ds, query, range)));
  await expect(page.locator(FLAME_GRAPH).first()).toBeVisible();
  const full = rowsByPath(
    await responseFrame(await dsQuery(page, ds, [{ ...query, maxNodes: 1 << 20 } as Partial<Query>], range))
  );

  // The "other" row whose parent has the smallest subtree that the budget can hold, but holds more than shown.
  const below = (parent: string) => [...full.keys()].filter((p) => p.startsWith(parent + ';'));
  const candidates = [...plain.keys()]
    .filter((p) => p.endsWith(';other'))
    .map((p) => p.slice(0, -';other'.length))
    .map((parent) => ({ parent, size: below(parent).length }))
    .filter((c) => c.size < budget)
    .sort((a, b) => a.size - b.size);
  expect(candidates.length, 'the truncated flame graph has an "other" row under a small subtree').toBeGreaterThan(0);
  const { parent, size } = candidates[0];
  const shown = parent.split(';').join(' › ');

  // The picker lists the largest "other" rows; typing the parent's name finds the one under it.
  const opened = queryResponseWhere(page, (q) => (q as BeyondQuery).focusPath !== undefined);
  const picker = page.getByTestId(selectors.query.focusPicker);
  await picker.click();
  await expect(page.getByRole('option').first(), 'the last answer\'s "other" rows').toContainText('other under ');
  await picker.locator('input').fill(parent.split(';').at(-1)!);
  const escaped = shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  await page
    .getByRole('option', { name: new RegExp(`^other under ${escaped}(?! ›)`) })
    .first()
    .click();
  const focused = rowsByPath(await responseFrame(await opened));
  await expect(page.getByTestId(selectors.query.focusPath)).toContainText(`Opened: ${shown}`);
  await expect(page.locator(FLAME_GRAPH).first()).toBeVisible();

  const subtree = [...focused.keys()].filter((p) => p.startsWith(parent + ';'));
  expect(subtree.length, "the opened node's whole subtree").toBe(size);
  for (const p of subtree) {
    expect(focused.get(p), `${p}: as in the untruncated flame graph`).toEqual(full.get(p));
  }
  for (const [p, r] of plain) {
    if (!p.startsWith(parent + ';') && p !== parent && !parent.startsWith(p + ';')) {
      expect(focused.get(p), `${p}: the rest of the graph as it was`).toEqual(r);
    }
  }
  const root = (m: Map<string, { value: number }>) =>
    [...m.entries()].filter(([p]) => !p.includes(';')).reduce((s, [, r]) => s + r.value, 0);
  expect(root(focused), 'the total stays exact').toBe(root(full));
  await screenshot(page, 'explore-open-other');
});

test('List profiles and open one: its flame graph and pprof file hold that profile, as ClickHouse lists it', async ({
  readProvisionedDataSource,
  page,
  explorePage,
}, testInfo) => {
  test.setTimeout(180_000); // the wait for data a minute old, on a fresh start
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const query: BeyondQuery = { refId: 'A', queryType: 'profiles', profileTypeId: CPU, labelSelector: service };
  const range = await settledWithData(page, ds, query);
  const [frame] = await framesOf(await explore(page, ds, query, range), 'A');
  expect(frame.schema.name).toBe('profiles');
  const times = column(frame, 'time').map(Number);
  const totals = column(frame, 'total').map(Number);
  const samples = column(frame, 'samples').map(Number);
  expect(times.length, 'the demo sends a CPU profile every 15 s').toBeGreaterThan(0);

  // ClickHouse's own list of the profiles in the range: as many (up to the default limit of 100), the newest first.
  const rows = await clickhouseRows(
    `SELECT toUnixTimestamp64Milli(Timestamp), Total, Events FROM otel.otel_profile_profiles FINAL
     WHERE ServiceName = '${SERVICE}' AND ProfileType = '${CPU}'
       AND Timestamp >= fromUnixTimestamp64Milli(${range.from}) AND Timestamp < fromUnixTimestamp64Milli(${range.to})
     ORDER BY Timestamp DESC LIMIT 100`
  );
  expect(times).toEqual(rows.map((r) => Number(r[0])));
  expect(totals).toEqual(rows.map((r) => Number(r[1])));
  expect(samples).toEqual(rows.map((r) => Number(r[2])));

  await expect(explorePage.tablePanel.fieldNames).toContainText([
    'Time',
    'Service',
    'Resource',
    'Duration',
    'Samples',
    'Total',
    'pprof',
  ]);
  await expect(explorePage.tablePanel.fieldNames).not.toContainText(['seriesId']);
  await expect(page.getByText('Type: Profiles')).toBeVisible();
  await screenshot(page, 'explore-profiles');

  // The newest profile's file. The link opens the pprof resource in a new tab, which saves it (or shows the error).
  const answered = page
    .context()
    .waitForEvent(
      'response',
      (resp) => new URL(resp.url()).pathname === `/api/datasources/uid/${ds.uid}/resources/pprof`
    );
  const download = page.waitForEvent('download');
  await explorePage.tablePanel.locator.locator('a[title="Download pprof"]').first().click();
  const resp = await answered;
  expect(resp.status(), `the profile's pprof link: ${resp.ok() ? '' : await resp.text()}`).toBe(200);
  const file = await download;
  const path = testInfo.outputPath('profile.pb.gz');
  await file.saveAs(path);
  const top = pprofTop(path);
  expect(top.total, "the file holds the profile's total").toBe(totals[0]);

  // The newest profile's flame graph.
  const opened = queryResponseWhere(page, (q) => q.queryType === 'profile' && !!(q as { seriesId?: string }).seriesId);
  await explorePage.tablePanel.locator.locator('a[title="Flame graph of this profile"]').first().click();
  const flame = await framesOf(await opened, 'A');
  expect(flameGraphTotal(flame), "the flame graph's total is the profile's").toBe(totals[0]);
  const functions = topFunctions(flame.find((f) => f.schema.name === 'response')!);
  expect(
    [...functions.values()].reduce((s, f) => s + f.self, 0),
    'self values add up to the profile'
  ).toBe(totals[0]);
  await expect(page.locator(FLAME_GRAPH).first()).toBeVisible();
  await screenshot(page, 'explore-profile-flame-graph');
});
