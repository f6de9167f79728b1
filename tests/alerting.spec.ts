import { expect, test } from './fixtures';
import type { APIRequestContext } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

import { SKIP_REASON } from './helpers';

// Browser tests need a running Grafana with the built plugin, the provisioning
// of provisioning/ (alerting/ included) and data in ClickHouse
// (docs/grafana.md, "End-to-end tests"). These read Grafana's alerting API.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const RULE = 'flamehouse-engine-cpu-share';

interface AlertQuery {
  refId: string;
  datasourceUid: string;
  relativeTimeRange?: { from: number; to: number };
  model: Record<string, unknown> & { conditions?: Array<{ evaluator: { type: string; params: number[] } }> };
}

interface ProvisionedRule {
  uid: string;
  title: string;
  condition: string;
  folderUID: string;
  ruleGroup: string;
  data: AlertQuery[];
  noDataState: string;
  execErrState: string;
}

/** A rule as Grafana's Prometheus-style rules API reports it: state inactive (Normal), pending or firing. */
interface RuleStatus {
  name: string;
  uid?: string;
  state: string;
  health: string;
  lastError?: string;
  lastEvaluation: string;
  alerts?: Array<{ state: string; labels: Record<string, string> }>;
}

/** The provisioning file Grafana runs with (scripts/e2e.sh copies provisioning/alerting). */
function provisionedFile(): { groups: Array<{ rules: Array<{ uid: string; title: string; data: AlertQuery[] }> }> } {
  const root = process.env.FLAMEHOUSE_E2E_PROVISIONING || join(__dirname, '..', 'provisioning');
  return parse(readFileSync(join(root, 'alerting', 'flamehouse.yaml'), 'utf8'));
}

async function json<T>(resp: Awaited<ReturnType<APIRequestContext['get']>>): Promise<T> {
  expect(resp.ok(), `${resp.url()}: ${resp.status()} ${await resp.text()}`).toBe(true);
  return (await resp.json()) as T;
}

/** Every Grafana-managed rule's status, by title. */
async function statuses(request: APIRequestContext): Promise<Map<string, RuleStatus>> {
  const body = await json<{ data: { groups: Array<{ rules: RuleStatus[] }> } }>(
    await request.get('/api/prometheus/grafana/api/v1/rules')
  );
  return new Map(body.data.groups.flatMap((g) => g.rules).map((r) => [r.name, r]));
}

/** Waits until a rule was evaluated after a time, and returns its status. */
async function evaluated(request: APIRequestContext, title: string, after: number): Promise<RuleStatus> {
  let status: RuleStatus | undefined;
  await expect
    .poll(
      async () => {
        status = (await statuses(request)).get(title);
        return status ? Date.parse(status.lastEvaluation) : 0;
      },
      { message: `rule "${title}" evaluated`, timeout: 90_000, intervals: [2_000] }
    )
    .toBeGreaterThan(after);
  return status!;
}

/** Normal or Firing, as Grafana's alert list shows a rule's state. */
function stateOf(s: RuleStatus): string {
  switch (s.state) {
    case 'inactive':
      return 'Normal';
    case 'firing':
      return 'Firing';
  }
  return s.state;
}

/** The value of a rule's reduce expression (B): the demo's value, computed by Grafana's own evaluation. */
async function reducedValue(request: APIRequestContext, rule: ProvisionedRule): Promise<number> {
  const body = await json<{
    results: Record<string, { status: number; error?: string; frames?: Array<{ data: { values: number[][] } }> }>;
  }>(await request.post('/api/v1/eval', { data: { data: rule.data, condition: rule.condition } }));
  for (const [ref, r] of Object.entries(body.results)) {
    expect(r.error, `${ref}: ${r.error}`).toBeUndefined();
  }
  const values = body.results.B?.frames?.[0]?.data.values[0] ?? [];
  expect(values, 'the reduce expression has one value').toHaveLength(1);
  return Number(values[0]);
}

