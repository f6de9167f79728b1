import { expect, test } from '@grafana/plugin-e2e';

import { selectors } from '../src/selectors';

test.skip(!process.env.GRAFANA_URL, 'GRAFANA_URL is not set: no Grafana to run the browser tests against');

test('query editor shows profile type and label selector', async ({ panelEditPage, readProvisionedDataSource }) => {
  const ds = await readProvisionedDataSource({ fileName: 'datasources.yml' });
  await panelEditPage.datasource.set(ds.name);
  const row = panelEditPage.getQueryEditorRow('A');
  await expect(row.getByTestId(selectors.query.profileTypeId)).toBeVisible();
  await expect(row.getByTestId(selectors.query.labelSelector)).toBeVisible();
});
