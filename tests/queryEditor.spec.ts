import { expect, test } from '@grafana/plugin-e2e';

import { selectors } from '../src/selectors';
import { DATASOURCES_FILE, SKIP_REASON } from './helpers';

// Browser tests need a running Grafana with the built plugin (docs/grafana.md,
// "End-to-end tests"); without GRAFANA_URL they are skipped with this reason.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

test('query editor shows profile type and label selector', async ({ panelEditPage, readProvisionedDataSource }) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  await panelEditPage.datasource.set(ds.name);
  const row = panelEditPage.getQueryEditorRow('A');
  await expect(row.getByTestId(selectors.query.profileTypeId)).toBeVisible();
  await expect(row.getByTestId(selectors.query.labelSelector)).toBeVisible();
});
