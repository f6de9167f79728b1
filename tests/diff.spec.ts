import { expect, test } from './fixtures';
import type { Locator, Page } from '@playwright/test';

import {
  CPU,
  DASHBOARD_FILE,
  DATASOURCES_FILE,
  FLAMEHOUSE,
  FLAME_GRAPH,
  FrameJSON,
  SERVICE,
  SKIP_REASON,
  TOP_TABLE,
  column,
  dsQuery,
  exploreUrl,
  framesOf,
  labelsOf,
  queryResponseWhere,
  screenshot,
} from './helpers';

// Browser tests need a running Grafana with the built plugin and data in
// ClickHouse (docs/grafana.md, "End-to-end tests").
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const service = `{service_name="${SERVICE}"}`;

/** Per function, the baseline's and the comparison's totals, counted once per path as Grafana's top table does. */
function diffTotals(frame: FrameJSON): Map<string, { left: number; right: number }> {
  const level = column(frame, 'level').map(Number);
  const value = column(frame, 'value').map(Number);
  const valueRight = column(frame, 'valueRight').map(Number);
  const label = labelsOf(frame);
  const out = new Map<string, { left: number; right: number }>();
  const path: string[] = [];
  for (let i = 0; i < level.length; i++) {
    path.length = level[i];
    const e = out.get(label[i]) ?? { left: 0, right: 0 };
    if (!path.includes(label[i])) {
      e.left += value[i];
      e.right += valueRight[i];
    }
    out.set(label[i], e);
    path.push(label[i]);
  }
  return out;
}

/** Grafana's percentages of a side's total, rounded to two decimals as its top table rounds them. */
const percent = (part: number, total: number) => Math.round((10000 * part) / total) / 100;

/** A percentage as the top table shows it ("67.5%", "0.12%"). */
const shownPercent = (text: string) => Number(text.replace('%', ''));

/** Whether a shown percentage is a value, up to the three significant digits Grafana shows. */
const samePercent = (text: string, value: number) =>
  Math.abs(shownPercent(text) - value) <= Math.max(0.011, Math.abs(value) * 0.006);

/** Shows the top table beside the flame graph, whatever the viewport's width made Grafana pick. */
async function showBoth(scope: Page | Locator) {
  const both = scope.getByRole('radio', { name: 'Both', exact: true });
  if ((await both.count()) > 0) {
    await both.first().check({ force: true });
  }
}

/** The diff top table's rows: symbol, baseline %, comparison %, diff (as shown). */
async function diffRows(
  topTable: Locator
): Promise<Array<{ symbol: string; baseline: string; comparison: string; diff: string }>> {
  const rows = topTable.locator('[data-testid="data-testid table body"] [role="row"]');
  await expect(rows.first()).toBeVisible();
  const out = [];
  for (const row of await rows.all()) {
    const [, symbol, baseline, comparison, diff] = (await row.locator('[role="cell"]').allTextContents()).map((t) =>
      t.trim()
    );
    out.push({ symbol, baseline, comparison, diff });
  }
  return out;
}

/** Pixels of the flame graph canvas in Grafana's diff colours: clearly red (grew) and clearly green (shrank). */
async function diffColours(page: Page): Promise<{ red: number; green: number; painted: number }> {
  return page.locator(FLAME_GRAPH).evaluate((el) => {
    const canvas = el as HTMLCanvasElement;
    const ctx = canvas.getContext('2d');
    if (!ctx) {
      return { red: 0, green: 0, painted: 0 };
    }
    const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
    let red = 0;
    let green = 0;
    let painted = 0;
    for (let i = 0; i < data.length; i += 4) {
      const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
      if (a === 0) {
        continue;
      }
      painted++;
      if (r > g + 40 && r > b + 40) {
        red++;
      } else if (g > r + 40 && g > b + 20) {
        green++;
      }
    }
    return { red, green, painted };
  });
}

