import { expect, test } from './fixtures';
import type { Locator, Page, Request } from '@playwright/test';

import {
  CPU,
  SERVICE,
  SKIP_REASON,
  type DatasourceRef,
  clickhouseRows,
  exploreUrl,
  flameGraphTotal,
  framesOf,
  queryResponseWhere,
  screenshot,
} from './helpers';

// Grafana's Tempo datasource on a real Tempo (scripts/e2e.sh starts ../shared/tempo and points flamehouse run's
// self-tracing at it, so Tempo holds the demo's own traces, with pyroscope.profile.id on the spans whose work was
// profiled), and the provisioning of provisioning/examples/tempo.yaml and correlations.yaml.
test.skip(!process.env.GRAFANA_URL, SKIP_REASON);
const TEMPO_URL = process.env.FLAMEHOUSE_E2E_TEMPO;
test.skip(
  !TEMPO_URL,
  process.env.FLAMEHOUSE_E2E_TEMPO_SKIP_REASON ||
    'FLAMEHOUSE_E2E_TEMPO is not set: scripts/e2e.sh starts ../shared/tempo and sets it to its URL'
);

/** provisioning/examples/tempo.yaml: trace to profiles to `flamehouse`; correlations.yaml: a correlation. */
const TEMPO: DatasourceRef = { uid: 'tempo', type: 'tempo' };
const TEMPO_CORRELATIONS: DatasourceRef = { uid: 'tempo-correlations', type: 'tempo' };
/** The Flamehouse datasource whose "Open trace" opens Tempo (tracesDatasourceUid: tempo). */
const FLAMEHOUSE_TEMPO: DatasourceRef = { uid: 'flamehouse-tempo', type: 'flamehouse-profiles-datasource' };

/** A span of the demo with CPU samples, as ClickHouse holds it, whose trace Tempo finds. */
interface ProfiledSpan {
  traceID: string;
  spanID: string;
  name: string;
  /** Start and end, epoch ms (float). */
  startMs: number;
  endMs: number;
  /** The sum of the span's CPU samples (ns), read with SQL. */
  total: number;
}

/**
 * Spans of the demo with CPU samples, most first, that ended over 40 s ago: a span's samples arrive with the CPU
 * profile of the window it ran in (15 s) or, when it crossed into the next, with that one, so their sum no longer
 * changes. Read with SQL: the oracle of the flame graphs below.
 */
async function settledProfiledSpans(): Promise<ProfiledSpan[]> {
  const rows = await clickhouseRows(`
    SELECT t.TraceId, t.SpanId, t.SpanName, toUnixTimestamp64Nano(t.Timestamp), t.Duration, s.total
    FROM otel.otel_traces AS t
    INNER JOIN (
      SELECT SpanId, sum(Value) AS total FROM otel.otel_profile_samples
      WHERE ServiceName = '${SERVICE}' AND ProfileType = '${CPU}' AND SpanId != '' GROUP BY SpanId
    ) AS s ON s.SpanId = t.SpanId
    WHERE t.ServiceName = '${SERVICE}' AND t.Timestamp > now() - INTERVAL 1 HOUR
      AND t.Timestamp + toIntervalNanosecond(t.Duration) < now() - INTERVAL 40 SECOND
    ORDER BY s.total DESC, t.SpanId LIMIT 10
    FORMAT TabSeparated`);
  return rows.map(([traceID, spanID, name, startNs, durationNs, total]) => ({
    traceID,
    spanID,
    name,
    startMs: Number(BigInt(startNs) / 1000n) / 1000,
    endMs: Number((BigInt(startNs) + BigInt(durationNs)) / 1000n) / 1000,
    total: Number(total),
  }));
}

/**
 * Whether Tempo's TraceQL search finds the span (by its id, over its start ± 10 minutes) with the attribute Grafana's
 * trace to profiles reads, pyroscope.profile.id, set to its own id, as flamehouse run's self-tracing sends it.
 */
async function tempoFinds(span: ProfiledSpan): Promise<boolean> {
  const start = Math.floor(span.startMs / 1000) - 600;
  const q = encodeURIComponent(`{span:id="${span.spanID}" && span.pyroscope.profile.id="${span.spanID}"}`);
  const resp = await fetch(`${TEMPO_URL}/api/search?q=${q}&start=${start}&end=${start + 1200}`);
  const body = (await resp.json()) as { traces?: Array<{ traceID: string }> };
  return !!body.traces?.some((t) => t.traceID === span.traceID);
}

/** The demo's span with the most CPU samples whose trace Tempo holds; waits up to two minutes for one. */
async function profiledSpanInTempo(): Promise<ProfiledSpan> {
  let found: ProfiledSpan | undefined;
  await expect
    .poll(
      async () => {
        for (const span of await settledProfiledSpans()) {
          if (await tempoFinds(span)) {
            found = span;
            return true;
          }
        }
        return false;
      },
      { timeout: 120_000, intervals: [2_000], message: 'a settled span with CPU samples that Tempo finds' }
    )
    .toBe(true);
  return found!;
}

