import { expect, test } from '@grafana/plugin-e2e';
import type { Page } from '@playwright/test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

import { selectors } from '../src/selectors';
import {
  CPU,
  DATASOURCES_FILE,
  SERVICE,
  SKIP_REASON,
  column,
  exploreUrl,
  framesOf,
  queryResponse,
  queryResponseWhere,
} from './helpers';

// Browser tests need a running Grafana with the built plugin (docs/grafana.md,
// "End-to-end tests"); without GRAFANA_URL they are skipped with this reason.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const service = `{service_name="${SERVICE}"}`;

const EXAMPLES_DIR = join(__dirname, '..', 'provisioning', 'examples');
const EXAMPLES_REASON =
  "FLAMEHOUSE_E2E_EXAMPLES is not set: copy provisioning/examples/*.yaml into Grafana's provisioning/datasources and set it to check them";

interface ExampleDatasource {
  file: string;
  uid: string;
  name: string;
  type: string;
}

/** The datasources of provisioning/examples, as Grafana provisions them. */
function exampleDatasources(): ExampleDatasource[] {
  return readdirSync(EXAMPLES_DIR)
    .filter((f) => /\.ya?ml$/.test(f))
    .flatMap((file) => {
      const parsed = parse(readFileSync(join(EXAMPLES_DIR, file), 'utf8')) as { datasources: ExampleDatasource[] };
      return parsed.datasources.map((d) => ({ file, uid: d.uid, name: d.name, type: d.type }));
    });
}

/** A datasource's health check through Grafana's API, as "Save & test" runs it. */
async function health(page: Page, uid: string): Promise<{ status: string; message: string }> {
  const resp = await page.request.get(`/api/datasources/uid/${uid}/health`);
  return (await resp.json()) as { status: string; message: string };
}

test.describe('provisioned examples', () => {
  test.skip(!process.env.FLAMEHOUSE_E2E_EXAMPLES, EXAMPLES_REASON);

  test('every datasource of the examples is provisioned', async ({ page }) => {
    const examples = exampleDatasources();
    expect(examples.length).toBeGreaterThan(0);
    for (const d of examples) {
      const resp = await page.request.get(`/api/datasources/uid/${d.uid}`);
      expect(resp.ok(), `${d.file}: datasource ${d.uid} is not provisioned`).toBe(true);
      expect(await resp.json()).toMatchObject({ uid: d.uid, name: d.name, type: d.type });
    }
  });

  test('the example Flamehouse datasources pass their health check', async ({ page }) => {
    const ours = exampleDatasources().filter((d) => d.type === 'flamehouse-profiles-datasource');
    expect(ours.length).toBeGreaterThan(0);
    for (const d of ours) {
      const result = await health(page, d.uid);
      expect(result, d.uid).toMatchObject({
        status: 'OK',
        message: expect.stringContaining('Flamehouse tables found'),
      });
    }
  });

  test('the correlation from Tempo spans to Flamehouse is provisioned', async ({ page }) => {
    const resp = await page.request.get('/api/datasources/uid/tempo-correlations/correlations');
    expect(resp.ok()).toBe(true);
    const body = JSON.stringify(await resp.json());
    expect(body).toContain('"label":"Span flame graph"');
    expect(body).toContain('"targetUID":"flamehouse"');
  });

  test('Explore offers the logs and metrics of a selection under the query editor', async ({ page }) => {
    const ds = { uid: 'flamehouse-tempo', type: 'flamehouse-profiles-datasource' };
    await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: service }]));
    const related = page.getByTestId(selectors.query.related);
    await expect(related).toBeVisible();
    await expect(related.getByTestId(selectors.query.relatedLink)).toHaveText([
      'Logs for this selection',
      'Metrics for this selection',
    ]);
    const href = await related.getByTestId(selectors.query.relatedLink).first().getAttribute('href');
    expect(decodeURIComponent(href ?? '')).toContain(`{service_name=\\"${SERVICE}\\"}`);
  });
});

test('the spans query ranks spans by CPU in a table', async ({ readProvisionedDataSource, page, explorePage }) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const response = queryResponse(page, service);
  await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'spans', profileTypeId: CPU, labelSelector: service }]));

  const [frame] = await framesOf(await response, 'A');
  expect(frame.schema.name).toBe('spans');
  expect(frame.schema.fields.map((f) => f.name)).toEqual([
    'traceID',
    'spanID',
    'serviceName',
    'operationName',
    'duration',
    'value',
    'share',
  ]);
  await expect(page.getByTestId(selectors.query.labelSelector)).toBeVisible();
  if (column(frame, 'spanID').length === 0) {
    test.info().annotations.push({ type: 'note', description: `no samples of ${SERVICE} carry a span id` });
    return;
  }
  await expect(explorePage.tablePanel.fieldNames).toContainText(['traceID', 'spanID', 'value']);
});

test('the trace query shows a trace, or names the missing traces table', async ({
  readProvisionedDataSource,
  page,
}) => {
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const traceId = process.env.FLAMEHOUSE_E2E_TRACE_ID || '0123456789abcdef0123456789abcdef';
  const { message } = await health(page, ds.uid);
  const response = queryResponseWhere(page, (q) => q.traceId === traceId);
  await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'traces', profileTypeId: CPU, traceId }]));

  await expect(page.getByTestId(selectors.query.traceId)).toHaveValue(traceId);
  await expect(page.getByTestId(selectors.query.labelSelector)).toHaveCount(0);
  const resp = await response;
  if (!/Traces table .* found/.test(message)) {
    const body = (await resp.json()) as { results: Record<string, { error?: string }> };
    expect(body.results.A.error).toContain('the traces table does not exist');
    return;
  }
  const [frame] = await framesOf(resp, 'A');
  expect(frame.schema.name).toBe('Trace');
  expect(frame.schema.fields.map((f) => f.name)).toEqual(
    expect.arrayContaining(['traceID', 'spanID', 'profileSpanID'])
  );
  if (process.env.FLAMEHOUSE_E2E_TRACE_ID) {
    expect(column(frame, 'spanID').length).toBeGreaterThan(0);
  }
});
