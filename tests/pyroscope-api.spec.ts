import { expect, test } from './fixtures';
import type { Page } from '@playwright/test';

import {
  CPU,
  EXAMPLES_REASON,
  FLAMEHOUSE,
  FLAME_GRAPH,
  SERVICE,
  SKIP_REASON,
  type DatasourceRef,
  type Range,
  closeTo,
  dsQuery,
  exploreUrl,
  flameGraphHeader,
  flameGraphTotal,
  framesOf,
  parseFlameGraphHeader,
  queryResponse,
  screenshot,
  settledHour,
} from './helpers';

// Grafana's own Pyroscope datasource pointed at Flamehouse's Pyroscope-compatible query API
// (provisioning/examples/pyroscope-api.yaml; scripts/e2e.sh serves the API from flamehouse run on a free port and
// points the datasource at it). No Flamehouse plugin code is involved in these queries: Grafana's Pyroscope backend
// calls querier.v1.QuerierService, and Flamehouse answers from ClickHouse.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);
test.skip(!process.env.FLAMEHOUSE_E2E_EXAMPLES, EXAMPLES_REASON);

const PYROSCOPE_API: DatasourceRef = { uid: 'flamehouse-pyroscope', type: 'grafana-pyroscope-datasource' };
const PYROSCOPE_API_NAME = 'Flamehouse (Pyroscope API)';
const service = `{service_name="${SERVICE}"}`;

/**
 * The settled hour (up to a minute ago, so that both datasources read the same samples), once it holds CPU samples
 * of the demo: run alone right after flamehouse run starts, the specs wait for its first minute to settle.
 */
async function settledHourWithData(page: Page): Promise<Range> {
  let range = settledHour();
  await expect
    .poll(
      async () => {
        range = settledHour();
        const resp = await dsQuery(
          page,
          FLAMEHOUSE,
          [{ queryType: 'profile', profileTypeId: CPU, labelSelector: service }],
          range
        );
        return flameGraphTotal(await framesOf(resp, 'A'));
      },
      { timeout: 120_000, intervals: [5_000], message: `CPU samples of service ${SERVICE} over a minute old` }
    )
    .toBeGreaterThan(0);
  return range;
}

test('Grafana’s Pyroscope datasource draws Flamehouse’s flame graph in Explore', async ({ page }) => {
  const range = await settledHourWithData(page);
  const response = queryResponse(page, service);
  await page.goto(
    exploreUrl(
      PYROSCOPE_API,
      [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: service, groupBy: [] }],
      range
    )
  );
  const frames = await framesOf(await response, 'A');
  const total = flameGraphTotal(frames);
  expect(total, `no CPU samples of service ${SERVICE} in the hour`).toBeGreaterThan(0);

  // The oracle: the Flamehouse plugin's answer to the same selection over the same range, read from the same
  // tables by the same engine.
  const plugin = await framesOf(
    await dsQuery(page, FLAMEHOUSE, [{ queryType: 'profile', profileTypeId: CPU, labelSelector: service }], range),
    'A'
  );
  expect(total).toBe(flameGraphTotal(plugin));

  // Grafana draws it: the canvas, and the header with the root's value as a time.
  await expect(page.locator(FLAME_GRAPH)).toBeVisible();
  const header = parseFlameGraphHeader((await flameGraphHeader(page).textContent()) ?? '');
  expect(header.title).toBe('Time');
  expect(closeTo(header.nanos, total), `header ${header.nanos} ns vs total ${total} ns`).toBe(true);
  await screenshot(page, 'pyroscope-api-explore-flame-graph');
});

test('Grafana’s Pyroscope datasource draws Flamehouse’s series, and its health check passes', async ({ page }) => {
  const range = await settledHourWithData(page);
  const response = queryResponse(page, service);
  await page.goto(
    exploreUrl(
      PYROSCOPE_API,
      [{ refId: 'A', queryType: 'metrics', profileTypeId: CPU, labelSelector: service, groupBy: ['service_name'] }],
      range
    )
  );
  const [frame] = await framesOf(await response, 'A');
  const values = (frame.data?.values[1] ?? []).map(Number);
  expect(values.length).toBeGreaterThan(0);
  expect(values.some((v) => v > 0)).toBe(true);
  // Grafana's Pyroscope datasource names a series by the sample type and the group's values.
  await expect(page.getByTestId(`data-testid VizLegend series cpu ${SERVICE}`)).toBeVisible();
  await screenshot(page, 'pyroscope-api-explore-series');

  // "Save & test" of Grafana's Pyroscope datasource lists the profile types through the API.
  const health = await page.request.get(`/api/datasources/uid/${PYROSCOPE_API.uid}/health`);
  expect(health.ok(), await health.text()).toBe(true);
  expect(((await health.json()) as { status: string }).status).toBe('OK');
});

test('Tempo’s “Trace to profiles” settings pick Flamehouse’s Pyroscope datasource and list its profile types', async ({
  page,
}) => {
  // The provisioned Tempo datasource links to the Flamehouse plugin, which its picker cannot offer (it lists
  // Pyroscope datasources only): the Pyroscope API makes Flamehouse pickable.
  await page.goto('/connections/datasources/edit/tempo');
  const picker = page.locator('#trace-to-profiles-data-source-picker');
  await picker.scrollIntoViewIfNeeded();
  await picker.click();
  const option = page.getByText(PYROSCOPE_API_NAME, { exact: true });
  await expect(option).toBeVisible();
  // Only Pyroscope datasources are offered: not the Flamehouse plugin's.
  await expect(page.getByRole('button', { name: /^Flamehouse$/ })).toHaveCount(0);
  const profileTypes = page.waitForResponse((r) =>
    r.url().includes(`/api/datasources/uid/${PYROSCOPE_API.uid}/resources/profileTypes`)
  );
  await option.click();

  // Grafana's Pyroscope backend asks Flamehouse for the profile types, and the settings offer them.
  const resp = await profileTypes;
  expect(resp.ok()).toBe(true);
  const types = (await resp.json()) as Array<{ id: string; label: string }>;
  expect(types.map((t) => t.id)).toContain(CPU);
  await expect(page.getByText('No profile types found')).toHaveCount(0);
  await screenshot(page, 'pyroscope-api-tempo-trace-to-profiles');
});
