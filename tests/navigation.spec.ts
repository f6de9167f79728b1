import { expect, test } from './fixtures';
import type { Page } from '@playwright/test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

import { selectors } from '../src/selectors';
import {
  CPU,
  DATASOURCES_FILE,
  EXAMPLES_REASON,
  FLAMEHOUSE,
  SERVICE,
  SKIP_REASON,
  column,
  dsQuery,
  exploreUrl,
  flameGraphTotal,
  framesOf,
  queryResponse,
  queryResponseWhere,
  screenshot,
} from './helpers';

// Browser tests need a running Grafana with the built plugin (docs/grafana.md,
// "End-to-end tests"); without GRAFANA_URL they are skipped with this reason.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const service = `{service_name="${SERVICE}"}`;

const EXAMPLES_DIR = join(__dirname, '..', 'provisioning', 'examples');

interface ExampleDatasource {
  file: string;
  uid: string;
  name: string;
  type: string;
  jsonData?: { profiles?: { logsDatasourceUid?: string; metricsDatasourceUid?: string } };
}

/** The datasources of provisioning/examples, as Grafana provisions them. */
function exampleDatasources(): ExampleDatasource[] {
  return readdirSync(EXAMPLES_DIR)
    .filter((f) => /\.ya?ml$/.test(f))
    .flatMap((file) => {
      const parsed = parse(readFileSync(join(EXAMPLES_DIR, file), 'utf8')) as { datasources: ExampleDatasource[] };
      return parsed.datasources.map((d) => ({ ...d, file }));
    });
}

/** A datasource's health check through Grafana's API, as "Save & test" runs it. */
async function health(page: Page, uid: string): Promise<{ status: string; message: string }> {
  const resp = await page.request.get(`/api/datasources/uid/${uid}/health`);
  return (await resp.json()) as { status: string; message: string };
}

/** A span of the demo with CPU samples: the Spans query's first row over the last hour. */
interface RankedSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  value: number;
}

async function topSpans(page: Page): Promise<RankedSpan[]> {
  const range = { from: String(Date.now() - 3_600_000), to: String(Date.now()) };
  const [frame] = await framesOf(
    await dsQuery(page, FLAMEHOUSE, [{ queryType: 'spans', profileTypeId: CPU, labelSelector: service }], range),
    'A'
  );
  const traces = column(frame, 'traceID');
  const spans = column(frame, 'spanID');
  const names = column(frame, 'operationName');
  const values = column(frame, 'value').map(Number);
  return spans.map((s, i) => ({
    traceID: String(traces[i]),
    spanID: String(s),
    operationName: String(names[i]),
    value: values[i],
  }));
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
    expect(ours.length).toBeGreaterThan(1);
    for (const d of ours) {
      const result = await health(page, d.uid);
      expect(result.status, `${d.uid}: ${result.message}`).toBe('OK');
      expect(result.message).toContain('Connected to ClickHouse');
    }
  });

  test('the correlation from Tempo spans to Flamehouse is provisioned', async ({ page }) => {
    const resp = await page.request.get('/api/datasources/uid/tempo-correlations/correlations');
    expect(resp.ok()).toBe(true);
    const body = JSON.stringify(await resp.json());
    expect(body).toContain('"label":"Span flame graph"');
    expect(body).toContain('"targetUID":"flamehouse"');
  });

  test('a flame graph links to the logs and metrics of its selection, in the configured datasources', async ({
    page,
  }) => {
    const linked = exampleDatasources().find((d) => d.uid === 'flamehouse-tempo');
    const logs = linked?.jsonData?.profiles?.logsDatasourceUid;
    const metrics = linked?.jsonData?.profiles?.metricsDatasourceUid;
    expect(logs && metrics, 'flamehouse-tempo names a logs and a metrics datasource').toBeTruthy();

    const ds = { uid: 'flamehouse-tempo', type: 'flamehouse-profiles-datasource' };
    await page.goto(exploreUrl(ds, [{ refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: service }]));
    const related = page.getByTestId(selectors.query.related);
    await expect(related).toBeVisible();
    const links = related.getByTestId(selectors.query.relatedLink);
    await expect(links).toHaveText(['Logs for this selection', 'Metrics for this selection']);
    const [logsHref, metricsHref] = await Promise.all(
      [0, 1].map(async (i) => decodeURIComponent((await links.nth(i).getAttribute('href')) ?? ''))
    );
    expect(logsHref).toContain(`"datasource":"${logs}"`);
    expect(logsHref).toContain(`{service_name=\\"${SERVICE}\\"}`);
    expect(metricsHref).toContain(`"datasource":"${metrics}"`);
    expect(metricsHref).toContain(`service_name=\\"${SERVICE}\\"`);
    await screenshot(page, 'explore-related-links');
  });
});

