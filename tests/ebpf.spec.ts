import { expect, test } from './fixtures';

import { selectors } from '../src/selectors';
import {
  CPU,
  DATASOURCES_FILE,
  FLAME_GRAPH,
  FrameJSON,
  Query,
  Range,
  SKIP_REASON,
  choose,
  column,
  dsQuery,
  exploreUrl,
  framesOf,
  labelsOf,
  queryResponseWhere,
  screenshot,
} from './helpers';

// A host profiled by the real OpenTelemetry eBPF profiler: scripts/e2e.sh runs it as root against the same
// `flamehouse run` and waits until its samples are stored. It sends one resource per process (process.pid,
// process.executable.name) and no service.name, and frames typed by profile.frame.type, the kernel's among them.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);
test.skip(
  !process.env.FLAMEHOUSE_E2E_AGENT,
  process.env.FLAMEHOUSE_E2E_AGENT_SKIP_REASON ||
    'FLAMEHOUSE_E2E_AGENT is not set: scripts/e2e.sh runs the eBPF profiler (as root) and sets it once its samples are stored'
);

const q = selectors.query;
/** What the agent's processes are named: every process as unknown_service:<executable> (the OTel default). */
const AGENT = '{service_name=~"unknown_service.*"}';

type FlameQuery = Query & { hideFrames?: string[] };

/** The last hour up to 30 s ago, in epoch milliseconds: late enough that no report of it is still on its way. */
function settled(): Range {
  const to = Date.now() - 30_000;
  return { from: String(to - 3_600_000), to: String(to) };
}

/** The flame graph frame's rows: level, value, self and label. */
function flameRows(frame: FrameJSON) {
  const level = column(frame, 'level').map(Number);
  const value = column(frame, 'value').map(Number);
  const self = column(frame, 'self').map(Number);
  return labelsOf(frame).map((label, i) => ({ label, level: level[i], value: value[i], self: self[i] }));
}

/** The function with the most self value, the top table's first row (its default order). */
function topSelf(rows: ReturnType<typeof flameRows>): string {
  const self = new Map<string, number>();
  for (const r of rows.slice(1)) {
    self.set(r.label, (self.get(r.label) ?? 0) + r.self);
  }
  return [...self.entries()].sort((a, b) => b[1] - a[1])[0][0];
}

/** The flame graph frame of a query response. */
async function flameOf(resp: Parameters<typeof framesOf>[0]): Promise<FrameJSON> {
  const frame = (await framesOf(resp, 'A')).find((f) => f.schema.name === 'response');
  if (!frame) {
    throw new Error('no flame graph frame');
  }
  return frame;
}

