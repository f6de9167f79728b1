import { expect, test } from './fixtures';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { SKIP_REASON } from './helpers';

// Browser tests need a running Grafana with the built plugin (docs/grafana.md,
// "End-to-end tests"); without GRAFANA_URL they are skipped with this reason.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

const PLUGIN_ID = 'flamehouse-profiles-datasource';
const root = join(__dirname, '..');

test('Grafana runs the plugin of this checkout', async ({ page }) => {
  const resp = await page.request.get(`/api/plugins/${PLUGIN_ID}/settings`);
  expect(resp.ok(), `the plugin ${PLUGIN_ID} is not installed`).toBe(true);
  const settings = (await resp.json()) as {
    type: string;
    info: { version: string };
    signature?: string;
  };
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  expect(settings.type).toBe('datasource');
  expect(settings.info.version).toBe(pkg.version);
  expect(settings.signature).toBe('unsigned');
  // The backend runs: the provisioned datasource answers its health check.
  const health = await page.request.get('/api/datasources/uid/flamehouse/health');
  expect(health.ok(), await health.text()).toBe(true);
});

test('the log line docs/grafana.md tells users to look for is what Grafana prints', async () => {
  const log = process.env.FLAMEHOUSE_E2E_GRAFANA_LOG;
  test.skip(!log, 'FLAMEHOUSE_E2E_GRAFANA_LOG is not set: scripts/e2e.sh names the log of the Grafana it starts');
  const docs = readFileSync(join(root, 'docs', 'grafana.md'), 'utf8');
  const quoted = /its log says\s+`([^`]+)`/.exec(docs);
  expect(quoted, 'docs/grafana.md quotes the log line after "its log says"').not.toBeNull();
  const text = readFileSync(log!, 'utf8');
  const lines = text.split('\n').filter((l) => l.includes(PLUGIN_ID));
  // Grafana writes logfmt: the quoted message appears in msg="...", the plugin id as a key=value pair.
  const [message, ...pairs] = quoted![1].split(/\s+(?=\w+=)/);
  const match = lines.find((l) => l.includes(message) && pairs.every((p) => l.includes(p)));
  expect(
    match,
    `no line of Grafana's log holds "${quoted![1]}"; lines about the plugin:\n${lines.join('\n')}`
  ).toBeDefined();
});