/**
 * The demo's CPU profiles split in two halves of equal length, both with data: the first half is the baseline, the
 * second the comparison. Ends a minute ago, so that samples arriving meanwhile change nothing.
 */
async function halves(
  page: Page
): Promise<{ left: { from: string; to: string }; right: { from: string; to: string } }> {
  const to = Date.now() - 60_000;
  const resp = await dsQuery(page, FLAMEHOUSE, [{ queryType: 'metrics', profileTypeId: CPU, labelSelector: service }], {
    from: String(to - 3_600_000),
    to: String(to),
  });
  const [frame] = await framesOf(resp, 'A');
  const times = column(frame, 'time').map(Number);
  expect(times.length, `CPU samples of ${SERVICE} in the last hour`).toBeGreaterThan(1);
  const from = Math.min(...times);
  const mid = Math.round((from + to) / 2);
  return {
    left: { from: String(from), to: String(mid) },
    right: { from: String(mid), to: String(mid + (mid - from)) },
  };
}

test("the example dashboard's diff panel draws in Grafana's diff mode, with the backend's sides", async ({
  gotoDashboardPage,
  readProvisionedDashboard,
  page,
}) => {
  const dashboard = await readProvisionedDashboard({ fileName: DASHBOARD_FILE });
  const answer = queryResponseWhere(page, (q) => q.queryType === 'diff');
  const dashboardPage = await gotoDashboardPage({
    uid: dashboard.uid,
    queryParams: new URLSearchParams({ 'var-service': SERVICE }),
  });
  // Grafana queries a panel once it is in view: wait for the dashboard to draw, then scroll down to the panel.
  await expect(dashboardPage.getPanelByTitle('CPU by pod').locator).toBeVisible();
  const panel = dashboardPage.getPanelByTitle('CPU diff against the previous period');
  await expect(async () => {
    await panel.scrollIntoView();
    if (!(await panel.locator.isVisible())) {
      await page.mouse.move(800, 600);
      await page.mouse.wheel(0, 1000);
    }
    await expect(panel.locator).toBeInViewport({ timeout: 1_000 });
  }).toPass({ timeout: 30_000 });
  const [frame] = await framesOf(await answer, 'A');
  expect(frame.schema.fields.map((f) => f.name)).toEqual(
    expect.arrayContaining(['level', 'value', 'self', 'label', 'valueRight', 'selfRight'])
  );
  const rightTotal = Number(column(frame, 'valueRight')[0]);
  expect(rightTotal, 'the comparison (the dashboard range) has CPU samples').toBeGreaterThan(0);

  await expect(panel.getErrorIcon()).toHaveCount(0);
  await expect(panel.locator.locator(FLAME_GRAPH)).toBeVisible();
  // Grafana's diff legend, on its colour scheme button, only in diff mode.
  const legend = panel.locator.getByRole('button', { name: 'Change color scheme' });
  await expect(legend).toContainText('-100% (removed)');
  await expect(legend).toContainText('+100% (added)');
  // The top table shows both sides and the change, in the panel as in Explore.
  await showBoth(panel.locator);
  const topTable = panel.locator.getByTestId(TOP_TABLE);
  await expect(topTable.getByRole('columnheader')).toContainText(['Symbol', 'Baseline', 'Comparison', 'Diff']);
  const totals = diffTotals(frame);
  const leftTotal = Number(column(frame, 'value')[0]);
  const [root, first] = await diffRows(topTable); // the root ("total") first, then the functions
  expect(root).toMatchObject({ symbol: 'total', comparison: '100%' });
  const shown = totals.get(first.symbol);
  expect(shown, `${first.symbol} is a function of the frame`).toBeDefined();
  expect(samePercent(first.comparison, percent(shown!.right, rightTotal)), first.comparison).toBe(true);
  if (leftTotal > 0) {
    expect(samePercent(first.baseline, percent(shown!.left, leftTotal)), first.baseline).toBe(true);
  }
  await page.mouse.move(0, 0);
  await screenshot(page, 'dashboard-diff');
});