test('the provisioned alert rules load and evaluate on the demo data', async ({ page }) => {
  const request = page.request;
  const file = provisionedFile();
  for (const want of file.groups.flatMap((g) => g.rules)) {
    const rule = await json<ProvisionedRule>(await request.get(`/api/v1/provisioning/alert-rules/${want.uid}`));
    expect(rule.title).toBe(want.title);
    // As provisioned: the datasource's query model, untouched.
    const query = rule.data.find((d) => d.datasourceUid === 'flamehouse');
    expect(query?.model).toMatchObject(want.data.find((d) => d.datasourceUid === 'flamehouse')!.model);

    const status = await evaluated(request, rule.title, 0);
    expect(status.health, `${rule.title}: ${status.lastError}`).toBe('ok');
    expect(status.lastError ?? '').toBe('');
    // Its state follows its threshold and the demo's value, as Grafana computes it.
    const value = await reducedValue(request, rule);
    const threshold = rule.data.find((d) => d.refId === 'C')!.model.conditions![0].evaluator.params[0];
    expect(['Normal', 'pending', 'Firing']).toContain(stateOf(status));
    if (value <= threshold) {
      expect(stateOf(status), `${rule.title}: ${value} ≤ ${threshold}`).toBe('Normal');
    }
  }
});

test('an alert query without samples is no data to Grafana, not zero', async ({ page }) => {
  const request = page.request;
  const rule = await json<ProvisionedRule>(await request.get(`/api/v1/provisioning/alert-rules/${RULE}`));
  const data = rule.data.map((d) =>
    d.datasourceUid === 'flamehouse'
      ? { ...d, model: { ...d.model, labelSelector: '{service_name="no-such-service-e2e"}' } }
      : d
  );
  const body = await json<{
    results: Record<string, { error?: string; frames?: Array<{ schema: { name?: string } }> }>;
  }>(await request.post('/api/v1/eval', { data: { data, condition: rule.condition } }));
  expect(body.results.A.error).toBeUndefined();
  expect(body.results.B.frames?.[0]?.schema.name).toBe('no data');
});

test("the engine's CPU share rule fires below the demo's value and stays Normal above it", async ({ page }) => {
  const request = page.request;
  const rule = await json<ProvisionedRule>(await request.get(`/api/v1/provisioning/alert-rules/${RULE}`));
  const model = rule.data.find((d) => d.datasourceUid === 'flamehouse')!.model;
  expect(model).toMatchObject({ queryType: 'metrics', function: '[libchdb.so]', ratio: true });
  const value = await reducedValue(request, rule);
  expect(value, "the embedded engine's share of the demo's CPU time").toBeGreaterThan(0);
  expect(value).toBeLessThanOrEqual(1);

  // Copies of the rule with the threshold on either side of the value, evaluated every 10 s, firing at once.
  const group = `e2e thresholds ${Date.now()}`;
  const copies = [
    {
      uid: `e2e-low-${Date.now()}`,
      title: `e2e: engine share above ${value / 2}`,
      threshold: value / 2,
      want: 'Firing',
    },
    {
      uid: `e2e-high-${Date.now()}`,
      title: `e2e: engine share above ${value * 2}`,
      threshold: value * 2,
      want: 'Normal',
    },
  ];
  const rules = copies.map((c) => ({
    uid: c.uid,
    title: c.title,
    condition: rule.condition,
    folderUID: rule.folderUID,
    ruleGroup: group,
    orgID: 1,
    for: '0s',
    noDataState: rule.noDataState,
    execErrState: rule.execErrState,
    data: rule.data.map((d) =>
      d.refId === 'C'
        ? { ...d, model: { ...d.model, conditions: [{ evaluator: { type: 'gt', params: [c.threshold] } }] } }
        : d
    ),
  }));
  const created = Date.now();
  const put = await request.put(
    `/api/v1/provisioning/folder/${rule.folderUID}/rule-groups/${encodeURIComponent(group)}`,
    {
      headers: { 'X-Disable-Provenance': 'true' },
      data: { title: group, folderUid: rule.folderUID, interval: 10, rules },
    }
  );
  expect(put.ok(), await put.text()).toBe(true);
  try {
    for (const c of copies) {
      const status = await evaluated(request, c.title, created);
      expect(status.health, `${c.title}: ${status.lastError}`).toBe('ok');
      expect(stateOf(status), `${c.title} with the demo's value ${value}`).toBe(c.want);
      if (c.want === 'Firing') {
        expect(status.alerts?.map((a) => a.state)).toContain('Alerting');
      }
    }
  } finally {
    for (const c of copies) {
      await request.delete(`/api/v1/provisioning/alert-rules/${c.uid}`, {
        headers: { 'X-Disable-Provenance': 'true' },
      });
    }
  }
});
