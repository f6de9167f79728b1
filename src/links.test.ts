import { CoreApp, DataFrame, DataLink, dateTime, TimeRange } from '@grafana/data';

import {
  addLinks,
  exploreRange,
  LINK_TITLES,
  LinkContext,
  LinkTarget,
  logQL,
  logsQuery,
  logsSQL,
  metricsQuery,
  openTraceLink,
  promQL,
  promString,
  relatedLinks,
  selection,
  sqlString,
  templatePlaceholders,
  traceQuery,
  traceSQL,
  traceTarget,
} from './links';
import { DEFAULTS } from './options';
import { flameGraphFrame, functionsFrame, seriesFrame, spansFrame, TRACE_ID, traceFrame } from './testing/frames';
import { ProfileQuery } from './types';

const self: LinkTarget = { uid: 'fh', type: 'flamehouse-profiles-datasource', name: 'Flamehouse' };
const tempo: LinkTarget = { uid: 'tempo', type: 'tempo', name: 'Tempo' };
const tempoPlugin: LinkTarget = { uid: 'tempo2', type: 'grafana-tempo-datasource', name: 'Tempo (plugin)' };
const jaeger: LinkTarget = { uid: 'jaeger', type: 'jaeger', name: 'Jaeger' };
const loki: LinkTarget = { uid: 'loki', type: 'loki', name: 'Loki' };
const prometheus: LinkTarget = { uid: 'prom', type: 'prometheus', name: 'Prometheus' };
const clickhouse: LinkTarget = { uid: 'ch', type: 'grafana-clickhouse-datasource', name: 'ClickHouse', jsonData: {} };
const clickhouseWithDefaults: LinkTarget = {
  ...clickhouse,
  jsonData: {
    logs: { defaultDatabase: 'observability', defaultTable: 'logs_v2' },
    traces: { defaultDatabase: 'observability', defaultTable: 'spans_v2' },
  },
};

function ctx(links: Partial<LinkContext> = {}): LinkContext {
  return { self, profiles: {}, ...links };
}

/** A pod name with everything that could break out of a string literal or be taken for a Grafana variable. */
const NASTY = `api-"1'\\$pod[[x]]`;

describe('selection', () => {
  it('keeps the matchers on service, namespace and pod, in that order', () => {
    expect(selection('{thread_name="gc", k8s_pod_name=~"api-.*", service_name="checkout", env="prod"}')).toEqual([
      { name: 'service_name', op: '=', value: 'checkout' },
      { name: 'k8s_pod_name', op: '=~', value: 'api-.*' },
    ]);
  });

  it("narrows by a time series' own labels, which replace the query's matchers on them", () => {
    expect(
      selection('{service_name="checkout", k8s_pod_name=~"api-.*"}', { k8s_pod_name: 'api-1', thread_name: 'x' })
    ).toEqual([
      { name: 'service_name', op: '=', value: 'checkout' },
      { name: 'k8s_pod_name', op: '=', value: 'api-1' },
    ]);
  });

  it('selects nothing from a selector that does not parse', () => {
    expect(selection('{service_name="checkout"')).toEqual([]);
    expect(selection(undefined)).toEqual([]);
  });
});

describe('escaping', () => {
  it('writes LogQL/PromQL strings with Go escapes, and $ and [[ as hex escapes Grafana leaves alone', () => {
    expect(promString('a"b\\c\nd')).toBe('"a\\"b\\\\c\\nd"');
    expect(promString('$pod [[x]]')).toBe('"\\x24pod \\x5b[x]]"');
  });

  it("writes ClickHouse strings with \\' and \\\\", () => {
    expect(sqlString("it's a\\b")).toBe("'it\\'s a\\\\b'");
    expect(sqlString('${x}')).toBe("'\\x24{x}'");
  });

  it('keeps a nasty pod name inside its literal in every language', () => {
    const pod = [{ name: 'k8s_pod_name', op: '=' as const, value: NASTY }];
    expect(logQL(pod)).toBe('{k8s_pod_name="api-\\"1\'\\\\\\x24pod\\x5b[x]]"}');
    expect(logsSQL(pod, 'otel', 'otel_logs')).toContain(
      "ResourceAttributes['k8s.pod.name'] = 'api-\"1\\'\\\\\\x24pod\\x5b[x]]'"
    );
    expect(promQL('up{k8s_pod_name="${k8s_pod_name}"}', pod)).toBe(
      'up{k8s_pod_name="api-\\"1\'\\\\\\x24pod\\x5b[x]]"}'
    );
  });
});