/** A query of a request to /api/ds/query, with the request's range (epoch ms). */
interface SentQuery {
  query: Record<string, unknown>;
  from: number;
  to: number;
}

function sentQuery(req: Request, match: (q: Record<string, unknown>) => boolean): SentQuery | undefined {
  const body = req.postDataJSON() as { from: string; to: string; queries: Array<Record<string, unknown>> };
  const query = body.queries.find(match);
  return query && { query, from: Number(body.from), to: Number(body.to) };
}

/** A flame graph query for the span, as Grafana sends it: any refId, spanSelector [the span id]. */
const forSpan = (span: ProfiledSpan) => (q: Record<string, unknown>) =>
  Array.isArray(q.spanSelector) && q.spanSelector[0] === span.spanID;

/**
 * The query Grafana builds from provisioning/examples/tempo.yaml's tracesToProfiles for a span: the profile type,
 * the selector from the span's service.name, the span's pyroscope.profile.id (its id), to the Flamehouse datasource.
 */
function tracesToProfilesQuery(span: ProfiledSpan): Record<string, unknown> {
  return {
    queryType: 'profile',
    profileTypeId: CPU,
    labelSelector: `{service_name="${SERVICE}"}`,
    spanSelector: [span.spanID],
    datasource: { uid: 'flamehouse' },
  };
}

/**
 * Opens a span's details in the trace view: rows of the span's name are tried until the details show its span id.
 * Returns the details.
 */
async function openSpan(page: Page, span: ProfiledSpan): Promise<Locator> {
  const rows = page.getByText(span.name, { exact: true });
  await expect(rows.first()).toBeVisible();
  const id = page.getByText(span.spanID, { exact: true }).or(page.getByText(`SpanID: ${span.spanID}`));
  for (let i = 0; i < (await rows.count()) && !(await id.first().isVisible()); i++) {
    await rows.nth(i).click();
  }
  await expect(id.first()).toBeVisible();
  return page.getByTestId('span-detail-component').or(page.locator('[data-testid="span-detail-component"]')).first();
}

/** The trace view of a trace in a Tempo datasource, opened by its id (Tempo's TraceQL query of a trace id). */
async function openTrace(page: Page, ds: DatasourceRef, span: ProfiledSpan): Promise<void> {
  await page.goto(
    exploreUrl(ds, [{ refId: 'A', queryType: 'traceql', query: span.traceID }], aroundSpan(span, 10 * 60_000))
  );
}

function aroundSpan(span: ProfiledSpan, padMs: number): { from: string; to: string } {
  return { from: String(Math.floor(span.startMs - padMs)), to: String(Math.ceil(span.endMs + padMs)) };
}

test("a demo trace found with TraceQL opens, and a profiled span's link shows its flame graph", async ({ page }) => {
  const span = await profiledSpanInTempo();
  const traceql = `{resource.service.name="${SERVICE}" && span:id="${span.spanID}"}`;
  await page.goto(
    exploreUrl(
      TEMPO,
      [{ refId: 'A', queryType: 'traceql', query: traceql, limit: 20, tableType: 'traces' }],
      aroundSpan(span, 10 * 60_000)
    )
  );
  // The search's one trace: its id opens the trace view.
  const traceLink = page.getByRole('link', { name: span.traceID });
  await expect(traceLink.first()).toBeVisible();
  await screenshot(page, 'tempo-traceql-search');
  await traceLink.first().click();

  const details = await openSpan(page, span);
  await expect(details.getByText('pyroscope.profile.id')).toBeVisible();

  // The link's query, not the embedded flame graph's (refId span-flamegraph-refId), which is already under way.
  const linked = (q: Record<string, unknown>) => forSpan(span)(q) && q.refId !== 'span-flamegraph-refId';
  const request = page.waitForRequest((r) => r.url().includes('/api/ds/query') && !!sentQuery(r, linked));
  const response = queryResponseWhere(page, linked);
  // Grafana 12.4 names the link "Profiles for this span" only when the target is a Pyroscope datasource; for any
  // other it is a button titled with the link's own title, "Related profiles".
  const link = details.getByRole('link', { name: /Related profiles|Profiles for this span/ });
  await expect(link.first()).toBeVisible();
  await screenshot(page, 'tempo-span-details');
  await link.first().click();

  const sent = sentQuery(await request, linked)!;
  expect(sent.query).toMatchObject(tracesToProfilesQuery(span));
  // Grafana sends a non-Pyroscope target the span's own range; the backend widens it (profiles.spanWindowPadding).
  expect(sent.from).toBe(Math.floor(span.startMs));
  expect(sent.to - sent.from).toBeLessThanOrEqual(Math.ceil(span.endMs - span.startMs) + 1);
  const total = flameGraphTotal(await framesOf(await response, String(sent.query.refId)));
  expect(total, "the flame graph's root is the span's sample sum read with SQL").toBe(span.total);
  await expect(page.locator('canvas[data-testid="flameGraph"]').first()).toBeVisible();
  await screenshot(page, 'tempo-span-flame-graph');
});

