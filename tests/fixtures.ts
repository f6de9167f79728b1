import { expect, test as pluginTest } from '@grafana/plugin-e2e';

/**
 * The specs' `test`: plugin-e2e's, signed in afresh for every spec.
 *
 * A session stored once for the whole run does not last: Grafana rotates a
 * session token every `token_rotation_interval_minutes` (10 by default) and
 * refuses the old one shortly after, so a run that lasts longer sees its
 * later specs redirected to the login page. Each spec therefore starts with
 * a session of its own, made by signing in through the API as plugin-e2e's
 * auth setup does; within a spec the Grafana frontend rotates it as it does
 * for any user. scripts/e2e.sh runs Grafana with a two-minute rotation
 * interval, so that every run crosses it many times.
 */
export const test = pluginTest.extend({
  storageState: async ({ playwright, baseURL, user }, use) => {
    const request = await playwright.request.newContext({ baseURL, storageState: { cookies: [], origins: [] } });
    try {
      const resp = await request.post('/login', { data: user });
      expect(resp.ok(), `signing in as ${user?.user}: ${resp.status()} ${await resp.text()}`).toBe(true);
      await use(await request.storageState());
    } finally {
      await request.dispose();
    }
  },
});

export { expect };
