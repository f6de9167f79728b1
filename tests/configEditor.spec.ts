import { expect, test } from '@grafana/plugin-e2e';

import { selectors } from '../src/selectors';

// Browser tests need a running Grafana with the built plugin (see README,
// "End-to-end tests"); without GRAFANA_URL they are skipped with this reason.
test.skip(!process.env.GRAFANA_URL, 'GRAFANA_URL is not set: no Grafana to run the browser tests against');

test('config editor shows the connection settings', async ({
  createDataSourceConfigPage,
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: 'datasources.yml' });
  await createDataSourceConfigPage({ type: ds.type });
  await expect(page.getByTestId(selectors.config.host)).toBeVisible();
  await expect(page.getByTestId(selectors.config.database)).toBeVisible();
});

test('"Save & test" reports a missing server address', async ({
  createDataSourceConfigPage,
  readProvisionedDataSource,
}) => {
  const ds = await readProvisionedDataSource({ fileName: 'datasources.yml' });
  const configPage = await createDataSourceConfigPage({ type: ds.type });
  await expect(configPage.saveAndTest()).not.toBeOK();
  await expect(configPage).toHaveAlert('error', { hasText: 'host' });
});
