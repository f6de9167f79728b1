import type { PluginOptions } from '@grafana/plugin-e2e';
import { defineConfig, devices } from '@playwright/test';
import { dirname } from 'node:path';

/**
 * Browser tests (tests/*.spec.ts) against a running Grafana with the built
 * plugin and the provisioning of provisioning/ (see docs/grafana.md):
 *
 *   GRAFANA_URL=http://localhost:3000 npm run e2e
 *
 * They use Debian's Chromium (apt-get install chromium), never a browser
 * download: CHROMIUM_PATH, default /usr/bin/chromium. Without GRAFANA_URL
 * every spec skips with its reason and no browser is started, so the run
 * passes on a machine without Grafana or Chromium.
 */

const grafanaUrl = process.env.GRAFANA_URL;
const pluginE2eAuth = `${dirname(require.resolve('@grafana/plugin-e2e'))}/auth`;

// Said once, by the runner (workers load this file too, with TEST_WORKER_INDEX set).
if (!grafanaUrl && process.env.TEST_WORKER_INDEX === undefined) {
  console.log(
    'GRAFANA_URL is not set: the browser tests are skipped (set it to a Grafana with the plugin to run them).'
  );
}

const browser = {
  ...devices['Desktop Chrome'],
  launchOptions: {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  },
};

export default defineConfig<PluginOptions>({
  testDir: './tests',
  fullyParallel: true,
  forbidOnly: !!process.env.CI,
  retries: process.env.CI ? 2 : 0,
  // Queries of a cold datasource read ClickHouse for the first time.
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: 'list',
  use: {
    baseURL: grafanaUrl || 'http://localhost:3000',
    trace: 'on-first-retry',
  },
  // With a Grafana: log in once (plugin-e2e's auth setup, admin/admin unless
  // GRAFANA_ADMIN_USER / GRAFANA_ADMIN_PASSWORD say otherwise), then run every
  // spec with that session. Without one: no login, so nothing needs a browser.
  projects: grafanaUrl
    ? [
        { name: 'auth', testDir: pluginE2eAuth, testMatch: [/.*\.js/], use: browser },
        {
          name: 'chromium',
          use: { ...browser, storageState: 'playwright/.auth/admin.json' },
          dependencies: ['auth'],
        },
      ]
    : [{ name: 'chromium', use: browser }],
});