test("the Spans query ranks the demo's own spans, and a span opens its flame graph", async ({
  readProvisionedDataSource,
  page,
  explorePage,
}) => {
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
  const spans = column(frame, 'spanID').map(String);
  const values = column(frame, 'value').map(Number);
  expect(spans.length, 'flamehouse run traces its own work: some spans have CPU samples').toBeGreaterThan(0);
  expect([...values].sort((a, b) => b - a)).toEqual(values);
  await expect(explorePage.tablePanel.fieldNames).toContainText(['traceID', 'spanID', 'value']);

  // The first row's span id carries "Span flame graph": it opens that span's samples.
  const flame = queryResponseWhere(page, (q) => (q as { spanSelector?: string[] }).spanSelector?.[0] === spans[0]);
  const link = explorePage.tablePanel.locator.locator('a[title="Span flame graph"]', { hasText: spans[0] }).first();
  await expect(link).toBeVisible();
  await link.click();
  const total = flameGraphTotal(await framesOf(await flame, 'A'));
  expect(total).toBe(values[0]);
  await screenshot(page, 'explore-spans');
});

test('a trace of the demo opens, and "Profiles for this span" shows that span\'s flame graph', async ({ page }) => {
  const [span] = await topSpans(page);
  expect(span, 'no span of the demo has CPU samples').toBeDefined();
  const trace = queryResponseWhere(page, (q) => q.traceId === span.traceID);
  await page.goto(
    exploreUrl(FLAMEHOUSE, [{ refId: 'A', queryType: 'traces', profileTypeId: CPU, traceId: span.traceID }])
  );
  const [frame] = await framesOf(await trace, 'A');
  expect(frame.schema.name).toBe('Trace');
  expect(column(frame, 'spanID')).toContain(span.spanID);
  await expect(page.getByTestId(selectors.query.traceId)).toHaveValue(span.traceID);

  // Open the span's details: rows of the same name are tried until the details show its span id.
  const rows = page.getByText(span.operationName, { exact: true });
  await expect(rows.first()).toBeVisible();
  const details = page.getByText(`SpanID: ${span.spanID}`).or(page.getByText(span.spanID, { exact: true }));
  for (let i = 0; i < (await rows.count()) && !(await details.first().isVisible()); i++) {
    await rows.nth(i).click();
  }
  await expect(details.first()).toBeVisible();
  await screenshot(page, 'trace-span-details');

  const flame = queryResponseWhere(page, (q) => (q as { spanSelector?: string[] }).spanSelector?.[0] === span.spanID);
  // Grafana 12.4 puts the link on every profiled span's row too, so the page has one per span: take this span's (its
  // href names the span id), else the button of its details.
  const link = page.getByRole('link', { name: 'Profiles for this span' }).and(page.locator(`[href*="${span.spanID}"]`));
  if ((await link.count()) > 0) {
    await link.first().click();
  } else {
    await page.getByRole('button', { name: 'Profiles for this span' }).last().click();
  }
  const total = flameGraphTotal(await framesOf(await flame, 'A'));
  expect(total, "the span flame graph holds exactly the span's samples").toBe(span.value);
  await expect(page.locator('canvas[data-testid="flameGraph"]')).toBeVisible();
  await screenshot(page, 'trace-span-flame-graph');
});

test('the Trace query names a missing traces table once', async ({ readProvisionedDataSource, page }) => {
  const ds = await readProvisionedDataSource<Record<string, unknown>>({ fileName: DATASOURCES_FILE });
  const jsonData = ds.jsonData as { profiles?: Record<string, unknown> };
  const name = `Flamehouse without traces ${Date.now()}`;
  const created = await page.request.post('/api/datasources', {
    data: {
      name,
      type: ds.type,
      access: 'proxy',
      jsonData: { ...jsonData, profiles: { ...jsonData.profiles, tracesTable: 'no_such_traces' } },
    },
  });
  expect(created.ok(), await created.text()).toBe(true);
  const { datasource } = (await created.json()) as { datasource: { uid: string; type: string } };
  try {
    const traceId = '0123456789abcdef0123456789abcdef';
    const response = queryResponseWhere(page, (q) => q.traceId === traceId);
    await page.goto(exploreUrl(datasource, [{ refId: 'A', queryType: 'traces', profileTypeId: CPU, traceId }]));
    const body = (await (await response).json()) as { results: Record<string, { error?: string }> };
    const error = body.results.A.error ?? '';
    expect(error).toContain('the traces table does not exist');
    // Grafana shows a query's error under its editor; the editor adds no second copy.
    const shown = page.getByText('the traces table does not exist', { exact: false });
    await expect(shown.first()).toBeVisible();
    await expect(shown).toHaveCount(1);
    await screenshot(page, 'trace-missing-table');
  } finally {
    await page.request.delete(`/api/datasources/uid/${datasource.uid}`);
  }
});