describe('logs', () => {
  it('builds a LogQL stream selector with the same operators', () => {
    expect(logQL(selection('{service_name="checkout", k8s_namespace_name!="dev", k8s_pod_name=~"api-.*"}'))).toBe(
      '{service_name="checkout", k8s_namespace_name!="dev", k8s_pod_name=~"api-.*"}'
    );
  });

  it('builds no LogQL selector that Loki would refuse (every matcher matching empty)', () => {
    expect(logQL([])).toBeUndefined();
    expect(logQL(selection('{service_name!="checkout"}'))).toBeUndefined();
    expect(logQL(selection('{service_name=~".*"}'))).toBeUndefined();
    expect(logQL(selection('{service_name=""}'))).toBeUndefined();
    expect(logQL(selection('{service_name=~"check.*", k8s_pod_name!=""}'))).toBe(
      '{service_name=~"check.*", k8s_pod_name!=""}'
    );
  });

  it('builds SQL over the exporter logs table: time filter, ServiceName and resource attributes', () => {
    const sql = logsSQL(
      selection('{service_name="checkout", k8s_namespace_name=~"prod-.*", k8s_pod_name!~"canary"}'),
      'otel',
      'otel_logs'
    );
    expect(sql).toBe(
      [
        'SELECT Timestamp AS timestamp, Body AS body, SeverityText AS level, TraceId AS traceID, SpanId AS spanID, ServiceName',
        'FROM "otel"."otel_logs"',
        "WHERE $__timeFilter(Timestamp) AND ServiceName = 'checkout' AND " +
          "match(ResourceAttributes['k8s.namespace.name'], '^(?:prod-.*)\\x24') AND " +
          "NOT match(ResourceAttributes['k8s.pod.name'], '^(?:canary)\\x24')",
        'ORDER BY Timestamp DESC',
        'LIMIT 1000',
      ].join('\n')
    );
  });

  it('queries Loki with LogQL and the ClickHouse plugin with SQL in its logs format; others not', () => {
    const ms = selection('{service_name="checkout"}');
    expect(logsQuery(loki, ms, ctx())).toEqual({
      expr: '{service_name="checkout"}',
      queryType: 'range',
      editorMode: 'code',
    });
    expect(logsQuery(clickhouse, ms, ctx())).toMatchObject({
      editorType: 'sql',
      queryType: 'logs',
      format: 2,
      rawSql: expect.stringContaining('FROM "otel"."otel_logs"'),
    });
    expect(logsQuery({ ...loki, type: 'elasticsearch' }, ms, ctx())).toBeUndefined();
    expect(logsQuery(loki, selection('{service_name!="x"}'), ctx())).toBeUndefined();
    expect(logsQuery(clickhouse, [], ctx())).toBeUndefined();
  });

  it("reads the ClickHouse plugin's logs defaults, then this datasource's traces or profiles database", () => {
    const ms = selection('{service_name="checkout"}');
    const sql = (target: LinkTarget, profiles = {}) => String(logsQuery(target, ms, ctx({ profiles }))?.rawSql);
    expect(sql(clickhouseWithDefaults)).toContain('FROM "observability"."logs_v2"');
    expect(sql(clickhouse, { database: 'prof' })).toContain('FROM "prof"."otel_logs"');
    expect(sql(clickhouse, { database: 'prof', tracesDatabase: 'telemetry' })).toContain(
      'FROM "telemetry"."otel_logs"'
    );
  });
});

