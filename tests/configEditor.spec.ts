import { expect, test } from './fixtures';
import type { Page } from '@playwright/test';

import type { FlamehouseOptions, FlamehouseSecureJsonData } from '../src/options';
import { selectors } from '../src/selectors';
import { DATASOURCES_FILE, EXAMPLES_REASON, FIXTURE_REASON, SKIP_REASON, exporterFixture, screenshot } from './helpers';

// Browser tests need a running Grafana with the built plugin (docs/grafana.md,
// "End-to-end tests"); without GRAFANA_URL they are skipped with this reason.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const c = selectors.config;

type Provisioned = { jsonData: FlamehouseOptions; secureJsonData?: FlamehouseSecureJsonData };

/**
 * Picks an option of one of the editor's radio button groups by its visible label, as a user clicks it. Grafana
 * renders each option as a labelled radio input (the group itself carries no test id in Grafana 12.4).
 */
async function pick(page: Page, option: string) {
  await page.getByRole('radio', { name: option, exact: true }).check({ force: true });
}

/** Types the provisioned connection into the config editor, as a user would. */
async function fillConnection(page: Page, { jsonData, secureJsonData }: Provisioned) {
  await page.getByTestId(c.host).fill(jsonData.host ?? '');
  await page.getByTestId(c.port).fill(String(jsonData.port ?? ''));
  await pick(page, jsonData.protocol === 'http' ? 'HTTP' : 'Native');
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

  await pick(page, 'HTTP');
  await expect(page.getByTestId(c.port)).toHaveAttribute('placeholder', '8123');
  await expect(page.getByTestId(c.path)).toBeVisible();
  await expect(page.getByTestId(c.httpHeaders.add)).toBeVisible();

  // The exporter-table schema shows its table and hides what does not apply to it.
  await expect(page.getByTestId(c.tablePrefix)).toBeVisible();
  await pick(page, 'OpenTelemetry Collector exporter table');
  await expect(page.getByTestId(c.otelTable)).toBeVisible();
  await expect(page.getByTestId(c.tablePrefix)).toHaveCount(0);
  await expect(page.getByTestId(c.tenant)).toHaveCount(0);
  await screenshot(page, 'config-editor');
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

test('"Save & test" with the exporter-table schema finds the Collector exporter\'s otel_profiles', async ({
  createDataSourceConfigPage,
  readProvisionedDataSource,
  page,
}) => {
  test.skip(!exporterFixture(), FIXTURE_REASON);
  const ds = await readProvisionedDataSource<FlamehouseOptions, FlamehouseSecureJsonData>({
    fileName: DATASOURCES_FILE,
  });
  const configPage = await createDataSourceConfigPage({ type: ds.type });
  await fillConnection(page, ds);
  await page.getByTestId(c.database).fill(ds.jsonData.profiles?.database ?? 'otel');
  await pick(page, 'OpenTelemetry Collector exporter table');
  await page.getByTestId(c.otelTable).fill('otel_profiles');

  await expect(configPage.saveAndTest()).toBeOK();
  await expect(configPage).toHaveAlert('success', { hasText: 'otel_profiles' });
  await screenshot(page, 'config-editor-exporter-schema');
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

test('"Save & test" of the provisioned exporter-table example succeeds', async ({
  gotoDataSourceConfigPage,
  readProvisionedDataSource,
}) => {
  test.skip(!process.env.FLAMEHOUSE_E2E_EXAMPLES, EXAMPLES_REASON);
  test.skip(!exporterFixture(), FIXTURE_REASON);
  const ds = await readProvisionedDataSource({ fileName: 'example-otel-exporter.yaml' });
  const configPage = await gotoDataSourceConfigPage(ds.uid);
  await expect(configPage.saveAndTest()).toBeOK();
  await expect(configPage).toHaveAlert('success', { hasText: 'otel_profiles' });
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
