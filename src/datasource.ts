import {
  AdHocVariableFilter,
  CoreApp,
  DataQueryRequest,
  DataQueryResponse,
  DataSourceGetTagKeysOptions,
  DataSourceGetTagValuesOptions,
  DataSourceInstanceSettings,
  MetricFindValue,
  ScopedVars,
  TimeRange,
} from '@grafana/data';
import { DataSourceWithBackend, FetchError, getBackendSrv, getDataSourceSrv, getTemplateSrv } from '@grafana/runtime';
import { lastValueFrom, map, Observable } from 'rxjs';

import { interpolateQuery, interpolateSelector } from './interpolate';
import { parseSelector } from './labelSelector';
import { addLinks, LinkContext, LinkTarget, RelatedLink, relatedLinks } from './links';
import type { Lookups } from './lookups';
import { LookupCache, lookupParams, ResourceRange } from './resources';
import {
  DEFAULT_QUERY,
  FlamehouseOptions,
  ProfileQuery,
  ProfilesOptions,
  ProfileTypeInfo,
  VariableQuery,
} from './types';
import { FlamehouseVariableSupport } from './variables';

/**
 * The Flamehouse datasource. Queries run in the Go backend; the editors' lookups (profile types, services, label
 * names and values) go through this class's methods, bounded by a time range and cached briefly.
 */
export class DataSource extends DataSourceWithBackend<ProfileQuery, FlamehouseOptions> implements Lookups {
  /** jsonData.profiles.defaultProfileType: the backend's profile type for queries that name none. */
  readonly defaultProfileType?: string;
  /** jsonData.profiles.defaultMaxNodes: the backend's default flame graph size. */
  readonly defaultMaxNodes?: number;
  /** jsonData.profiles: the linked datasources and where the links' tables are. */
  private readonly profiles: ProfilesOptions;
  private readonly lookups = new LookupCache();

  constructor(instanceSettings: DataSourceInstanceSettings<FlamehouseOptions>) {
    super(instanceSettings);
    const profiles = instanceSettings.jsonData?.profiles;
    this.profiles = profiles ?? {};
    const profileType: unknown = profiles?.defaultProfileType;
    this.defaultProfileType = typeof profileType === 'string' && profileType.trim() ? profileType.trim() : undefined;
    this.defaultMaxNodes = Number(profiles?.defaultMaxNodes) > 0 ? Number(profiles?.defaultMaxNodes) : undefined;
    this.variables = new FlamehouseVariableSupport(this);
  }

  /** A flame graph over every series, of the datasource's default profile type when it has one. */
  getDefaultQuery(_: CoreApp): Partial<ProfileQuery> {
    return this.defaultProfileType
      ? { ...DEFAULT_QUERY, profileTypeId: this.defaultProfileType }
      : { ...DEFAULT_QUERY };
  }

  /**
   * Runs every query that is not hidden and asks for something. A traces query runs when it names a trace. Another
   * query without a profile type runs when the datasource has a default one, or when it selects something (a Tempo
   * link with an empty profileTypeId): the backend then explains what is missing.
   */
  filterQuery(query: ProfileQuery): boolean {
    if (query.hide) {
      return false;
    }
    if (query.queryType === 'traces') {
      return !!query.traceId?.trim();
    }
    return !!query.profileTypeId || !!this.defaultProfileType || selectsSomething(query);
  }

  /**
   * Runs the queries in the backend and adds the links to other signals to the frames (src/links.ts). "both" is an
   * Explore type (a flame graph and a graph side by side); elsewhere it is a flame graph.
   */
  query(request: DataQueryRequest<ProfileQuery>): Observable<DataQueryResponse> {
    const sent =
      request.app === CoreApp.Explore || !request.targets.some((t) => t.queryType === 'both')
        ? request
        : {
            ...request,
            targets: request.targets.map((t): ProfileQuery =>
              t.queryType === 'both' ? { ...t, queryType: 'profile' } : t
            ),
          };
    return super.query(sent).pipe(
      map((response) => {
        if (!response.data?.length) {
          return response;
        }
        const targets = sent.targets.map((t) => interpolateQuery(t, request.scopedVars ?? {}, request.filters));
        return { ...response, data: addLinks(response.data, targets, this.linkContext(), request.app) };
      })
    );
  }