test("a profiled span's details in the Tempo trace view draw its flame graph", async ({ page }) => {
  const span = await profiledSpanInTempo();
  const embedded = (q: Record<string, unknown>) => forSpan(span)(q) && q.refId === 'span-flamegraph-refId';
  const request = page.waitForRequest((r) => r.url().includes('/api/ds/query') && !!sentQuery(r, embedded));
  const response = queryResponseWhere(page, embedded);
  await openTrace(page, TEMPO, span);
  const details = await openSpan(page, span);

  const sent = sentQuery(await request, embedded)!;
  expect(sent.query).toMatchObject(tracesToProfilesQuery(span));
  // The span flame graph asks for the span ± 30 s.
  expect(sent.from).toBe(Math.floor(span.startMs) - 30_000);
  const total = flameGraphTotal(await framesOf(await response, 'span-flamegraph-refId'));
  expect(total, "the embedded flame graph's root is the span's sample sum read with SQL").toBe(span.total);
  await expect(details.getByText('Flame graph', { exact: true })).toBeVisible();
  const canvas = details.locator('canvas[data-testid="flameGraph"]');
  await expect(canvas).toBeVisible();
  await canvas.scrollIntoViewIfNeeded();
  await screenshot(page, 'tempo-span-embedded-flame-graph');
});

test('the trace correlation from Tempo spans opens the span flame graph (Grafana 12)', async ({ page }) => {
  const span = await profiledSpanInTempo();
  await openTrace(page, TEMPO_CORRELATIONS, span);
  const details = await openSpan(page, span);
  const request = page.waitForRequest((r) => r.url().includes('/api/ds/query') && !!sentQuery(r, forSpan(span)));
  const response = queryResponseWhere(page, forSpan(span));
  const link = details.getByRole('link', { name: 'Span flame graph' });
  await expect(link.first()).toBeVisible();
  await screenshot(page, 'tempo-correlation-link');
  await link.first().click();

  const sent = sentQuery(await request, forSpan(span))!;
  expect(sent.query).toMatchObject({ queryType: 'profile', profileTypeId: CPU, spanSelector: [span.spanID] });
  const total = flameGraphTotal(await framesOf(await response, String(sent.query.refId)));
  expect(total, "the correlation's flame graph root is the span's sample sum read with SQL").toBe(span.total);
  await expect(page.locator('canvas[data-testid="flameGraph"]').first()).toBeVisible();
  await screenshot(page, 'tempo-correlation-flame-graph');
});

test('"Open trace" on the Spans query opens the trace in Tempo', async ({ page, explorePage }) => {
  const span = await profiledSpanInTempo();
  const service = `{service_name="${SERVICE}"}`;
  const spans = queryResponseWhere(page, (q) => q.queryType === 'spans');
  await page.goto(
    exploreUrl(
      FLAMEHOUSE_TEMPO,
      [{ refId: 'A', queryType: 'spans', profileTypeId: CPU, labelSelector: service }],
      aroundSpan(span, 5 * 60_000)
    )
  );
  await spans;
  // The span's row ranks first or near it (the most CPU around its time); its traceID cell is the link.
  const open = explorePage.tablePanel.locator.locator('a[title="Open trace"]', { hasText: span.traceID }).first();
  await expect(open).toBeVisible();
  await open.click();
  // Tempo's trace view of that trace: the span is one of its rows, and its details name its id.
  await openSpan(page, span);
  await screenshot(page, 'tempo-open-trace');
});

test("Tempo's settings page shows the provisioned Flamehouse target, but its picker lists Pyroscope datasources only", async ({
  page,
}) => {
  await page.goto(`/connections/datasources/edit/${TEMPO.uid}`);
  // "Trace to profiles": the provisioned datasource and profile type are shown as the current values ...
  const picker = page.locator('#trace-to-profiles-data-source-picker');
  await picker.scrollIntoViewIfNeeded();
  await expect(picker).toBeVisible();
  await expect(page.getByRole('img', { name: 'Flamehouse' })).toBeVisible();
  // The profile type select has no choices for a non-Pyroscope target: its field is named after its empty list.
  await expect(page.getByRole('textbox', { name: 'No profile types found' })).toHaveValue(CPU);
  await screenshot(page, 'tempo-settings-trace-to-profiles');
  // ... but the picker, opened, lists grafana-pyroscope-datasource only: never the plugin's Flamehouse, and
  // Grafana's Pyroscope datasource on Flamehouse's Pyroscope API when the examples provision it
  // (provisioning/examples/pyroscope-api.yaml).
  await picker.click();
  const options = page.getByRole('option');
  if (process.env.FLAMEHOUSE_E2E_EXAMPLES) {
    await expect(options).toHaveCount(1);
    await expect(options.first()).toContainText('Flamehouse (Pyroscope API)');
  } else {
    await expect(page.getByText('No datasources found', { exact: true })).toBeVisible();
    await expect(options).toHaveCount(0);
  }
  await screenshot(page, 'tempo-settings-picker-open');
});
