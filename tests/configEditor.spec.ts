import { expect, test } from '@grafana/plugin-e2e';
import type { Page } from '@playwright/test';

import type { FlamehouseOptions, FlamehouseSecureJsonData } from '../src/options';
import { selectors } from '../src/selectors';
import { DATASOURCES_FILE, SKIP_REASON } from './helpers';

// Browser tests need a running Grafana with the built plugin (docs/grafana.md,
// "End-to-end tests"); without GRAFANA_URL they are skipped with this reason.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const c = selectors.config;

type Provisioned = { jsonData: FlamehouseOptions; secureJsonData?: FlamehouseSecureJsonData };

/** Types the provisioned connection into the config editor, as a user would. */
async function fillConnection(page: Page, { jsonData, secureJsonData }: Provisioned) {
  await page.getByTestId(c.host).fill(jsonData.host ?? '');
  await page.getByTestId(c.port).fill(String(jsonData.port ?? ''));
  await page
    .getByTestId(c.protocol)
    .getByText(jsonData.protocol === 'http' ? 'HTTP' : 'Native', { exact: true })
    .click();
  await page.getByTestId(c.username).fill(jsonData.username ?? '');
  if (secureJsonData?.password) {
    await page.getByTestId(c.password).fill(secureJsonData.password);
  }
}

test('the config editor shows every section, and the HTTP fields for protocol http', async ({
  createDataSourceConfigPage,
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  await createDataSourceConfigPage({ type: ds.type });
  for (const section of Object.values(c.sections)) {
    await expect(page.getByTestId(section)).toBeVisible();
  }
  await expect(page.getByTestId(c.port)).toHaveAttribute('placeholder', '9000');
  await expect(page.getByTestId(c.path)).toHaveCount(0);

  await page.getByTestId(c.protocol).getByText('HTTP', { exact: true }).click();
  await expect(page.getByTestId(c.port)).toHaveAttribute('placeholder', '8123');
  await expect(page.getByTestId(c.path)).toBeVisible();
  await expect(page.getByTestId(c.httpHeaders.add)).toBeVisible();
});

test('"Save & test" connects to the provisioned ClickHouse and finds the Flamehouse tables', async ({
  createDataSourceConfigPage,
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource<FlamehouseOptions, FlamehouseSecureJsonData>({
    fileName: DATASOURCES_FILE,
  });
  const { jsonData } = ds;
  const configPage = await createDataSourceConfigPage({ type: ds.type });
  await fillConnection(page, ds);
  await page.getByTestId(c.database).fill(jsonData.profiles?.database ?? '');

  await expect(configPage.saveAndTest()).toBeOK();
  await expect(configPage).toHaveAlert('success', {
    hasText: `Connected to ClickHouse; Flamehouse tables found in database "${jsonData.profiles?.database ?? 'otel'}"`,
  });
});

test('"Save & test" of the provisioned datasource succeeds', async ({
  gotoDataSourceConfigPage,
  readProvisionedDataSource,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const configPage = await gotoDataSourceConfigPage(ds.uid);
  await expect(configPage.saveAndTest()).toBeOK();
  await expect(configPage).toHaveAlert('success', { hasText: 'Flamehouse tables found' });
});

test('"Save & test" reports a missing server address', async ({
  createDataSourceConfigPage,
  readProvisionedDataSource,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const configPage = await createDataSourceConfigPage({ type: ds.type });
  await expect(configPage.saveAndTest()).not.toBeOK();
  await expect(configPage).toHaveAlert('error', { hasText: 'host' });
});

test('"Save & test" names a database without the Flamehouse tables', async ({
  createDataSourceConfigPage,
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource<FlamehouseOptions, FlamehouseSecureJsonData>({
    fileName: DATASOURCES_FILE,
  });
  const configPage = await createDataSourceConfigPage({ type: ds.type });
  await fillConnection(page, ds);
  await page.getByTestId(c.database).fill('no_flamehouse_here');
  await expect(configPage.saveAndTest()).not.toBeOK();
  await expect(configPage).toHaveAlert('error', { hasText: 'missing in database "no_flamehouse_here"' });
});