describe('metrics', () => {
  it('fills the placeholders from equality matchers', () => {
    const ms = selection('{service_name="checkout", k8s_namespace_name="prod", k8s_pod_name=~"api-.*"}');
    expect(promQL(DEFAULTS.metricsQuery, ms)).toBe(
      'sum by (k8s_pod_name) (rate(process_cpu_seconds_total{service_name="checkout"}[$__rate_interval]))'
    );
    expect(promQL('up{k8s_namespace_name="${k8s_namespace_name}", service_name="${service_name}"}', ms)).toBe(
      'up{k8s_namespace_name="prod", service_name="checkout"}'
    );
  });

  it('gives no query when a placeholder has no equality matcher', () => {
    expect(promQL('up{k8s_pod_name="${k8s_pod_name}"}', selection('{k8s_pod_name=~"api-.*"}'))).toBeUndefined();
    expect(promQL('up', [])).toBe('up');
  });

  it('lists the placeholders a template uses and the references it does not know', () => {
    expect(templatePlaceholders(DEFAULTS.metricsQuery)).toEqual({ used: ['service_name'], unknown: [] });
    expect(templatePlaceholders('x{a="${k8s_pod_name}", b="${pod}", c="${__from}"}')).toEqual({
      used: ['k8s_pod_name'],
      unknown: ['pod'],
    });
  });

  it('queries Prometheus with the template, the default one unless set', () => {
    const ms = selection('{service_name="checkout"}');
    expect(metricsQuery(prometheus, ms, ctx())).toEqual({
      expr: 'sum by (k8s_pod_name) (rate(process_cpu_seconds_total{service_name="checkout"}[$__rate_interval]))',
      range: true,
      instant: false,
      editorMode: 'code',
    });
    const custom = ctx({ profiles: { metricsQuery: 'go_goroutines{service_name="${service_name}"}' } });
    expect(metricsQuery(prometheus, ms, custom)?.expr).toBe('go_goroutines{service_name="checkout"}');
    expect(metricsQuery(loki, ms, ctx())).toBeUndefined();
  });
});

describe('traces', () => {
  it("opens a trace id in Tempo's TraceQL, Jaeger's and Zipkin's trace id query, or this datasource's traces query", () => {
    expect(traceQuery(tempo, TRACE_ID, ctx())).toEqual({ queryType: 'traceql', query: TRACE_ID });
    expect(traceQuery(tempoPlugin, TRACE_ID, ctx())).toEqual({ queryType: 'traceql', query: TRACE_ID });
    expect(traceQuery(jaeger, TRACE_ID, ctx())).toEqual({ query: TRACE_ID });
    expect(traceQuery(self, TRACE_ID, ctx())).toEqual({ queryType: 'traces', traceId: TRACE_ID });
    expect(traceQuery({ uid: 'x', type: 'elasticsearch', name: 'ES' }, TRACE_ID, ctx())).toBeUndefined();
  });

  it("opens a trace in the ClickHouse plugin's SQL editor as a trace (format 3), with the trace view's columns", () => {
    const query = traceQuery(clickhouse, '${__value.raw}', ctx());
    expect(query).toMatchObject({ editorType: 'sql', queryType: 'traces', format: 3, pluginVersion: '4.0.0' });
    const sql = String(query?.rawSql);
    expect(sql).toContain('FROM "otel"."otel_traces"');
    expect(sql).toContain("WHERE TraceId = '${__value.raw}'");
    for (const column of [
      'traceID',
      'spanID',
      'parentSpanID',
      'operationName',
      'serviceName',
      'startTime',
      'duration',
      'kind',
      'statusCode',
      'statusMessage',
      'instrumentationLibraryName',
      'instrumentationLibraryVersion',
      'traceState',
      'tags',
      'serviceTags',
    ]) {
      expect(sql).toMatch(new RegExp(`AS ${column}\\b`));
    }
    expect(String(traceQuery(clickhouse, TRACE_ID, ctx())?.rawSql)).toContain(`WHERE TraceId = '${TRACE_ID}'`);
  });

  it("reads the trace table from the ClickHouse plugin's defaults, else from tracesDatabase and tracesTable", () => {
    const sql = (target: LinkTarget, profiles = {}) => String(traceQuery(target, TRACE_ID, ctx({ profiles }))?.rawSql);
    expect(sql(clickhouseWithDefaults)).toContain('FROM "observability"."spans_v2"');
    expect(sql(clickhouse, { database: 'prof' })).toContain('FROM "prof"."otel_traces"');
    expect(sql(clickhouse, { database: 'prof', tracesDatabase: 'tel', tracesTable: 'traces' })).toContain(
      'FROM "tel"."traces"'
    );
    expect(traceSQL("'x'", 'd"b', 't')).toContain('FROM "d\\"b"."t"');
  });

  it('opens traces in this datasource when no traces datasource is set, or one whose model is unknown', () => {
    expect(traceTarget(ctx())).toBe(self);
    expect(traceTarget(ctx({ traces: tempo }))).toBe(tempo);
    expect(traceTarget(ctx({ traces: { uid: 'x', type: 'elasticsearch', name: 'ES' } }))).toBe(self);
  });

  it('makes "Open trace" an internal link on the raw value, by uid and type, in a new tab outside Explore', () => {
    expect(openTraceLink(ctx({ traces: tempo }), CoreApp.Explore)).toEqual({
      title: 'Open trace',
      url: '',
      targetBlank: false,
      internal: {
        datasourceUid: 'tempo',
        datasourceName: 'Tempo',
        query: {
          refId: 'A',
          queryType: 'traceql',
          query: '${__value.raw}',
          datasource: { uid: 'tempo', type: 'tempo' },
        },
      },
    });
    expect(openTraceLink(ctx(), CoreApp.Dashboard)).toMatchObject({
      targetBlank: true,
      internal: { datasourceUid: 'fh', query: { queryType: 'traces', traceId: '${__value.raw}' } },
    });
  });
});