  /** The links of a query for the "Related" row under the editor in Explore, over the range shown. */
  relatedLinks(query: ProfileQuery, range: TimeRange): RelatedLink[] {
    return relatedLinks(interpolateQuery(query, {}), this.linkContext(), range);
  }

  /** This datasource and the linked ones that exist, for the links. */
  private linkContext(): LinkContext {
    const p = this.profiles;
    return {
      self: { uid: this.uid, type: this.type, name: this.name },
      profiles: p,
      traces: linkedDatasource(p.tracesDatasourceUid),
      logs: linkedDatasource(p.logsDatasourceUid),
      metrics: linkedDatasource(p.metricsDatasourceUid),
    };
  }

  /** Replaces template variables and adds the ad hoc filters to the label selector. */
  applyTemplateVariables(query: ProfileQuery, scopedVars: ScopedVars, filters?: AdHocVariableFilter[]): ProfileQuery {
    return interpolateQuery(query, scopedVars, filters);
  }

  /** Interpolated copies of queries, e.g. for "Open in Explore". */
  interpolateVariablesInQueries(
    queries: ProfileQuery[],
    scopedVars: ScopedVars,
    filters?: AdHocVariableFilter[]
  ): ProfileQuery[] {
    return queries.map((q) => ({ ...interpolateQuery(q, scopedVars, filters), datasource: this.getRef() }));
  }

  /**
   * The answer of a flame graph or table query over a range as a gzipped pprof file, from the backend's pprof
   * resource (docs/query.md#pprof-export): the query as it runs, template variables replaced. Rejects with the
   * backend's message when the query cannot be exported.
   */
  async downloadPprof(query: ProfileQuery, range: TimeRange, scopedVars: ScopedVars = {}): Promise<PprofFile> {
    const body: Record<string, unknown> = { ...interpolateQuery(query, scopedVars) };
    for (const editorKey of ['refId', 'datasource', 'hide', 'key']) {
      delete body[editorKey];
    }
    const params = { query: JSON.stringify(body), from: String(range.from.valueOf()), to: String(range.to.valueOf()) };
    try {
      const response = await lastValueFrom(
        getBackendSrv().fetch<Blob>({
          url: `/api/datasources/uid/${this.uid}/resources/pprof`,
          params,
          responseType: 'blob',
          showErrorAlert: false,
        })
      );
      return { blob: response.data, filename: attachmentName(response.headers.get('content-disposition')) };
    } catch (e) {
      throw new Error(await fetchErrorMessage(e));
    }
  }

  /** The profile types with data in the range. */
  async getProfileTypes(range?: ResourceRange): Promise<ProfileTypeInfo[]> {
    const types = await this.lookup<ProfileTypeInfo[] | null>('profileTypes', lookupParams(range));
    return (types ?? [])
      .filter((t) => t && typeof t.id === 'string')
      .map((t) => ({ id: t.id, label: t.label || t.id }));
  }

  /** The services with data in the range, of a profile type if given. */
  async getServices(range?: ResourceRange, profileTypeId?: string, labelSelector?: string): Promise<string[]> {
    const params = lookupParams(range, this.interpolate(profileTypeId), selectorParam(labelSelector));
    return strings(await this.lookup('services', params));
  }

  /** Selector label names with data in the range: service_name and attribute keys, dots as underscores. */
  async getLabelNames(range?: ResourceRange, profileTypeId?: string, labelSelector?: string): Promise<string[]> {
    const params = lookupParams(range, this.interpolate(profileTypeId), selectorParam(labelSelector));
    return strings(await this.lookup('labelNames', params));
  }

  /** Up to 1000 values of a label in the range, of the series a selector selects if given. */
  async getLabelValues(
    label: string,
    range?: ResourceRange,
    profileTypeId?: string,
    labelSelector?: string
  ): Promise<string[]> {
    if (!label) {
      return [];
    }
    const params = lookupParams(range, this.interpolate(profileTypeId), { label, ...selectorParam(labelSelector) });
    return strings(await this.lookup('labelValues', params));
  }

  /** Ad hoc filter keys: the label names in the dashboard's range. */
  async getTagKeys(options?: DataSourceGetTagKeysOptions<ProfileQuery>): Promise<MetricFindValue[]> {
    const names = await this.getLabelNames(options?.timeRange, profileTypeOf(options?.queries));
    return names.map((text) => ({ text, value: text }));
  }

