import { DataFrame, dataFrameFromJSON, DataFrameJSON, DataFrameType, FieldType } from '@grafana/data';

/**
 * Frames as the backend sends them (the data frame JSON of pkg/query), read the way DataSourceWithBackend reads
 * them, for tests of what the frontend adds.
 */

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
export const TRACE_ID = '0123456789abcdef0123456789abcdef';

/** The internal link the backend puts on a field, to this datasource. */
function backendLink(title: string, query: Record<string, unknown>) {
  return { title, url: '', internal: { datasourceUid: 'fh', datasourceName: 'Flamehouse', query } };
}

function frame(json: DataFrameJSON): DataFrame {
  return dataFrameFromJSON(json);
}

/** A spans query's answer: ranked spans, the backend's "Span flame graph" link on spanID. */
export function spansFrame(refId = 'A'): DataFrame {
  return frame({
    schema: {
      name: 'spans',
      refId,
      meta: { preferredVisualisationType: 'table', custom: { flamehouse: 'spans' } },
      fields: [
        { name: 'traceID', type: FieldType.string },
        {
          name: 'spanID',
          type: FieldType.string,
          config: {
            links: [
              backendLink('Span flame graph', {
                queryType: 'profile',
                profileTypeId: CPU,
                labelSelector: '{service_name="checkout"}',
                spanSelector: ['${__value.raw}'],
              }),
            ],
          },
        },
        { name: 'serviceName', type: FieldType.string },
        { name: 'operationName', type: FieldType.string },
        { name: 'duration', type: FieldType.number, config: { unit: 'ms' } },
        { name: 'value', type: FieldType.number, config: { unit: 'ns' } },
        { name: 'share', type: FieldType.number, config: { unit: 'percentunit' } },
      ],
    },
    data: {
      values: [[TRACE_ID], ['00000000000000a1'], ['checkout'], ['GET /cart'], [12.5], [5000000], [0.25]],
    },
  });
}

/** A traces query's answer: Grafana's trace frame with profileSpanID and its backend link. */
export function traceFrame(refId = 'A'): DataFrame {
  return frame({
    schema: {
      name: 'Trace',
      refId,
      meta: { preferredVisualisationType: 'trace' },
      fields: [
        { name: 'traceID', type: FieldType.string },
        { name: 'spanID', type: FieldType.string },
        { name: 'parentSpanID', type: FieldType.string },
        { name: 'operationName', type: FieldType.string },
        { name: 'serviceName', type: FieldType.string },
        { name: 'startTime', type: FieldType.number },
        { name: 'duration', type: FieldType.number },
        { name: 'tags', type: FieldType.other },
        {
          name: 'profileSpanID',
          type: FieldType.string,
          config: {
            links: [
              backendLink('Profiles for this span', {
                queryType: 'profile',
                profileTypeId: CPU,
                labelSelector: '{}',
                spanSelector: ['${__value.raw}'],
              }),
            ],
          },
        },
      ],
    },
    data: {
      values: [
        [TRACE_ID],
        ['00000000000000a1'],
        [''],
        ['GET /cart'],
        ['checkout'],
        [1735812000000],
        [12.5],
        [[{ key: 'pyroscope.profile.id', value: '00000000000000a1' }]],
        ['00000000000000a1'],
      ],
    },
  });
}

/** A profile query's flame graph ("response", label as an enum). */
export function flameGraphFrame(refId = 'A'): DataFrame {
  return flameRowsFrame(refId, [
    [0, 100, 0, 'total'],
    [1, 100, 100, 'main'],
  ]);
}

/** A flame graph frame of rows (level, value, self, label), labels as an enum in the order they first come. */
function flameRowsFrame(refId: string, rows: Array<[number, number, number, string]>): DataFrame {
  const texts = [...new Set(rows.map((r) => r[3]))];
  return frame({
    schema: {
      name: 'response',
      refId,
      meta: { preferredVisualisationType: 'flamegraph' },
      fields: [
        { name: 'level', type: FieldType.number },
        { name: 'value', type: FieldType.number, config: { unit: 'ns' } },
        { name: 'self', type: FieldType.number, config: { unit: 'ns' } },
        { name: 'label', type: FieldType.enum, config: { type: { enum: { text: texts } } } },
      ],
    },
    data: {
      values: [
        rows.map((r) => r[0]),
        rows.map((r) => r[1]),
        rows.map((r) => r[2]),
        rows.map((r) => texts.indexOf(r[3])),
      ],
    },
  });
}

/** A table query's top functions. */
export function functionsFrame(refId = 'A'): DataFrame {
  return frame({
    schema: {
      name: 'functions',
      refId,
      meta: { preferredVisualisationType: 'table' },
      fields: [
        { name: 'label', type: FieldType.string },
        { name: 'self', type: FieldType.number, config: { unit: 'ns' } },
        { name: 'total', type: FieldType.number, config: { unit: 'ns' } },
      ],
    },
    data: { values: [['main'], [100], [100]] },
  });
}

/** One time series of a metrics query, with its group-by labels and the backend's flame graph link. */
export function seriesFrame(labels: Record<string, string> | undefined, refId = 'A'): DataFrame {
  return frame({
    schema: {
      name: 'series',
      refId,
      meta: { preferredVisualisationType: 'graph', type: DataFrameType.TimeSeriesMulti },
      fields: [
        { name: 'time', type: FieldType.time },
        {
          name: CPU,
          type: FieldType.number,
          labels,
          config: {
            unit: 'cores',
            links: [backendLink('Flame graph for this series', { queryType: 'profile', profileTypeId: CPU })],
          },
        },
      ],
    },
    data: { values: [[1735812000000], [0.5]] },
  });
}

/**
 * A flame graph answer as the backend sends it (level, value, self, label as an enum): main's children folded into
 * "other" past maxNodes, and a second "other" under gc.
 *
 *   total 100 > main 70 > handler 40 > parse 25, other 15; main > other 30; gc 30 > mark 20, other 10
 */
export function flameFrame(refId = 'A'): DataFrame {
  return flameRowsFrame(refId, [
    [0, 100, 0, 'total'],
    [1, 70, 0, 'main'],
    [2, 40, 0, 'handler'],
    [3, 25, 25, 'parse'],
    [3, 15, 15, 'other'],
    [2, 30, 30, 'other'],
    [1, 30, 0, 'gc'],
    [2, 20, 20, 'mark'],
    [2, 10, 10, 'other'],
  ]);
}