describe('addLinks', () => {
  const linked = ctx({ traces: tempo, logs: loki, metrics: prometheus });
  const titles = (links?: DataLink[]) => (links ?? []).map((l) => l.title);
  const field = (frame: DataFrame, name: string) => frame.fields.find((f) => f.name === name)!;
  const query = (q: Partial<ProfileQuery>): ProfileQuery => ({ refId: 'A', ...q });

  it('adds "Open trace" to the trace ids of spans frames, next to the backend\'s span link', () => {
    const [frame] = addLinks([spansFrame()], [query({ queryType: 'spans' })], linked, CoreApp.Explore);
    expect(titles(field(frame, 'traceID').config.links)).toEqual(['Open trace']);
    expect(field(frame, 'traceID').config.links?.[0].internal?.query).toMatchObject({ queryType: 'traceql' });
    expect(titles(field(frame, 'spanID').config.links)).toEqual(['Span flame graph']);
    expect(field(frame, 'serviceName').config.links).toBeUndefined();
  });

  it('opens the trace in this datasource without a traces datasource', () => {
    const [frame] = addLinks([spansFrame()], [query({ queryType: 'spans' })], ctx(), CoreApp.Explore);
    expect(field(frame, 'traceID').config.links?.[0]).toMatchObject({
      title: 'Open trace',
      internal: { datasourceUid: 'fh', query: { queryType: 'traces', traceId: '${__value.raw}' } },
    });
  });

  it('leaves trace frames as the backend made them', () => {
    const trace = traceFrame();
    const [frame] = addLinks([trace], [query({ queryType: 'traces', traceId: TRACE_ID })], linked);
    expect(frame).toBe(trace);
  });

  it("adds the selection's logs and metrics links to the function names of flame graphs and tables", () => {
    const q = query({ queryType: 'both', labelSelector: '{service_name="checkout", thread_name="gc"}' });
    const [graph, table] = addLinks([flameGraphFrame(), functionsFrame()], [q], linked, CoreApp.Explore);
    for (const frame of [graph, table]) {
      const links = field(frame, 'label').config.links ?? [];
      expect(titles(links)).toEqual([LINK_TITLES.logs, LINK_TITLES.metrics]);
      expect(links[0].internal).toMatchObject({ datasourceUid: 'loki', query: { expr: '{service_name="checkout"}' } });
      expect(links[1].internal).toMatchObject({ datasourceUid: 'prom', query: { expr: expect.any(String) } });
    }
    expect(field(graph, 'value').config.links).toBeUndefined();
    expect(field(graph, 'label').config.type?.enum?.text).toEqual(['total', 'main']);
  });

  it("narrows a time series' links by its labels, after the backend's flame graph link", () => {
    const q = query({ queryType: 'metrics', labelSelector: '{service_name="checkout"}', groupBy: ['k8s_pod_name'] });
    const [frame] = addLinks([seriesFrame({ k8s_pod_name: 'api-1' })], [q], linked);
    const value = frame.fields[1];
    expect(titles(value.config.links)).toEqual(['Flame graph for this series', LINK_TITLES.logs, LINK_TITLES.metrics]);
    expect(value.config.links?.[1].internal?.query).toMatchObject({
      expr: '{service_name="checkout", k8s_pod_name="api-1"}',
    });
    expect(titles(frame.fields[0].config.links)).toEqual([]);
    const [unlabelled] = addLinks([seriesFrame(undefined)], [q], linked);
    expect(titles(unlabelled.fields[1].config.links)).toContain(LINK_TITLES.logs);
  });

  it('adds nothing twice, and only what applies', () => {
    const q = query({ labelSelector: '{service_name="checkout"}' });
    const once = addLinks([functionsFrame()], [q], linked);
    const twice = addLinks(once, [q], linked);
    expect(titles(field(twice[0], 'label').config.links)).toEqual([LINK_TITLES.logs, LINK_TITLES.metrics]);

    const everything = query({ labelSelector: '{}' });
    const [none] = addLinks([functionsFrame()], [everything], linked);
    expect(field(none, 'label').config.links).toBeUndefined();
    const [unlinked] = addLinks([functionsFrame()], [q], ctx());
    expect(field(unlinked, 'label').config.links).toBeUndefined();
  });

  it('matches frames to their query by refId', () => {
    const a = query({ refId: 'A', labelSelector: '{service_name="a"}' });
    const b = query({ refId: 'B', labelSelector: '{service_name="b"}' });
    const [fa, fb] = addLinks([functionsFrame('A'), functionsFrame('B')], [a, b], ctx({ logs: loki }));
    expect(field(fa, 'label').config.links?.[0].internal?.query).toMatchObject({ expr: '{service_name="a"}' });
    expect(field(fb, 'label').config.links?.[0].internal?.query).toMatchObject({ expr: '{service_name="b"}' });
  });
});

