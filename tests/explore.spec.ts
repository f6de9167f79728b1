import { expect, test } from './fixtures';
import type { Locator, Page } from '@playwright/test';

import {
  CPU,
  DATASOURCES_FILE,
  FIXTURE_REASON,
  FLAMEHOUSE,
  FLAMEHOUSE_OTEL,
  FLAME_GRAPH,
  FrameJSON,
  HEAP,
  SERVICE,
  SKIP_REASON,
  TOP_TABLE,
  closeTo,
  column,
  dsQuery,
  exploreUrl,
  exporterFixture,
  flameGraphHeader,
  flameGraphTotal,
  framesOf,
  labelsOf,
  parseFlameGraphHeader,
  queryResponse,
  screenshot,
  settledHour,
  topFunctions,
} from './helpers';

// Browser tests need a running Grafana with the built plugin and data in
// ClickHouse (docs/grafana.md, "End-to-end tests").
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const service = `{service_name="${SERVICE}"}`;

/** The flame graph response frame of a query's frames. */
function flameFrame(frames: FrameJSON[]): FrameJSON {
  const f = frames.find((x) => x.schema.name === 'response');
  if (!f) {
    throw new Error('no flame graph frame');
  }
  return f;
}

/** Shows the top table beside the flame graph, whatever the viewport's width made Grafana pick. */
async function showBoth(page: Page) {
  const both = page.getByRole('radio', { name: 'Both', exact: true });
  if ((await both.count()) > 0) {
    await both.check({ force: true });
  }
}

/** The cells' texts of the top table's first row: actions, symbol, self, total. */
async function firstTopRow(topTable: Locator): Promise<string[]> {
  const row = topTable.locator('[data-testid="data-testid table body"] [role="row"]').first();
  await expect(row).toBeVisible();
  return (await row.locator('[role="cell"]').allTextContents()).map((t) => t.trim());
}

/** A time as Grafana shows it ("70 ms", "1.97 s"), in nanoseconds. */
function nanosOf(text: string): number {
  return parseFlameGraphHeader(`${text} | 1 samples (Time)`).nanos;
}

/** The function (or one of the functions) with the most self value, and that value. */
function topSelf(frame: FrameJSON): { names: string[]; self: number } {
  let best = -1;
  let names: string[] = [];
  for (const [name, v] of topFunctions(frame)) {
    if (v.self > best) {
      best = v.self;
      names = [name];
    } else if (v.self === best) {
      names.push(name);
    }
  }
  return { names, self: best };
}

test('Explore draws the flame graph and its top table with the values the backend returned', async ({
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const range = settledHour();
  const response = queryResponse(page, service);
  await page.goto(
    exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: service }], range)
  );
  const frame = flameFrame(await framesOf(await response, 'A'));
  const total = flameGraphTotal([frame]);
  expect(total, `no CPU samples of service ${SERVICE} in the hour`).toBeGreaterThan(0);

  // The same query through the API gives the same answer: the page shows the backend's figures.
  const again = flameFrame(
    await framesOf(
      await dsQuery(page, FLAMEHOUSE, [{ queryType: 'profile', profileTypeId: CPU, labelSelector: service }], range),
      'A'
    )
  );
  expect(flameGraphTotal([again])).toBe(total);

  await expect(page.locator(FLAME_GRAPH)).toBeVisible();
  await showBoth(page);
  // The header: the root in the frame's unit (ns, shown as a time), the raw count, and the unit's title. "samples"
  // is Grafana's fixed word for the raw value, whatever the unit (docs/grafana.md).
  const header = parseFlameGraphHeader((await flameGraphHeader(page).textContent()) ?? '');
  expect(header.title).toBe('Time');
  expect(closeTo(header.nanos, total), `header ${header.nanos} ns vs total ${total} ns`).toBe(true);
  expect(closeTo(header.raw, total)).toBe(true);

  // The top table, sorted by self: its first row is the function with the most self time.
  const topTable = page.getByTestId(TOP_TABLE);
  await expect(topTable).toBeVisible();
  const [, symbol, self] = await firstTopRow(topTable);
  const want = topSelf(frame);
  expect(want.names).toContain(symbol);
  expect(closeTo(nanosOf(self), want.self), `self ${self} vs ${want.self} ns`).toBe(true);
  await screenshot(page, 'explore-flame-graph');
});