test('Explore draws a diff of two ranges in diff colours, and its top table shows both sides and the change', async ({
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const { left, right } = await halves(page);
  const query = {
    refId: 'A',
    queryType: 'diff' as const,
    profileTypeId: CPU,
    labelSelector: service,
    left: { from: left.from, to: left.to },
  };
  const answer = queryResponseWhere(page, (q) => q.queryType === 'diff');
  await page.goto(exploreUrl(ds, [query], right));
  const [frame] = await framesOf(await answer, 'A');
  const leftTotal = Number(column(frame, 'value')[0]);
  const rightTotal = Number(column(frame, 'valueRight')[0]);
  expect(leftTotal, 'the baseline half has samples').toBeGreaterThan(0);
  expect(rightTotal, 'the comparison half has samples').toBeGreaterThan(0);

  await expect(page.locator(FLAME_GRAPH)).toBeVisible();
  await expect(page.getByRole('button', { name: 'Change color scheme' })).toContainText('-100% (removed)');
  await showBoth(page);
  const topTable = page.getByTestId(TOP_TABLE);
  await expect(topTable.getByRole('columnheader')).toContainText(['Symbol', 'Baseline', 'Comparison', 'Diff']);
  // Every row Grafana shows is the backend's: each side's share of its own total, and their relative change.
  const totals = diffTotals(frame);
  const rows = await diffRows(topTable);
  expect(rows.length).toBeGreaterThan(1);
  for (const row of rows.slice(0, 10)) {
    const t = totals.get(row.symbol);
    expect(t, `${row.symbol} is a function of the frame`).toBeDefined();
    const b = percent(t!.left, leftTotal);
    const c = percent(t!.right, rightTotal);
    expect(samePercent(row.baseline, b), `${row.symbol}: baseline ${row.baseline} vs ${b}%`).toBe(true);
    expect(samePercent(row.comparison, c), `${row.symbol}: comparison ${row.comparison} vs ${c}%`).toBe(true);
    if (b === 0) {
      expect(row.diff).toBe('new');
    } else if (c === 0) {
      expect(row.diff).toBe('removed');
    }
  }
  // Bars in diff colours: what grew is red, what shrank green (the halves of a real profile differ).
  await expect.poll(async () => (await diffColours(page)).painted).toBeGreaterThan(0);
  const colours = await diffColours(page);
  expect(colours.red + colours.green, JSON.stringify(colours)).toBeGreaterThan(0);
  await page.mouse.move(0, 0);
  await screenshot(page, 'explore-diff');
});

test('"Compare" turns an Explore flame graph into a diff against the previous period', async ({
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const { right } = await halves(page);
  const first = queryResponseWhere(page, (q) => q.queryType === 'profile');
  await page.goto(
    exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: service }], right)
  );
  await first;
  await expect(page.locator(FLAME_GRAPH)).toBeVisible();
  await expect(page.getByRole('button', { name: 'Change color scheme' })).not.toContainText('(removed)');

  const diff = queryResponseWhere(page, (q) => q.queryType === 'diff');
  await page.getByRole('button', { name: 'Compare' }).click();
  const resp = await diff;
  const sent = (resp.request().postDataJSON() as { queries: Array<Record<string, unknown>> }).queries[0];
  expect(sent).toMatchObject({ queryType: 'diff', profileTypeId: CPU, labelSelector: service, left: {} });
  const [frame] = await framesOf(resp, 'A');
  expect(Number(column(frame, 'valueRight')[0])).toBeGreaterThan(0);
  await expect(page.getByRole('button', { name: 'Change color scheme' })).toContainText('+100% (added)');
  // The baseline's editor: its labels and its range, the previous period until an offset is set.
  await expect(page.getByText('Baseline labels')).toBeVisible();
  await expect(page.getByRole('textbox', { name: 'Offset' })).toHaveAttribute('placeholder', 'previous period');
});