describe('relatedLinks', () => {
  const range: TimeRange = {
    from: dateTime(Date.UTC(2025, 0, 2, 10, 0)),
    to: dateTime(Date.UTC(2025, 0, 2, 11, 0)),
    raw: { from: 'now-1h', to: 'now' },
  };

  function pane(href: string) {
    const url = new URL(href, 'http://grafana');
    expect(url.pathname).toBe('/explore');
    const panes = JSON.parse(url.searchParams.get('panes') ?? '{}');
    return Object.values(panes)[0] as { datasource: string; queries: Array<Record<string, unknown>>; range: unknown };
  }

  it('opens the logs, metrics and trace of a query in Explore over its range', () => {
    const links = relatedLinks(
      { refId: 'A', labelSelector: '{service_name="checkout"}', traceId: TRACE_ID },
      ctx({ traces: tempo, logs: clickhouse, metrics: prometheus }),
      range
    );
    expect(links.map((l) => [l.title, l.datasourceName])).toEqual([
      [LINK_TITLES.logs, 'ClickHouse'],
      [LINK_TITLES.metrics, 'Prometheus'],
      [LINK_TITLES.openTrace, 'Tempo'],
    ]);
    const logs = pane(links[0].href);
    expect(logs.datasource).toBe('ch');
    expect(logs.range).toEqual({ from: 'now-1h', to: 'now' });
    expect(logs.queries[0]).toMatchObject({
      refId: 'A',
      datasource: { uid: 'ch', type: 'grafana-clickhouse-datasource' },
      rawSql: expect.stringContaining("ServiceName = 'checkout'"),
    });
    expect(pane(links[2].href).queries[0]).toMatchObject({ queryType: 'traceql', query: TRACE_ID });
  });

  it('offers nothing that does not apply', () => {
    expect(relatedLinks({ refId: 'A', labelSelector: '{}' }, ctx({ logs: loki, metrics: prometheus }), range)).toEqual(
      []
    );
    expect(relatedLinks({ refId: 'A', queryType: 'traces', traceId: TRACE_ID }, ctx({ traces: tempo }), range)).toEqual(
      []
    );
    expect(relatedLinks({ refId: 'A', traceId: '$trace' }, ctx({ traces: tempo }), range)).toEqual([]);
  });

  it('keeps an absolute range in epoch milliseconds', () => {
    expect(exploreRange({ ...range, raw: { from: range.from, to: range.to } })).toEqual({
      from: String(Date.UTC(2025, 0, 2, 10, 0)),
      to: String(Date.UTC(2025, 0, 2, 11, 0)),
    });
  });
});