test('Explore shows the top-functions table query as Function, Self, Total', async ({
  readProvisionedDataSource,
  explorePage,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const response = queryResponse(page, service);
  await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'table', profileTypeId: CPU, labelSelector: service }]));

  const [frame] = await framesOf(await response, 'A');
  const labels = labelsOf(frame);
  expect(labels.length).toBeGreaterThan(0);
  const self = column(frame, 'self').map(Number);
  const total = column(frame, 'total').map(Number);
  self.forEach((s, i) => expect(s).toBeLessThanOrEqual(total[i]));

  // The same names as the example dashboard's table, from the frame itself.
  await expect(explorePage.tablePanel.fieldNames).toContainText(['Function', 'Self', 'Total']);
  await expect(explorePage.tablePanel.fieldNames).not.toContainText(['label']);
  await expect(explorePage.tablePanel.data.first()).toBeVisible();
  await expect(explorePage.tablePanel.locator.getByText(labels[0], { exact: true }).first()).toBeVisible();
  await screenshot(page, 'explore-table');
});

test('a label filter narrows the flame graph', async ({ readProvisionedDataSource, page }) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const range = settledHour(); // one fixed range: samples arriving meanwhile change nothing
  const run = async (labelSelector: string) => {
    const response = queryResponse(page, labelSelector);
    await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector }], range));
    return flameGraphTotal(await framesOf(await response, 'A'));
  };

  const everything = await run('{}');
  const oneService = await run(service);
  await expect(page.locator(FLAME_GRAPH)).toBeVisible();
  const nothing = await run('{service_name="no-such-service-e2e"}');

  expect(oneService).toBeGreaterThan(0);
  if (exporterFixture()) {
    expect(oneService).toBeLessThan(everything); // the fixture's service is in {} too
  } else {
    expect(oneService).toBeLessThanOrEqual(everything);
  }
  expect(nothing).toBe(0);
});

test('series legends name the groups, and in-use memory is an amount, not a rate', async ({
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const range = settledHour();
  const query = { refId: 'A', queryType: 'metrics' as const, labelSelector: service, groupBy: ['service_name'] };

  const cpu = queryResponse(page, service);
  await page.goto(exploreUrl(ds, [{ ...query, profileTypeId: CPU }], range));
  const [cpuFrame] = await framesOf(await cpu, 'A');
  const cpuField = cpuFrame.schema.fields[1] as { config?: { unit?: string; displayNameFromDS?: string } };
  expect(cpuField.config?.displayNameFromDS).toBe(SERVICE);
  const legend = page.getByTestId('data-testid VizLegend series ' + SERVICE);
  await expect(legend).toBeVisible();
  await expect(page.getByText(CPU, { exact: false })).toHaveCount(0);

  const heap = queryResponse(page, service);
  await page.goto(exploreUrl(ds, [{ ...query, profileTypeId: HEAP }], range));
  const [heapFrame] = await framesOf(await heap, 'A');
  const heapField = heapFrame.schema.fields[1] as { config?: { unit?: string } };
  expect(heapField.config?.unit).toBe('bytes');
  await expect(page.getByTestId('data-testid VizLegend series ' + SERVICE)).toBeVisible();
  await screenshot(page, 'explore-heap-series');
});

test.describe('both schemas', () => {
  const fixture = exporterFixture();
  test.skip(!fixture, FIXTURE_REASON);

  test('the exporter-table datasource draws the same flame graph as the Flamehouse tables', async ({ page }) => {
    const f = fixture!;
    const selector = `{service_name="${f.service}"}`;
    const range = { from: String(f.from), to: String(f.to + 5_000) };
    const results: Array<{ total: number; header: number; top: string[] }> = [];
    for (const ds of [FLAMEHOUSE, FLAMEHOUSE_OTEL]) {
      const response = queryResponse(page, selector);
      await page.goto(
        exploreUrl(
          ds,
          [{ refId: 'A', queryType: 'profile', profileTypeId: f.profileType, labelSelector: selector }],
          range
        )
      );
      const total = flameGraphTotal(await framesOf(await response, 'A'));
      await expect(page.locator(FLAME_GRAPH)).toBeVisible();
      await showBoth(page);
      const header = parseFlameGraphHeader((await flameGraphHeader(page).textContent()) ?? '');
      const top = await firstTopRow(page.getByTestId(TOP_TABLE));
      results.push({ total, header: header.nanos, top: top.slice(1) });
      await screenshot(page, `explore-schema-${ds.uid}`);
    }
    // Both equal what was sent: events × period, computed from the requests.
    for (const r of results) {
      expect(r.total).toBe(f.cpuNanos);
      expect(closeTo(r.header, f.cpuNanos)).toBe(true);
    }
    expect(results[1].top).toEqual(results[0].top);
  });
});
