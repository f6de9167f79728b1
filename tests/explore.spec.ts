import { expect, test } from '@grafana/plugin-e2e';

import {
  CPU,
  DATASOURCES_FILE,
  FLAME_GRAPH,
  SERVICE,
  SKIP_REASON,
  TOP_TABLE,
  column,
  exploreUrl,
  flameGraphTotal,
  framesOf,
  queryResponse,
  settledHour,
} from './helpers';

// Browser tests need a running Grafana with the built plugin and data in
// ClickHouse (docs/grafana.md, "End-to-end tests").
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const service = `{service_name="${SERVICE}"}`;

test('Explore shows the flame graph and its top table for the provisioned datasource', async ({
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const response = queryResponse(page, service);
  await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: service }]));

  const frames = await framesOf(await response, 'A');
  expect(flameGraphTotal(frames), `no CPU samples of service ${SERVICE} in the last hour`).toBeGreaterThan(0);
  await expect(page.locator(FLAME_GRAPH)).toBeVisible();
  const topTable = page.getByTestId(TOP_TABLE);
  await expect(topTable).toBeVisible();
  await expect(topTable).toContainText('Self');
  await expect(topTable).toContainText('Total');
});

test('Explore shows the top-functions table query', async ({ readProvisionedDataSource, explorePage, page }) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const response = queryResponse(page, service);
  await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'table', profileTypeId: CPU, labelSelector: service }]));

  const [frame] = await framesOf(await response, 'A');
  const labels = column(frame, 'label');
  expect(labels.length).toBeGreaterThan(0);
  const self = column(frame, 'self').map(Number);
  const total = column(frame, 'total').map(Number);
  self.forEach((s, i) => expect(s).toBeLessThanOrEqual(total[i]));

  await expect(explorePage.tablePanel.fieldNames).toContainText(['label', 'self', 'total']);
  await expect(explorePage.tablePanel.data.first()).toBeVisible();
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
  expect(oneService).toBeLessThanOrEqual(everything);
  expect(nothing).toBe(0);
});
