import { expect, test } from '@grafana/plugin-e2e';

import { DASHBOARD_FILE, FLAME_GRAPH, SERVICE, SKIP_REASON } from './helpers';

// Browser tests need a running Grafana with the built plugin, the provisioned
// dashboard and data in ClickHouse (docs/grafana.md, "End-to-end tests").
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

interface SentQuery {
  refId: string;
  queryType?: string;
  labelSelector?: string;
}

test('the example dashboard renders its time series, flame graph and top functions', async ({
  gotoDashboardPage,
  readProvisionedDashboard,
  page,
}) => {
  const dashboard = await readProvisionedDashboard({ fileName: DASHBOARD_FILE });
  const sent: SentQuery[] = [];
  page.on('request', (req) => {
    if (req.url().includes('/api/ds/query')) {
      sent.push(...(((req.postDataJSON() as { queries?: SentQuery[] })?.queries ?? []) as SentQuery[]));
    }
  });

  const dashboardPage = await gotoDashboardPage({
    uid: dashboard.uid,
    queryParams: new URLSearchParams({ 'var-service': SERVICE }),
  });

  const series = dashboardPage.getPanelByTitle('CPU by pod');
  await expect(series.locator.locator('canvas').first()).toBeVisible();
  await expect(series.getErrorIcon()).toHaveCount(0);

  const flame = dashboardPage.getPanelByTitle('CPU flame graph');
  await expect(flame.locator.locator(FLAME_GRAPH)).toBeVisible();
  await expect(flame.getErrorIcon()).toHaveCount(0);

  const table = dashboardPage.getPanelByTitle('Top functions');
  await table.scrollIntoView();
  await expect(table.fieldNames).toContainText(['Function', 'Self', 'Total']);
  await expect(table.data.first()).toBeVisible();
  await expect(table.getErrorIcon()).toHaveCount(0);

  // The variables resolved: the service as chosen, namespace and pod to
  // "All" (.*), so every panel asked for the demo service.
  const panelQueries = sent.filter((q) => q.queryType && ['metrics', 'profile', 'table'].includes(q.queryType));
  expect(panelQueries.map((q) => q.queryType).sort()).toEqual(expect.arrayContaining(['metrics', 'profile', 'table']));
  for (const q of panelQueries) {
    expect(q.labelSelector).toContain(`service_name="${SERVICE}"`);
    expect(q.labelSelector).not.toContain('$');
  }
});
