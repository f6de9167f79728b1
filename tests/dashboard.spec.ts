import { expect, test } from './fixtures';

import { CPU, DASHBOARD_FILE, FLAME_GRAPH, FrameJSON, SERVICE, SKIP_REASON, column, screenshot } from './helpers';

// Browser tests need a running Grafana with the built plugin, the provisioned
// dashboard and data in ClickHouse (docs/grafana.md, "End-to-end tests").
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

interface SentQuery {
  refId: string;
  queryType?: string;
  labelSelector?: string;
  profileTypeId?: string;
}

interface PanelJSON {
  id: number;
  title: string;
  type: string;
  targets: SentQuery[];
}

/** Whether a query's frames hold data: a flame graph beyond its root, table rows, or series points. */
function holdsData(queryType: string | undefined, frames: FrameJSON[]): boolean {
  switch (queryType) {
    case 'profile':
    case 'diff':
      return frames.some((f) => f.schema.name === 'response' && column(f, 'level').length > 1);
    case 'table':
      return frames.some((f) => column(f, 'label').length > 0);
    default:
      return frames.some((f) => (f.data?.values[0] ?? []).length > 0);
  }
}

test('the example dashboard draws every panel with data and no error', async ({
  gotoDashboardPage,
  readProvisionedDashboard,
  page,
}) => {
  test.setTimeout(180_000); // every panel of the dashboard, each answer up to 60 s below
  const dashboard = await readProvisionedDashboard({ fileName: DASHBOARD_FILE });
  const panels = (dashboard as unknown as { panels: PanelJSON[] }).panels;
  // Every answer to a panel's query, by panel id (Grafana sends X-Panel-Id).
  const answers = new Map<string, Array<{ query: SentQuery; frames: FrameJSON[]; error?: string }>>();
  page.on('response', async (resp) => {
    const req = resp.request();
    if (!req.url().includes('/api/ds/query') || !req.headers()['x-panel-id']) {
      return;
    }
    const queries = ((req.postDataJSON() as { queries?: SentQuery[] })?.queries ?? []) as SentQuery[];
    const body = (await resp.json().catch(() => ({}))) as {
      results?: Record<string, { frames?: FrameJSON[]; error?: string }>;
    };
    const list = answers.get(req.headers()['x-panel-id']) ?? [];
    for (const query of queries) {
      const result = body.results?.[query.refId];
      list.push({ query, frames: result?.frames ?? [], error: result?.error });
    }
    answers.set(req.headers()['x-panel-id'], list);
  });

  const dashboardPage = await gotoDashboardPage({
    uid: dashboard.uid,
    queryParams: new URLSearchParams({ 'var-service': SERVICE }),
  });

  // Grafana renders a panel, and runs its queries, only once it is in view.
  // Wait for the dashboard to draw before scrolling: plugin-e2e's scrollIntoView
  // pages down to the bottom when the panel is not there yet, which leaves the
  // top panels out of view (and unqueried) on a busy machine.
  await expect(dashboardPage.getPanelByTitle(panels[0].title).locator).toBeVisible({ timeout: 60_000 });
  for (const p of panels) {
    const panel = dashboardPage.getPanelByTitle(p.title);
    await panel.scrollIntoView();
    // Panels query at once while other specs load the same two cores: an
    // answer may take longer than the default 20 s on a busy machine. The
    // panel is kept in view while waiting.
    await expect
      .poll(
        async () => {
          await panel.locator.scrollIntoViewIfNeeded({ timeout: 1_000 }).catch(() => undefined);
          return answers.get(String(p.id))?.length ?? 0;
        },
        { message: `${p.title}: no query answered`, timeout: 60_000 }
      )
      .toBeGreaterThan(0);
    await expect(panel.getErrorIcon(), p.title).toHaveCount(0);
    for (const a of answers.get(String(p.id)) ?? []) {
      expect(a.error, `${p.title}: ${a.error}`).toBeUndefined();
      // The variables resolved: the service as chosen, namespace and pod "All" (.*).
      expect(a.query.labelSelector).toContain(`service_name="${SERVICE}"`);
      expect(a.query.labelSelector).not.toContain('$');
      expect(holdsData(a.query.queryType, a.frames), `${p.title}: ${a.query.queryType} query without data`).toBe(true);
    }
  }

  const flame = dashboardPage.getPanelByTitle('CPU flame graph');
  await expect(flame.locator.locator(FLAME_GRAPH)).toBeVisible();

  const table = dashboardPage.getPanelByTitle('Top functions');
  await table.scrollIntoView();
  // The backend names the columns; the dashboard renames nothing.
  await expect(table.fieldNames).toContainText(['Function', 'Self', 'Total']);
  await expect(table.data.first()).toBeVisible();

  // Legends name the pods (the demo has none: "(no k8s_pod_name)"), never the profile type id.
  const cpu = dashboardPage.getPanelByTitle('CPU by pod');
  await expect(cpu.locator.getByText(CPU)).toHaveCount(0);
  await expect(cpu.locator.getByText('(no k8s_pod_name)')).toBeVisible();
  // In-use memory is an amount: its legend's last value is in bytes, not bytes per second.
  const memory = dashboardPage.getPanelByTitle('Memory in use by pod');
  const last = memory.locator.locator('td').filter({ hasText: /B$/ }).first();
  await expect(last).toBeVisible();
  await expect(last).toHaveText(/^[\d.]+ (B|KiB|MiB|GiB)$/);
  await expect(memory.locator.getByText(/\/s$/)).toHaveCount(0);
  await page.mouse.move(0, 0);
  await screenshot(page, 'dashboard');
});
