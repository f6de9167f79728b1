import {
  CoreApp,
  DataFrame,
  DataLink,
  Field,
  FieldType,
  Labels,
  locationUtil,
  TimeRange,
  urlUtil,
} from '@grafana/data';
import { DataQuery } from '@grafana/schema';

import { Matcher, parseSelector, quoteString } from './labelSelector';
import { DEFAULTS, ProfilesOptions } from './options';
import { ProfileQuery, QueryType } from './types';

/**
 * Links from Flamehouse results to the other signals of the same selection: traces (from the spans query's trace
 * ids), logs and metrics (from flame graphs, tables and time series). Each link is a Grafana internal link whose
 * query is written in the target datasource's own query model, chosen by the target's plugin type; the
 * datasources come from the settings (jsonData.profiles.*DatasourceUid). Everything here is pure: the datasource
 * class resolves the uids and calls these functions (docs/navigation.md describes what each link opens).
 */

export const LINK_TITLES = {
  openTrace: 'Open trace',
  logs: 'Logs for this selection',
  metrics: 'Metrics for this selection',
} as const;

/** Plugin ids whose query models the links know. */
export const DATASOURCE_TYPES = {
  /** Tempo: the core plugin's id and the decoupled plugin's. */
  tempo: ['tempo', 'grafana-tempo-datasource'],
  clickhouse: 'grafana-clickhouse-datasource',
  loki: 'loki',
  prometheus: 'prometheus',
  jaeger: 'jaeger',
  zipkin: 'zipkin',
} as const;

/** A datasource a link opens, as Grafana's datasource service describes it. */
export interface LinkTarget {
  uid: string;
  type: string;
  name: string;
  jsonData?: unknown;
}

/** This datasource, its settings, and the linked datasources that exist. */
export interface LinkContext {
  self: LinkTarget;
  profiles: ProfilesOptions;
  traces?: LinkTarget;
  logs?: LinkTarget;
  metrics?: LinkTarget;
}

/**
 * The labels links carry over: resource attributes that are stream labels of Loki's OTLP ingestion by default and
 * columns or resource attributes of the Collector exporter's logs table. Other matchers of a query are dropped:
 * logs and metrics do not have them.
 */
export const SELECTION_LABELS = ['service_name', 'k8s_namespace_name', 'k8s_pod_name'] as const;
export type SelectionLabel = (typeof SELECTION_LABELS)[number];

/** The OpenTelemetry attribute of each selection label, as the exporter's ResourceAttributes map keys them. */
const OTEL_KEYS: Record<SelectionLabel, string> = {
  service_name: 'service.name',
  k8s_namespace_name: 'k8s.namespace.name',
  k8s_pod_name: 'k8s.pod.name',
};

/** Grafana's variable for the raw value of the field a link is on. */
const VALUE_RAW = '${__value.raw}';

/** Placeholders of the metrics query template. */
const PLACEHOLDER = /\$\{(service_name|k8s_namespace_name|k8s_pod_name)\}/g;

function isSelectionLabel(name: string): name is SelectionLabel {
  return (SELECTION_LABELS as readonly string[]).includes(name);
}

/**
 * The selection matchers of a query: its matchers on the selection labels, and a time series' own labels as
 * equality matchers (a series of `groupBy: [k8s_pod_name]` narrows to its pod). A selector that does not parse
 * selects nothing here. Ordered as SELECTION_LABELS, matchers of one label in their order.
 */
export function selection(labelSelector: string | undefined, labels?: Labels): Matcher[] {
  const parsed = parseSelector(labelSelector ?? '');
  const matchers = parsed.ok ? parsed.matchers : [];
  return SELECTION_LABELS.flatMap((name): Matcher[] => {
    const own = labels?.[name];
    if (own !== undefined && own !== '') {
      return [{ name, op: '=', value: own }];
    }
    return matchers.filter((m) => m.name === name);
  });
}

/**
 * Text Grafana's template interpolation would replace, `$` and `[[`, written as the hex escapes \x24 and \x5b that
 * LogQL, PromQL and ClickHouse string literals read back as the same characters. Apply to quoted literals only.
 */
