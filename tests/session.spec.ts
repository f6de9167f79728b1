import { expect, test } from './fixtures';

import { SKIP_REASON } from './helpers';

// Browser tests need a running Grafana with the built plugin (docs/grafana.md,
// "End-to-end tests"); without GRAFANA_URL they are skipped with this reason.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);

interface AuthToken {
  isActive: boolean;
  createdAt: string;
}

// tests/fixtures.ts signs every spec in afresh, so that Grafana's session
// rotation (every two minutes in the Grafana scripts/e2e.sh starts) never
// meets a stored session: a run passes however long it takes.
test("a spec's session is its own, younger than Grafana's rotation interval", async ({ page }) => {
  const started = Date.now();
  const resp = await page.request.get('/api/user/auth-tokens');
  expect(resp.ok(), `${resp.status()} ${await resp.text()}`).toBe(true);
  const active = ((await resp.json()) as AuthToken[]).filter((t) => t.isActive);
  expect(active, 'the session this spec uses').toHaveLength(1);
  const age = started - Date.parse(active[0].createdAt);
  // Signed in when the spec's fixtures were set up, seconds ago; Grafana
  // states createdAt in whole seconds.
  expect(age).toBeLessThan(60_000);

  await page.goto('/');
  await expect(page).not.toHaveURL(/\/login/);

  // The Grafana scripts/e2e.sh starts rotates sessions at its shortest
  // interval, so that every run crosses it; against another Grafana this
  // spec checks only the session.
  if (process.env.FLAMEHOUSE_E2E_GRAFANA_LOG) {
    const settings = await page.request.get('/api/admin/settings');
    expect(settings.ok(), await settings.text()).toBe(true);
    const auth = ((await settings.json()) as Record<string, Record<string, string>>).auth;
    expect(auth.token_rotation_interval_minutes).toBe('2');
  }
});
