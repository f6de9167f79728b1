import { expect, test } from './fixtures';

import {
  CPU,
  DATASOURCES_FILE,
  FLAME_GRAPH,
  Query,
  SERVICE,
  SKIP_REASON,
  column,
  dsQuery,
  exploreUrl,
  flameGraphTotal,
  framesOf,
  queryResponseWhere,
  screenshot,
  settledHour,
} from './helpers';

// Browser tests need a running Grafana with the built plugin and data in
// ClickHouse (docs/grafana.md, "End-to-end tests").
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const service = `{service_name="${SERVICE}"}`;
/** The Executables query type (docs/symbols.md); helpers' Query lists the types the other specs use. */
const EXECUTABLES = 'executables' as Query['queryType'];
const SOURCES = ['upload', 'debuginfod', 'ingest host', 'on host', 'none'];

test("the Executables view lists the demo's executables, and a row opens the flame graph of that executable", async ({
  readProvisionedDataSource,
  page,
  explorePage,
}) => {
  test.setTimeout(180_000); // the wait below for a settled minute with data, on a fresh start
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  const query = { refId: 'A', queryType: EXECUTABLES, profileTypeId: CPU, labelSelector: service };
  // A range that ended a minute ago, so that the link's flame graph sees the same samples as the view; on a fresh
  // start, once that minute holds the demo's first profiles.
  let range = settledHour();
  await expect
    .poll(
      async () => {
        range = settledHour();
        const [f] = await framesOf(await dsQuery(page, ds, [query], range), 'A');
        return f ? column(f, 'mappingFile').length : 0;
      },
      { message: 'the demo profiles flamehouse itself: its stacks run through mapped files', timeout: 120_000 }
    )
    .toBeGreaterThan(0);
  const response = queryResponseWhere(page, (q) => q.queryType === EXECUTABLES && q.labelSelector === service);
  await page.goto(exploreUrl(ds, [query], range));

  const [frame] = await framesOf(await response, 'A');
  expect(frame.schema.name).toBe('executables');
  expect(frame.schema.fields.map((f) => f.name)).toEqual([
    'executable',
    'buildId',
    'samples',
    'value',
    'symbolized',
    'frames',
    'source',
    'lastSeen',
    'mappingFile',
    'mappingFileFilter',
  ]);
  const files = column(frame, 'mappingFile').map(String);
  const buildIds = column(frame, 'buildId').map(String);
  expect(new Set(buildIds.filter(Boolean)).size, 'one row per build id').toBe(buildIds.filter(Boolean).length);
  const shares = column(frame, 'samples').map(Number);
  const sources = column(frame, 'source').map(String);
  const values = column(frame, 'value').map(Number);
  expect(files.length, 'the demo profiles flamehouse itself: its stacks run through mapped files').toBeGreaterThan(0);
  expect(
    [...shares].sort((a, b) => b - a),
    'the largest share first'
  ).toEqual(shares);
  for (const s of shares) {
    expect(s).toBeGreaterThan(0);
    expect(s).toBeLessThanOrEqual(1);
  }
  for (const s of sources) {
    expect(SOURCES).toContain(s);
  }
  // The Go binary's frames come named by the Go runtime's profiler.
  expect(sources, 'the Go binary is named on the host').toContain('on host');

  // The backend names the columns; the editor shows the type it runs.
  await expect(explorePage.tablePanel.fieldNames).toContainText([
    'Executable',
    'Samples',
    'Symbolized',
    'Symbol source',
  ]);
  await expect(explorePage.tablePanel.fieldNames).not.toContainText(['mappingFileFilter']);
  await expect(page.getByText('Type: Executables')).toBeVisible();

  // The first row's executable opens the flame graph of the stacks through it: its build id filled in (every name
  // it was mapped under), or without one its file.
  const flame = queryResponseWhere(page, (q) => {
    const x = q as { mappingFile?: string; buildId?: string };
    return (
      q.queryType === 'profile' &&
      (buildIds[0] ? x.buildId === buildIds[0] && !x.mappingFile : x.mappingFile === files[0])
    );
  });
  const link = explorePage.tablePanel.locator.locator('a[title="Flame graph of this executable"]').first();
  await expect(link).toBeVisible();
  await link.click();
  const total = flameGraphTotal(await framesOf(await flame, 'A'));
  expect(total, "the flame graph's total is the row's value").toBe(values[0]);
  await expect(page.locator(FLAME_GRAPH).first()).toBeVisible();
  await screenshot(page, 'explore-executables');
});