function guardTemplate(literal: string): string {
  return literal.replace(/\$/g, '\\x24').replace(/\[\[/g, '\\x5b[');
}

/** A double-quoted LogQL or PromQL string: Go escapes (`\\`, `\"`, `\n`, …), `$` and `[[` guarded. */
export function promString(s: string): string {
  return guardTemplate(quoteString(s));
}

/** A single-quoted ClickHouse string literal: `\\` and `\'` escaped, `$` and `[[` guarded. */
export function sqlString(s: string): string {
  return guardTemplate(`'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`);
}

/** A ClickHouse identifier in double quotes. */
function sqlIdentifier(s: string): string {
  return guardTemplate(`"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`);
}

function sqlTable(database: string, table: string): string {
  return `${sqlIdentifier(database)}.${sqlIdentifier(table)}`;
}

/** Whether a matcher selects only non-empty values, which Loki requires of at least one matcher of a selector. */
function selectsNonEmpty(m: Matcher): boolean {
  if (m.op === '=') {
    return m.value !== '';
  }
  if (m.op !== '=~') {
    return false;
  }
  try {
    return !new RegExp(`^(?:${m.value})$`).test('');
  } catch {
    return false; // RE2 syntax JavaScript does not know: Loki may refuse it, so no link rather than a broken one
  }
}

/**
 * A LogQL stream selector over the selection labels, e.g. `{service_name="checkout", k8s_pod_name=~"api-.*"}`;
 * undefined when no matcher requires a value (Loki refuses such selectors). The operators are the same as ours:
 * anchored RE2 regexps.
 */
export function logQL(matchers: Matcher[]): string | undefined {
  if (!matchers.some(selectsNonEmpty)) {
    return undefined;
  }
  return `{${matchers.map((m) => `${m.name}${m.op}${promString(m.value)}`).join(', ')}}`;
}

/** The exporter's column of a selection label: ServiceName, or a key of ResourceAttributes. */
function logsColumn(name: SelectionLabel): string {
  return name === 'service_name' ? 'ServiceName' : `ResourceAttributes[${sqlString(OTEL_KEYS[name])}]`;
}

function sqlCondition(m: Matcher): string {
  const column = logsColumn(m.name as SelectionLabel);
  switch (m.op) {
    case '=':
      return `${column} = ${sqlString(m.value)}`;
    case '!=':
      return `${column} != ${sqlString(m.value)}`;
    case '=~':
      return `match(${column}, ${sqlString(`^(?:${m.value})$`)})`;
    case '!~':
      return `NOT match(${column}, ${sqlString(`^(?:${m.value})$`)})`;
  }
}

/**
 * SQL for the ClickHouse plugin over the OpenTelemetry Collector exporter's logs table, in the column order of its
 * logs format (time, body, level first): the selection's logs in the time range, newest first.
 */
export function logsSQL(matchers: Matcher[], database: string, table: string): string {
  const where = ['$__timeFilter(Timestamp)', ...matchers.map(sqlCondition)];
  return [
    'SELECT Timestamp AS timestamp, Body AS body, SeverityText AS level, TraceId AS traceID, SpanId AS spanID, ServiceName',
    `FROM ${sqlTable(database, table)}`,
    `WHERE ${where.join(' AND ')}`,
    'ORDER BY Timestamp DESC',
    'LIMIT 1000',
  ].join('\n');
}

/**
 * SQL for the ClickHouse plugin that reads one trace from the exporter's traces table with the column names of
 * Grafana's trace view (startTime and duration in milliseconds, tags as key/value lists). traceId is an SQL
 * expression: a string literal, or `'${__value.raw}'` in a link.
 */
export function traceSQL(traceId: string, database: string, table: string): string {
  return [
    'SELECT TraceId AS traceID, SpanId AS spanID, ParentSpanId AS parentSpanID, SpanName AS operationName,',
    '  ServiceName AS serviceName, toUnixTimestamp64Nano(Timestamp) / 1000000 AS startTime, Duration / 1000000 AS duration,',
    "  replaceRegexpOne(lower(toString(SpanKind)), '^span_kind_', '') AS kind,",
    "  multiIf(StatusCode IN ('Error', 'STATUS_CODE_ERROR'), 2, StatusCode IN ('Ok', 'STATUS_CODE_OK'), 1, 0) AS statusCode,",
    '  StatusMessage AS statusMessage, ScopeName AS instrumentationLibraryName,',
    '  ScopeVersion AS instrumentationLibraryVersion, TraceState AS traceState,',
    "  arrayMap(k -> map('key', k, 'value', SpanAttributes[k]), mapKeys(SpanAttributes)) AS tags,",
    "  arrayMap(k -> map('key', k, 'value', ResourceAttributes[k]), mapKeys(ResourceAttributes)) AS serviceTags",
    `FROM ${sqlTable(database, table)}`,
    `WHERE TraceId = ${traceId}`,
  ].join('\n');
}

/**
 * The metrics query template with its placeholders filled from the selection's equality matchers, each value
 * escaped for a double-quoted PromQL string (placeholders belong inside quotes); undefined when a placeholder the
 * template uses has no equality matcher.
 */
export function promQL(template: string, matchers: Matcher[]): string | undefined {
  const values = new Map(matchers.filter((m) => m.op === '=').map((m) => [m.name, m.value]));
  let missing = false;
  const expr = template.replace(PLACEHOLDER, (_, name: string) => {
    const value = values.get(name);
    if (value === undefined) {
      missing = true;
      return '';
    }
    return promString(value).slice(1, -1);
  });
  return missing ? undefined : expr;
}

/** The placeholders a metrics query template uses, and `${…}` references that are not placeholders. */
export function templatePlaceholders(template: string): { used: SelectionLabel[]; unknown: string[] } {
  const used = [...template.matchAll(PLACEHOLDER)].map((m) => m[1] as SelectionLabel);
  const unknown = [...template.matchAll(/\$\{([^}]*)\}/g)]
    .map((m) => m[1])
    .filter((name) => !isSelectionLabel(name) && !name.startsWith('__'));
  return { used: [...new Set(used)], unknown: [...new Set(unknown)] };
}

/** A setting of the ClickHouse plugin's jsonData.logs or jsonData.traces (defaultDatabase, defaultTable). */
function clickhouseDefault(target: LinkTarget, signal: 'logs' | 'traces', key: string): string | undefined {
  const json = target.jsonData as Record<string, Record<string, unknown> | undefined> | undefined;
  const value = json?.[signal]?.[key];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/**
 * Where the traces and logs tables are for the ClickHouse plugin: its own defaults (jsonData.traces / .logs
 * defaultDatabase and defaultTable) first, then this datasource's tracesDatabase (or its profiles database) and
 * the exporter's default table names.
 */
function clickhouseTable(target: LinkTarget, profiles: ProfilesOptions, signal: 'logs' | 'traces') {
  const database =
    clickhouseDefault(target, signal, 'defaultDatabase') ??
    (profiles.tracesDatabase?.trim() || profiles.database?.trim() || DEFAULTS.database);
  const ownTable = signal === 'traces' ? profiles.tracesTable?.trim() || DEFAULTS.tracesTable : DEFAULTS.logsTable;
  return { database, table: clickhouseDefault(target, signal, 'defaultTable') ?? ownTable };
}

/** A query without refId and datasource, which link() adds. */
type TargetQuery = Record<string, unknown>;

/**
 * The query that opens one trace on a datasource of this type, or undefined for types whose model is unknown.
 * traceId is the id, or `${__value.raw}` in a link.
 */
export function traceQuery(target: LinkTarget, traceId: string, ctx: LinkContext): TargetQuery | undefined {
  if ((DATASOURCE_TYPES.tempo as readonly string[]).includes(target.type)) {
    return { queryType: 'traceql', query: traceId };
  }
  if (target.type === DATASOURCE_TYPES.jaeger || target.type === DATASOURCE_TYPES.zipkin) {
    return { query: traceId };
  }
  if (target.type === DATASOURCE_TYPES.clickhouse) {
    const { database, table } = clickhouseTable(target, ctx.profiles, 'traces');
    const literal = traceId === VALUE_RAW ? `'${VALUE_RAW}'` : sqlString(traceId);
    // The SQL editor's "traces" query type; format 3 is sqlds's trace format, which Explore shows as a trace.
    return clickhouseSQL(traceSQL(literal, database, table), 'traces', 3);
  }
  if (target.uid === ctx.self.uid) {
    return { queryType: 'traces' satisfies QueryType, traceId };
  }
  return undefined;
}

/**
 * A ClickHouse plugin SQL-editor query. pluginVersion marks the v4 query model, so the plugin does not migrate
 * it as a v3 query (which would give the same SQL query anyway).
 */
function clickhouseSQL(rawSql: string, queryType: 'logs' | 'traces', format: number): TargetQuery {
  return { editorType: 'sql', pluginVersion: '4.0.0', queryType, format, rawSql };
}

/** The datasource traces open in: the configured one when its query model is known, else this one. */
export function traceTarget(ctx: LinkContext): LinkTarget {
  return ctx.traces && traceQuery(ctx.traces, VALUE_RAW, ctx) ? ctx.traces : ctx.self;
}

/** The query of "Logs for this selection" on this logs datasource, or undefined. */
export function logsQuery(target: LinkTarget, matchers: Matcher[], ctx: LinkContext): TargetQuery | undefined {
  if (!matchers.some((m) => m.op === '=' || m.op === '=~')) {
    return undefined;
  }
  if (target.type === DATASOURCE_TYPES.loki) {
    const expr = logQL(matchers);
    return expr ? { expr, queryType: 'range', editorMode: 'code' } : undefined;
  }
  if (target.type === DATASOURCE_TYPES.clickhouse) {
    const { database, table } = clickhouseTable(target, ctx.profiles, 'logs');
    // The SQL editor's "logs" query type; format 2 is sqlds's logs format.
    return clickhouseSQL(logsSQL(matchers, database, table), 'logs', 2);
  }
  return undefined;
}

/** The query of "Metrics for this selection" on this metrics datasource, or undefined. */
export function metricsQuery(target: LinkTarget, matchers: Matcher[], ctx: LinkContext): TargetQuery | undefined {
  if (target.type !== DATASOURCE_TYPES.prometheus) {
    return undefined;
  }
  const expr = promQL(ctx.profiles.metricsQuery?.trim() || DEFAULTS.metricsQuery, matchers);
  return expr ? { expr, range: true, instant: false, editorMode: 'code' } : undefined;
}

/**
 * An internal link that runs a query on a target. It names the target by uid and type only (never a live
 * datasource object). Outside Explore it opens in a new tab, so that the dashboard stays.
 */
export function link(title: string, target: LinkTarget, query: TargetQuery, app?: string): DataLink {
  const full: DataQuery = { refId: 'A', ...query, datasource: { uid: target.uid, type: target.type } };
  return {
    title,
    url: '',
    targetBlank: app !== CoreApp.Explore,
    internal: { datasourceUid: target.uid, datasourceName: target.name, query: full },
  };
}

/** "Open trace" on a trace id field: the trace in the traces datasource (this one when none is set). */
export function openTraceLink(ctx: LinkContext, app?: string): DataLink | undefined {
  const target = traceTarget(ctx);
  const query = traceQuery(target, VALUE_RAW, ctx);
  return query ? link(LINK_TITLES.openTrace, target, query, app) : undefined;
}

/** "Logs for this selection" and "Metrics for this selection", where their datasources are set and apply. */
export function selectionLinks(ctx: LinkContext, matchers: Matcher[], app?: string): DataLink[] {
  const links: DataLink[] = [];
  const logs = ctx.logs && logsQuery(ctx.logs, matchers, ctx);
  if (ctx.logs && logs) {
    links.push(link(LINK_TITLES.logs, ctx.logs, logs, app));
  }
  const metrics = ctx.metrics && metricsQuery(ctx.metrics, matchers, ctx);
  if (ctx.metrics && metrics) {
    links.push(link(LINK_TITLES.metrics, ctx.metrics, metrics, app));
  }
  return links;
}

/** Query types whose results get the selection's logs and metrics links. */
const SELECTION_TYPES: ReadonlyArray<QueryType | undefined> = [undefined, 'profile', 'metrics', 'both', 'table'];

function withLinks(field: Field, links: DataLink[]): Field {
  const config = field.config ?? {};
  const existing = config.links ?? [];
  const added = links.filter((l) => !existing.some((e) => e.title === l.title));
  return added.length ? { ...field, config: { ...config, links: [...existing, ...added] } } : field;
}

function isSpansFrame(frame: DataFrame): boolean {
  const custom: unknown = frame.meta?.custom;
  const kind = typeof custom === 'object' && custom !== null && 'flamehouse' in custom ? custom.flamehouse : undefined;
  return kind === 'spans' || (kind === undefined && frame.name === 'spans');
}

/**
 * Adds the frontend's links to a response's frames, by the query each frame answers (targets interpolated):
 * "Open trace" on the traceID field of spans frames; the selection's logs and metrics links on the function name
 * (`label`) of flame graph and top-functions frames and on the value fields of time series, whose own labels
 * narrow the selection. Links already there (the backend's) stay first; frames are copied, not changed.
 */
export function addLinks(frames: DataFrame[], targets: ProfileQuery[], ctx: LinkContext, app?: string): DataFrame[] {
  return frames.map((frame) => {
    const target = targets.find((t) => t.refId === frame.refId) ?? (targets.length === 1 ? targets[0] : undefined);
    if (!target || !Array.isArray(frame.fields)) {
      return frame;
    }
    if (isSpansFrame(frame)) {
      const open = openTraceLink(ctx, app);
      return open ? mapFields(frame, (f) => (f.name === 'traceID' ? withLinks(f, [open]) : f)) : frame;
    }
    if (!SELECTION_TYPES.includes(target.queryType)) {
      return frame;
    }
    const series = frame.fields.some((f) => f.type === FieldType.time);
    return mapFields(frame, (f) => {
      if (f.name === 'label' && !series) {
        return withLinks(f, selectionLinks(ctx, selection(target.labelSelector), app));
      }
      if (f.type === FieldType.number && series) {
        return withLinks(f, selectionLinks(ctx, selection(target.labelSelector, f.labels), app));
      }
      return f;
    });
  });
}

function mapFields(frame: DataFrame, fn: (f: Field) => Field): DataFrame {
  const fields = frame.fields.map(fn);
  return fields.every((f, i) => f === frame.fields[i]) ? frame : { ...frame, fields };
}

/** A link shown as a button under the query editor in Explore. */
export interface RelatedLink {
  title: string;
  href: string;
  /** The target datasource's name. */
  datasourceName: string;
}

/** An Explore time range: relative ranges as typed (now-1h), absolute ones in epoch milliseconds. */
export function exploreRange(range: TimeRange): { from: string; to: string } {
  const end = (raw: unknown, time: { valueOf(): number }) => (typeof raw === 'string' ? raw : String(time.valueOf()));
  return { from: end(range.raw.from, range.from), to: end(range.raw.to, range.to) };
}

/** The Explore URL that runs a query on a target over a range. */
export function exploreHref(target: LinkTarget, query: TargetQuery, range: { from: string; to: string }): string {
  const full = { refId: 'A', ...query, datasource: { uid: target.uid, type: target.type } };
  const panes = { related: { datasource: target.uid, queries: [full], range } };
  return locationUtil.assureBaseUrl(urlUtil.renderUrl('/explore', { schemaVersion: 1, panes: JSON.stringify(panes) }));
}

/**
 * The links of a query (interpolated) for the "Related" row in Explore: logs and metrics of its selection, and its
 * trace when it names one. Only those whose datasource is set and whose query applies.
 */
export function relatedLinks(query: ProfileQuery, ctx: LinkContext, range: TimeRange): RelatedLink[] {
  const out: RelatedLink[] = [];
  const add = (title: string, target: LinkTarget, q: TargetQuery | undefined) => {
    if (q) {
      out.push({ title, href: exploreHref(target, q, exploreRange(range)), datasourceName: target.name });
    }
  };
  if (query.queryType !== 'traces') {
    const matchers = selection(query.labelSelector);
    if (ctx.logs) {
      add(LINK_TITLES.logs, ctx.logs, logsQuery(ctx.logs, matchers, ctx));
    }
    if (ctx.metrics) {
      add(LINK_TITLES.metrics, ctx.metrics, metricsQuery(ctx.metrics, matchers, ctx));
    }
  }
  const traceId = query.traceId?.trim() ?? '';
  if (query.queryType !== 'traces' && /^[0-9a-fA-F]{32}$/.test(traceId)) {
    const target = traceTarget(ctx);
    add(LINK_TITLES.openTrace, target, traceQuery(target, traceId, ctx));
  }
  return out;
}
