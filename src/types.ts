import { DataQuery } from '@grafana/schema';

/**
 * What a query asks for; a superset of the Pyroscope datasource's model. `traces` is one trace from the
 * OpenTelemetry Collector exporter's traces table, its spans marked where they have profile samples; `spans` ranks
 * the spans of a selection by profile value; `executables` lists the selection's executables (mapped files) with
 * their share of samples, the share of their frames that have names, and where the names come from (docs/symbols.md);
 * `profiles` lists the selection's single profiles as they came in, each linked to its own flame graph and pprof file.
 */
export type QueryType =
  'profile' | 'metrics' | 'both' | 'table' | 'traces' | 'spans' | 'diff' | 'executables' | 'profiles';

/** What a function filter keeps: the stacks through the function (total) or ending in it (self). */
export type FunctionValue = 'total' | 'self';

/**
 * The baseline (left side) of a diff query; the query itself is the comparison (right side) over the panel's range.
 * Its range is the query's shifted back by `offset` (a Grafana duration: 0, 1h, 1d, 7d), or `from` and `to` (Unix
 * milliseconds, an RFC 3339 time, or now-2d); without either, the query's range when it has a selector of its own,
 * else the previous period of the same length.
 */
export interface DiffSide {
  /** Prometheus-style matchers; empty: the query's. */
  labelSelector?: string;
  offset?: string;
  from?: string;
  to?: string;
}

/**
 * A Flamehouse query, as the backend reads it (pkg/query/request.go). Targets built for Grafana Pyroscope (Tempo's
 * "Related profiles" links, the span flame graph) have the same keys and run unchanged.
 */
export interface ProfileQuery extends DataQuery {
  queryType?: QueryType;
  /** name:sampleType:sampleUnit:periodType:periodUnit, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds */
  profileTypeId?: string;
  /** Prometheus-style matchers, e.g. {service_name="checkout"} */
  labelSelector?: string;
  /** Span ids, 16 hex digits each: only samples of those spans. */
  spanSelector?: string[];
  /** A trace id, 32 hex digits: only samples of that trace; the trace a traces query reads. */
  traceId?: string;
  /** Labels that split time series, and a flame graph's root into one node per group (at most 8). */
  groupBy?: string[];
  /** Time series: the top N groups; table: rows; spans: spans. */
  limit?: number;
  /** Flame graph nodes. */
  maxNodes?: number;
  /** Only stacks through this function (a flame graph label, e.g. regexp.Compile). */
  function?: string;
  /** total (default): stacks that contain the function; self: stacks whose leaf it is. */
  functionValue?: FunctionValue;
  /** Time series as shares: of the group without the function filter, or of all groups without a function. */
  ratio?: boolean;
  /** The baseline of a diff query. */
  left?: DiffSide;
  /**
   * Only stacks through one executable (flame graphs, tables, time series): its build id and/or mapped file name,
   * exact, as the Executables view's rows link to them.
   */
  buildId?: string;
  mappingFile?: string;
  /**
   * Frame kinds flame graphs and tables drop (their samples go to the caller): `kernel`, `native` (the
   * interpreter's native frames in stacks of Python, Java, Ruby, …). Variables may stand for kinds.
   */
  hideFrames?: string[];
  /** Frame kinds whose runs of frames become one node each, `[kernel]` or `[native]`. */
  collapseFrames?: string[];
  /**
   * A flame graph node opened in place: the labels from the root's children down to it (a last `other` stands for
   * its parent). Its subtree gets a node budget of its own; the rest of the graph stays as it was.
   */
  focusPath?: string[];
  /** Only the samples of one series (decimal), as a profiles row's flame graph link sets it. */
  seriesId?: string;
  /** With intervalSeconds, narrows the range to one interval (Unix ms): links to a series point or a profile. */
  intervalStart?: string;
  intervalSeconds?: number | string;
}

/** The frame kinds flame graphs and tables mark, hide or collapse (pkg/query/framekinds.go). */
export type FrameKind = 'kernel' | 'native';

/** What a flame graph does with a frame kind: show its frames (marked), collapse each run, or hide them. */
export type FrameMode = 'show' | 'collapse' | 'hide';

/** The default query: a flame graph over every series. */
export const DEFAULT_QUERY: Partial<ProfileQuery> = {
  queryType: 'profile',
  labelSelector: '{}',
};

/** A profile type as the `profileTypes` resource lists it. */
export interface ProfileTypeInfo {
  id: string;
  label: string;
}

/** What a template variable query lists. */
export type VariableQueryType = 'profileTypes' | 'services' | 'labelNames' | 'labelValues';

/** A template variable query: the values of one editor resource. */
export interface VariableQuery extends DataQuery {
  type: VariableQueryType;
  /** The label whose values to list (labelValues). */
  label?: string;
  /** Restricts services, label names and values to one profile type. */
  profileTypeId?: string;
  /**
   * Restricts services, label names and values to the series a selector selects, e.g.
   * `{service_name=~"$service"}`, so that variables chain.
   */
  labelSelector?: string;
  /** A readable summary, which Grafana shows as the variable's definition. */
  query?: string;
}

const VARIABLE_TYPES: readonly VariableQueryType[] = ['profileTypes', 'services', 'labelNames', 'labelValues'];

/** A stored variable query with a known type; a missing or unknown type (a new variable) lists services. */
export function normalizeVariableQuery(query: Partial<VariableQuery> | undefined): VariableQuery {
  const type = query?.type && VARIABLE_TYPES.includes(query.type) ? query.type : 'services';
  return { ...query, refId: query?.refId ?? 'variable', type };
}

export type { FlamehouseOptions, FlamehouseSecureJsonData, ProfilesOptions } from './options';