  /** Ad hoc filter values: a label's values in the dashboard's range. */
  async getTagValues(options: DataSourceGetTagValuesOptions<ProfileQuery>): Promise<MetricFindValue[]> {
    const values = await this.getLabelValues(options.key, options.timeRange, profileTypeOf(options.queries));
    return values.map((text) => ({ text, value: text }));
  }

  /** The values a template variable query lists. */
  async findVariableValues(
    query: VariableQuery,
    range?: ResourceRange,
    scopedVars?: ScopedVars
  ): Promise<MetricFindValue[]> {
    const profileTypeId = getTemplateSrv().replace(query.profileTypeId ?? '', scopedVars);
    const selector = query.labelSelector ? interpolateSelector(query.labelSelector, scopedVars ?? {}) : undefined;
    switch (query.type) {
      case 'profileTypes':
        return (await this.getProfileTypes(range)).map((t): MetricFindValue => ({ text: t.label, value: t.id }));
      case 'services':
        return asValues(await this.getServices(range, profileTypeId, selector));
      case 'labelNames':
        return asValues(await this.getLabelNames(range, profileTypeId, selector));
      case 'labelValues': {
        const label = getTemplateSrv().replace(query.label ?? '', scopedVars);
        return asValues(await this.getLabelValues(label, range, profileTypeId, selector));
      }
    }
    return [];
  }

  private lookup<T = unknown>(path: string, params: Record<string, string | number>): Promise<T> {
    return this.lookups.get(path, params, () => this.getResource<T>(path, params));
  }

  private interpolate(text?: string): string | undefined {
    return text ? getTemplateSrv().replace(text) : undefined;
  }
}

/** A downloaded pprof file and the name the backend gave it. */
export interface PprofFile {
  blob: Blob;
  filename: string;
}

/** The default name of a pprof file whose response named none. */
const PPROF_FILENAME = 'flamehouse.pb.gz';

/** The file name of a Content-Disposition header's attachment. */
export function attachmentName(header: string | null): string {
  const name = header?.match(/filename="([^"]+)"/)?.[1];
  return name && /^[\w.-]+$/.test(name) ? name : PPROF_FILENAME;
}

/** The message of a failed resource call: the backend's JSON message, in a blob when the response was one. */
async function fetchErrorMessage(e: unknown): Promise<string> {
  const err = e as Partial<FetchError>;
  let body: unknown = err.data;
  if (body instanceof Blob) {
    const text = await blobText(body);
    try {
      body = JSON.parse(text);
    } catch {
      body = { message: text };
    }
  }
  const message = (body as { message?: unknown } | undefined)?.message;
  if (typeof message === 'string' && message) {
    return message;
  }
  return err.statusText || (e instanceof Error ? e.message : 'the pprof download failed');
}

/** A blob's text (FileReader: jsdom's Blob has no text()). */
function blobText(blob: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result ?? ''));
    reader.onerror = () => reject(reader.error);
    reader.readAsText(blob);
  });
}

/** A linked datasource by uid, as Grafana knows it; undefined when unset or unknown (deleted, no access). */
function linkedDatasource(uid: string | undefined): LinkTarget | undefined {
  if (!uid?.trim()) {
    return undefined;
  }
  try {
    // The replacements (@grafana/runtime/unstable) are not in the Grafana 11.6 this plugin supports.
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    const ds = getDataSourceSrv().getInstanceSettings(uid.trim());
    return ds ? { uid: ds.uid, type: ds.type, name: ds.name, jsonData: ds.jsonData } : undefined;
  } catch {
    return undefined; // no datasource service (outside Grafana)
  }
}

/** Whether a query asks for anything beyond "every series": matchers, spans or a trace. */
function selectsSomething(q: ProfileQuery): boolean {
  const parsed = parseSelector(q.labelSelector ?? '');
  const matchers = parsed.ok ? parsed.matchers.length > 0 : (q.labelSelector ?? '').trim() !== '';
  return matchers || (q.spanSelector ?? []).some((s) => s.trim() !== '') || !!q.traceId?.trim();
}

function profileTypeOf(queries?: ProfileQuery[]): string | undefined {
  return queries?.find((q) => q.profileTypeId)?.profileTypeId;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function asValues(values: string[]): MetricFindValue[] {
  return values.map((text) => ({ text, value: text }));
}

/** The labelSelector parameter of a lookup; an empty selector selects everything and is left out. */
function selectorParam(selector?: string): Record<string, string> {
  const text = selector?.trim();
  return text && text !== '{}' ? { labelSelector: text } : {};
}