test('a host profiled by the eBPF profiler: a flame graph by process picked from the editor, kernel frames marked, then hidden', async ({
  readProvisionedDataSource,
  page,
}) => {
  test.setTimeout(180_000);
  const ds = await readProvisionedDataSource({ fileName: DATASOURCES_FILE });
  // A range that ended 30 s ago (the agent reports every 5 s: every query below sees the same samples), once it
  // holds the agent's report of the Flamehouse it sends to, of kernel threads, and kernel frames.
  let range = settled();
  const base: FlameQuery = { refId: 'A', queryType: 'profile', profileTypeId: CPU, labelSelector: AGENT };
  await expect
    .poll(
      async () => {
        range = settled();
        const query = { ...base, groupBy: ['process_executable_name'] };
        const rows = flameRows(await flameOf(await dsQuery(page, ds, [query], range)));
        const groups = rows.filter((r) => r.level === 1).map((r) => r.label);
        return [
          groups.includes('flamehouse'),
          groups.includes('(no process_executable_name)'),
          rows.some((r) => r.label.endsWith(' [kernel]')),
        ];
      },
      { message: "the agent's reports of flamehouse, of kernel threads, and kernel frames", timeout: 120_000 }
    )
    .toEqual([true, true, true]);

  // Explore on the agent's processes; the user picks the view by process from the Group by list: no selector typed.
  await page.goto(exploreUrl(ds, [base], range));
  const options = page.getByTestId(q.options);
  await options.getByTestId(q.optionsSummary).click();
  const grouped = queryResponseWhere(
    page,
    (x) => x.queryType === 'profile' && (x.groupBy ?? []).includes('process_executable_name')
  );
  await choose(page, options.getByTestId(q.groupBy), 'process.executable.name');
  const byProcess = flameRows(await flameOf(await grouped));
  await expect(options.getByTestId(q.optionsSummary)).toContainText('Group by: process_executable_name');

  // One node per process under the root, the agent itself among them, and kernel threads apart.
  const processes = byProcess.filter((r) => r.level === 1).map((r) => r.label);
  expect(processes, 'the agent profiles the Flamehouse it reports to').toContain('flamehouse');
  expect(processes, 'kernel threads have no executable').toContain('(no process_executable_name)');
  expect(
    processes.every((p) => !p.startsWith('unknown_service')),
    'processes by executable, not by service'
  ).toBe(true);
  const total = byProcess[0].value;
  expect(
    byProcess.filter((r) => r.level === 1).reduce((s, r) => s + r.value, 0),
    'the groups add up to the root'
  ).toBe(total);
  const kernel = byProcess.filter((r) => r.label.endsWith(' [kernel]'));
  expect(kernel.length, 'kernel frames are marked').toBeGreaterThan(0);
  await expect(page.locator(FLAME_GRAPH).first()).toBeVisible();
  // Grafana's search (a regexp over the labels) finds the marked kernel functions in its top table and graph.
  const search = page.locator('input[placeholder="Search..."]').last(); // the flame graph's, after the top bar's
  await search.fill(String.raw`\[kernel\]`);
  await expect(
    page
      .getByTestId('topTable')
      .getByText(/ \[kernel\]$/)
      .first()
  ).toBeVisible();
  await screenshot(page, 'ebpf-by-process-kernel-marked');

  // Hide kernel frames: their samples go to the functions that called into the kernel; the total stays.
  const hidden = queryResponseWhere(
    page,
    (x) => x.queryType === 'profile' && ((x as FlameQuery).hideFrames ?? []).includes('kernel')
  );
  await options.getByTestId(q.kernelFrames).getByRole('radio', { name: 'Hide', exact: true }).check({ force: true });
  const withoutKernel = flameRows(await flameOf(await hidden));
  expect(withoutKernel.filter((r) => r.label.endsWith(' [kernel]'))).toEqual([]);
  expect(withoutKernel[0].value, 'the same samples').toBe(total);
  // Hiding kernel frames moves samples within a process: every process keeps its samples. Past the node budget the
  // smallest processes of a busy host may fold into "other" in one graph and not in the other (the graphs' shapes
  // differ), so a process missing from one side must be one of those: under 1 % of the samples.
  const perProcess = (rows: typeof byProcess) =>
    new Map(rows.filter((r) => r.level === 1 && r.label !== 'other').map((r) => [r.label, r.value]));
  const processesBefore = perProcess(byProcess);
  const processesAfter = perProcess(withoutKernel);
  for (const [name, value] of processesBefore) {
    if (processesAfter.has(name)) {
      expect(processesAfter.get(name), `${name} keeps its samples with kernel frames hidden`).toBe(value);
    } else {
      expect(value, `${name}, not in the graph without kernel frames, is a small process`).toBeLessThan(total / 100);
    }
  }
  expect([...processesAfter.keys()], 'the agent and kernel threads stay').toEqual(
    expect.arrayContaining(['flamehouse', '(no process_executable_name)'])
  );
  await expect(options.getByTestId(q.optionsSummary)).toContainText('Kernel frames: hidden');
  await search.fill(String.raw`\[kernel\]`);
  await expect(page.getByTestId('topTable').getByText(/ \[kernel\]$/)).toHaveCount(0);
  await search.fill('');
  await expect(page.getByTestId('topTable').getByText(topSelf(withoutKernel), { exact: true }).first()).toBeVisible();
  await screenshot(page, 'ebpf-by-process-kernel-hidden');
});

test('the Hosts dashboard shows CPU and the flame graph by process, and the executables one row per build id', async ({
  page,
}) => {
  const grouped = queryResponseWhere(page, (x) => x.queryType === 'profile' && (x.groupBy ?? []).length > 0);
  const executables = queryResponseWhere(page, (x) => (x.queryType as string) === 'executables');
  const top = queryResponseWhere(page, (x) => x.queryType === 'table');
  await page.goto('/d/flamehouse-hosts?orgId=1');
  const frame = await flameOf(await grouped);
  const processes = flameRows(frame)
    .filter((r) => r.level === 1)
    .map((r) => r.label);
  expect(processes).toContain('flamehouse');
  const [functions] = await framesOf(await top, 'A');
  const names = column(functions, 'label').map(String);
  expect(names.length, 'the top functions').toBeGreaterThan(0);
  expect(
    names.filter((n) => n.endsWith(' [kernel]')),
    'kernel frames hidden'
  ).toEqual([]);
  const [exes] = await framesOf(await executables, 'A');
  const ids = column(exes, 'buildId').map(String).filter(Boolean);
  expect(new Set(ids).size, 'one row per build id').toBe(ids.length);
  await expect(page.locator(FLAME_GRAPH).first()).toBeVisible();
  await expect(page.getByText('CPU flame graph by process.executable.name')).toBeVisible();
  // The tables below draw their rows: the top functions (kernel hidden) and the executables, by build id.
  await expect(page.getByRole('columnheader', { name: 'Function' })).toBeVisible();
  await expect(page.getByRole('columnheader', { name: 'Build ID' })).toBeVisible();
  await expect(page.getByText(names[0], { exact: true }).first()).toBeVisible();
  await expect(page.getByRole('columnheader', { name: 'mappingFileFilter' })).toHaveCount(0);
  await screenshot(page, 'ebpf-hosts-dashboard');
});
