import type { PluginOptions } from '@grafana/plugin-e2e';
import { defineConfig, devices } from '@playwright/test';
import { join } from 'node:path';

/**
 * Browser tests (tests/*.spec.ts) against a real Grafana with the plugin, the provisioning of provisioning/ and a
 * Flamehouse with data behind it. `./scripts/e2e.sh` sets all of that up (Grafana from GRAFANA_HOME, GRAFANA_TARBALL
 * or ../shared/grafana, the plugin installed from its release zip) and runs them; see docs/grafana.md. Against a
 * Grafana you run yourself:
 *
 *   GRAFANA_URL=http://localhost:3000 npm run e2e
 *
 * They use Debian's Chromium (apt-get install chromium), never a browser download: CHROMIUM_PATH, default
 * /usr/bin/chromium. Without GRAFANA_URL every spec skips with its reason and no browser is started.
 */

const grafanaUrl = process.env.GRAFANA_URL;
const artifacts = process.env.FLAMEHOUSE_E2E_ARTIFACTS || join(__dirname, 'test-results', 'e2e');

// Said once, by the runner (workers load this file too, with TEST_WORKER_INDEX set).
if (!grafanaUrl && process.env.TEST_WORKER_INDEX === undefined) {
  console.log(`${process.env.FLAMEHOUSE_E2E_SKIP_REASON || 'GRAFANA_URL is not set'}: the browser tests are skipped.`);
}

const browser = {
  ...devices['Desktop Chrome'],
  // Wide enough for Grafana's flame graph to show its top table beside the graph.
  viewport: { width: 1600, height: 1000 },
  launchOptions: {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  },
};

export default defineConfig<PluginOptions>({
  testDir: './tests',
  outputDir: join(artifacts, 'results'),
  // Two cores: Grafana, ClickHouse and the browser share them.
  workers: 2,
  fullyParallel: true,
  forbidOnly: !!process.env.CI,
  // In CI (FLAMEHOUSE_E2E_REQUIRE=1) a spec that passes only on its retry is reported as flaky.
  retries: process.env.CI || process.env.FLAMEHOUSE_E2E_REQUIRE === '1' ? 1 : 0,
  // Queries of a cold datasource read ClickHouse for the first time.
  timeout: 90_000,
  expect: { timeout: 20_000 },
  reporter: 'list',
  use: {
    baseURL: grafanaUrl || 'http://localhost:3000',
    // The provisioning Grafana runs with: scripts/e2e.sh points it at its own ports.
    provisioningRootDir: process.env.FLAMEHOUSE_E2E_PROVISIONING || join(__dirname, 'provisioning'),
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
  },
  // Every spec signs in afresh (tests/fixtures.ts: admin/admin unless GRAFANA_ADMIN_USER / GRAFANA_ADMIN_PASSWORD
  // say otherwise), so that Grafana's session rotation never catches a stored session, however long the run takes.
  projects: [{ name: 'chromium', use: browser }],
});
