import { expect, test } from './fixtures';
import type { Page, Request } from '@playwright/test';

import { selectors } from '../src/selectors';
import { CPU, DATASOURCES_FILE, HEAP, Query, SERVICE, SKIP_REASON, choose, exploreUrl, screenshot } from './helpers';

// Browser tests need a running Grafana with the built plugin (docs/grafana.md,
// "End-to-end tests"); without GRAFANA_URL they are skipped with this reason.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const q = selectors.query;

/** Waits for the next query request whose query A matches, and returns that query as sent. */
async function sent(page: Page, match: (query: Partial<Query> & { maxNodes?: number }) => boolean) {
  const req: Request = await page.waitForRequest((r) => {
    if (!r.url().includes('/api/ds/query')) {
      return false;
    }
    const body = r.postDataJSON() as { queries?: Array<Partial<Query>> } | null;
    return !!body?.queries?.some(match);
  });
  const body = req.postDataJSON() as { queries: Array<Partial<Query> & { maxNodes?: number }> };
  return body.queries.find(match)!;
}

test('query editor shows profile type and label selector in a panel', async ({
  panelEditPage,
  readProvisionedDataSource,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  await panelEditPage.datasource.set(ds.name);
  const row = panelEditPage.getQueryEditorRow('A');
  await expect(row.getByTestId(q.profileTypeId)).toBeVisible();
  await expect(row.getByTestId(q.labelSelector)).toBeVisible();
});

test('the profile type picker lists the types with data, and a pick runs that type', async ({
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: '{}' }]));
  await page.getByTestId(q.profileTypeId).locator('input').click();
  // Grouped by name, then sample type: the demo's CPU and heap profiles.
  await expect(page.getByRole('menuitemcheckbox', { name: 'process_cpu', exact: true })).toBeVisible();
  await page.getByRole('menuitemcheckbox', { name: 'memory', exact: true }).click();
  const heap = sent(page, (x) => x.profileTypeId === HEAP);
  await page.getByRole('menuitemcheckbox', { name: 'inuse_space', exact: true }).click();
  expect((await heap).queryType).toBe('profile');
  await expect(page.getByTestId(q.profileTypeId).locator('input')).toHaveValue(/memory.*inuse_space/);
});

test('the label builder adds a matcher from the label names and values it looks up', async ({
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: '{}' }]));
  await page.getByTestId(q.matcherAdd).click();
  const matcher = page.getByTestId(q.matcherRow).first();

  await choose(page, matcher.getByTestId(q.matcherName), 'service_name');
  const query = sent(page, (x) => x.labelSelector === `{service_name="${SERVICE}"}`);
  await choose(page, matcher.getByTestId(q.matcherValue), SERVICE);
  expect((await query).profileTypeId).toBe(CPU);
  await screenshot(page, 'query-editor-builder');
});

test('code mode completes label names and values', async ({ readProvisionedDataSource, page }) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: '{}' }]));
  await page.getByRole('radio', { name: 'Code', exact: true }).check({ force: true });
  const input = page.getByTestId(q.labelSelectorText);
  await input.fill('');
  await input.pressSequentially('{serv');
  const suggestions = page.getByTestId(q.suggestions);
  // Names show in OpenTelemetry form with the selector name beside: "service.name service_name".
  const name = suggestions.getByRole('option').filter({ hasText: /(^|\s)service_name$/ });
  await expect(name).toBeVisible();
  await name.click(); // accepts the name and opens its values
  await expect(input).toHaveValue(/^\{service_name="/);

  // The label's values, looked up from the datasource.
  const value = suggestions.getByRole('option', { name: SERVICE, exact: true });
  await expect(value).toBeVisible();
  await value.click();
  await expect(input).toHaveValue(new RegExp(`^\\{service_name="${SERVICE}"`));
  const query = sent(page, (x) => x.labelSelector === `{service_name="${SERVICE}"}`);
  const text = await input.inputValue();
  if (!text.endsWith('}')) {
    await input.pressSequentially(text.endsWith('"') ? '}' : '"}');
  }
  await input.press('Enter');
  expect((await query).profileTypeId).toBe(CPU);
  await screenshot(page, 'query-editor-code');
});

test('the options set query type, group by and max nodes', async ({ readProvisionedDataSource, page }) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const selector = `{service_name="${SERVICE}"}`;
  await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: selector }]));
  const options = page.getByTestId(q.options);
  await expect(options.getByTestId(q.optionsSummary)).toContainText('Type: Profile');
  await options.getByTestId(q.optionsSummary).click();

  const metrics = sent(page, (x) => x.queryType === 'metrics');
  await options.getByRole('radio', { name: 'Metrics', exact: true }).check({ force: true });
  expect((await metrics).labelSelector).toBe(selector);

  const grouped = sent(page, (x) => x.queryType === 'metrics' && (x.groupBy ?? []).includes('service_name'));
  await choose(page, options.getByTestId(q.groupBy), 'service_name');
  await grouped;
  await expect(options.getByTestId(q.optionsSummary)).toContainText('service_name');

  await options.getByRole('radio', { name: 'Profile', exact: true }).check({ force: true });
  const limited = sent(page, (x) => x.queryType === 'profile' && x.maxNodes === 100);
  const maxNodes = options.getByTestId(q.maxNodes);
  await maxNodes.fill('100');
  await maxNodes.press('Enter');
  await limited;
  await screenshot(page, 'query-editor-options');
});
