import {
  CoreApp,
  DataQueryRequest,
  DataSourceInstanceSettings,
  dateTime,
  MetricFindValue,
  TimeRange,
} from '@grafana/data';
import { DataSourceSrv, DataSourceWithBackend, setDataSourceSrv } from '@grafana/runtime';
import { lastValueFrom, of } from 'rxjs';

import { DataSource } from './datasource';
import { functionsFrame, spansFrame, TRACE_ID } from './testing/frames';
import { installTemplateSrv } from './testing/templateSrv';
import { FlamehouseOptions, ProfileQuery, VariableQuery } from './types';
import { FlamehouseVariableSupport } from './variables';

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

/** A datasource with these jsonData.profiles settings. */
function datasource(profiles: Record<string, unknown> = {}): DataSource {
  const settings = { uid: 'fh', jsonData: { profiles } };
  return new DataSource(settings as unknown as DataSourceInstanceSettings<FlamehouseOptions>);
}

/** 10:00:30 to 11:00:30 UTC on 2025-01-02, which lookups widen to whole minutes. */
const range: TimeRange = {
  from: dateTime(Date.UTC(2025, 0, 2, 10, 0, 30)),
  to: dateTime(Date.UTC(2025, 0, 2, 11, 0, 30)),
  raw: { from: 'now-1h', to: 'now' },
};
const FROM = Date.UTC(2025, 0, 2, 10, 0, 0);
const TO = Date.UTC(2025, 0, 2, 11, 1, 0);

/** The target Tempo's "Related profiles" link builds (Pyroscope-shaped), after Grafana interpolated it. */
const tempoTarget: ProfileQuery = {
  refId: 'profile',
  queryType: 'profile',
  labelSelector: '{service_name="checkout"}',
  profileTypeId: '',
  spanSelector: ['00000000000000a1'],
  groupBy: [],
};

beforeEach(() => {
  installTemplateSrv({ svc: { value: 'checkout' }, type: { value: CPU }, label: { value: 'k8s_pod_name' } });
});

describe('getDefaultQuery', () => {
  it('is a flame graph over every series', () => {
    expect(datasource().getDefaultQuery(CoreApp.Explore)).toEqual({ queryType: 'profile', labelSelector: '{}' });
  });

  it("names the datasource's default profile type", () => {
    expect(datasource({ defaultProfileType: CPU }).getDefaultQuery(CoreApp.PanelEditor)).toEqual({
      queryType: 'profile',
      labelSelector: '{}',
      profileTypeId: CPU,
    });
  });
});

describe('filterQuery', () => {
  it('drops hidden queries', () => {
    expect(datasource().filterQuery({ refId: 'A', profileTypeId: CPU, hide: true })).toBe(false);
  });

  it('runs queries that name a profile type', () => {
    expect(datasource().filterQuery({ refId: 'A', profileTypeId: CPU })).toBe(true);
  });

  it('runs queries without a profile type when the datasource has a default', () => {
    expect(datasource({ defaultProfileType: CPU }).filterQuery({ refId: 'A', labelSelector: '{}' })).toBe(true);
    expect(datasource({ defaultProfileType: CPU }).filterQuery({ refId: 'A' })).toBe(true);
  });

  it('drops truly empty queries when there is no default', () => {
    expect(datasource().filterQuery({ refId: 'A', labelSelector: '{}' })).toBe(false);
    expect(datasource().filterQuery({ refId: 'A', labelSelector: '{}', spanSelector: [''], traceId: ' ' })).toBe(false);
  });

  it('runs a traces query only when it names a trace, with or without a profile type', () => {
    expect(datasource({ defaultProfileType: CPU }).filterQuery({ refId: 'A', queryType: 'traces' })).toBe(false);
    expect(datasource().filterQuery({ refId: 'A', queryType: 'traces', traceId: ' ' })).toBe(false);
    expect(datasource().filterQuery({ refId: 'A', queryType: 'traces', traceId: TRACE_ID })).toBe(true);
    expect(datasource().filterQuery({ refId: 'A', queryType: 'traces', traceId: '$trace' })).toBe(true);
    expect(datasource().filterQuery({ refId: 'A', queryType: 'traces', traceId: TRACE_ID, hide: true })).toBe(false);
  });

  it('runs a spans query like a profile query', () => {
    expect(datasource().filterQuery({ refId: 'A', queryType: 'spans', labelSelector: '{}' })).toBe(false);
    expect(datasource().filterQuery({ refId: 'A', queryType: 'spans', profileTypeId: CPU })).toBe(true);
    expect(datasource({ defaultProfileType: CPU }).filterQuery({ refId: 'A', queryType: 'spans' })).toBe(true);
  });

  it("keeps Tempo's targets, with or without a default profile type", () => {
    expect(datasource().filterQuery(tempoTarget)).toBe(true);
    expect(datasource({ defaultProfileType: CPU }).filterQuery(tempoTarget)).toBe(true);
    expect(datasource().filterQuery({ refId: 'span-flamegraph-refId', spanSelector: ['00000000000000a1'] })).toBe(true);
  });
});

describe('query', () => {
  const run = (app: string, targets: ProfileQuery[]) => {
    const spy = jest.spyOn(DataSourceWithBackend.prototype, 'query').mockReturnValue(of({ data: [] }));
    datasource().query({ app, targets } as DataQueryRequest<ProfileQuery>);
    const sent = (spy.mock.calls[0][0] as DataQueryRequest<ProfileQuery>).targets;
    spy.mockRestore();
    return sent.map((t) => t.queryType);
  };

  it('sends "both" from Explore and a flame graph elsewhere', () => {
    const targets: ProfileQuery[] = [
      { refId: 'A', queryType: 'both' },
      { refId: 'B', queryType: 'metrics' },
    ];
    expect(run(CoreApp.Explore, targets)).toEqual(['both', 'metrics']);
    expect(run(CoreApp.Dashboard, targets)).toEqual(['profile', 'metrics']);
  });

  describe('links', () => {
    const settingsByUid: Record<string, Partial<DataSourceInstanceSettings>> = {
      tempo: { uid: 'tempo', type: 'grafana-tempo-datasource', name: 'Tempo' },
      loki: { uid: 'loki', type: 'loki', name: 'Loki' },
    };

    beforeEach(() => {
      const srv: Partial<DataSourceSrv> = {
        // eslint-disable-next-line @typescript-eslint/no-deprecated -- what the datasource class calls (Grafana 11.6)
        getInstanceSettings: (ref) => settingsByUid[String(ref)] as DataSourceInstanceSettings | undefined,
      };
      setDataSourceSrv(srv as DataSourceSrv);
    });

    async function answer(profiles: Record<string, unknown>, request: Partial<DataQueryRequest<ProfileQuery>>) {
      const frames = [spansFrame('A'), functionsFrame('B')];
      const spy = jest.spyOn(DataSourceWithBackend.prototype, 'query').mockReturnValue(of({ data: frames }));
      const response = await lastValueFrom(
        datasource(profiles).query({
          app: CoreApp.Explore,
          scopedVars: {},
          ...request,
        } as DataQueryRequest<ProfileQuery>)
      );
      spy.mockRestore();
      return response.data as typeof frames;
    }

    const linksOf = (frame: ReturnType<typeof spansFrame>, name: string) =>
      frame.fields.find((f) => f.name === name)?.config.links ?? [];

    it('open the trace ids of spans in the traces datasource, and the selection in the logs datasource', async () => {
      const [spans, table] = await answer(
        { tracesDatasourceUid: 'tempo', logsDatasourceUid: 'loki' },
        {
          targets: [
            { refId: 'A', queryType: 'spans', profileTypeId: CPU, labelSelector: '{service_name="$svc"}' },
            { refId: 'B', queryType: 'table', profileTypeId: CPU, labelSelector: '{service_name="$svc"}' },
          ],
        }
      );
      expect(linksOf(spans, 'traceID')).toEqual([
        expect.objectContaining({
          title: 'Open trace',
          internal: expect.objectContaining({
            datasourceUid: 'tempo',
            query: expect.objectContaining({ queryType: 'traceql', query: '${__value.raw}' }),
          }),
        }),
      ]);
      // The selector as run: variables replaced.
      expect(linksOf(table, 'label')[0].internal?.query).toMatchObject({ expr: '{service_name="checkout"}' });
    });

    it('open traces in this datasource when the traces datasource is unset or gone', async () => {
      const [spans] = await answer(
        { tracesDatasourceUid: 'deleted' },
        { targets: [{ refId: 'A', queryType: 'spans', profileTypeId: CPU }] }
      );
      expect(linksOf(spans, 'traceID')[0].internal).toMatchObject({
        datasourceUid: 'fh',
        query: { queryType: 'traces', traceId: '${__value.raw}' },
      });
    });

    it('list the related links of a query for the editor', () => {
      const ds = datasource({ logsDatasourceUid: 'loki', tracesDatasourceUid: 'tempo' });
      const links = ds.relatedLinks({ refId: 'A', labelSelector: '{service_name="$svc"}', traceId: TRACE_ID }, range);
      expect(links.map((l) => l.title)).toEqual(['Logs for this selection', 'Open trace']);
      expect(decodeURIComponent(links[0].href)).toContain('{service_name=\\"checkout\\"}');
    });
  });
});

describe('applyTemplateVariables', () => {
  const ds = datasource();

  it('replaces variables in the selector, spans, trace id, group by and profile type', () => {
    installTemplateSrv({
      envs: { value: ['prod', 'staging'], multi: true },
      spans: { value: ['00000000000000a1', '00000000000000b2'], multi: true },
      trace: { value: '0123456789abcdef0123456789abcdef' },
      labels: { value: ['service_name', 'thread_name'], multi: true },
      type: { value: CPU },
    });
    const q = ds.applyTemplateVariables(
      {
        refId: 'A',
        profileTypeId: '$type',
        labelSelector: '{service_name="$svc", env=~"$envs"}',
        spanSelector: ['$spans'],
        traceId: '$trace',
        groupBy: ['$labels'],
      },
      { svc: { text: 'cart', value: 'cart' } }
    );
    expect(q).toEqual({
      refId: 'A',
      profileTypeId: CPU,
      labelSelector: '{service_name="cart", env=~"(?:prod|staging)"}',
      spanSelector: ['00000000000000a1', '00000000000000b2'],
      traceId: '0123456789abcdef0123456789abcdef',
      groupBy: ['service_name', 'thread_name'],
    });
  });

  it('merges ad hoc filters into the selector', () => {
    const q = ds.applyTemplateVariables({ refId: 'A', labelSelector: '{service_name="$svc"}' }, {}, [
      { key: 'k8s_namespace_name', operator: '=~', value: 'prod-.*' },
      { key: 'thread_name', operator: '!=', value: 'gc' },
    ]);
    expect(q.labelSelector).toBe('{service_name="checkout", k8s_namespace_name=~"prod-.*", thread_name!="gc"}');
  });

  it('replaces a variable in the trace id of a traces query', () => {
    installTemplateSrv({ trace: { value: ' 0123456789abcdef0123456789abcdef ' } });
    expect(ds.applyTemplateVariables({ refId: 'A', queryType: 'traces', traceId: '$trace' }, {})).toMatchObject({
      queryType: 'traces',
      traceId: '0123456789abcdef0123456789abcdef',
    });
  });

  it("leaves Tempo's targets as they are", () => {
    expect(ds.applyTemplateVariables(tempoTarget, {})).toEqual(tempoTarget);
  });

  it('gives Explore interpolated copies that name the datasource', () => {
    const [q] = ds.interpolateVariablesInQueries([{ refId: 'A', labelSelector: '{a="$svc"}' }], {});
    expect(q).toEqual({ refId: 'A', labelSelector: '{a="checkout"}', datasource: { type: undefined, uid: 'fh' } });
  });
});

describe('lookups', () => {
  function withResources(answers: Record<string, unknown>) {
    const ds = datasource();
    const getResource = jest
      .spyOn(ds, 'getResource')
      .mockImplementation(async (path: string) => (path in answers ? answers[path] : Promise.reject({ data: {} })));
    return { ds, getResource };
  }

  it('ask for profile types in the range widened to whole minutes', async () => {
    const { ds, getResource } = withResources({ profileTypes: [{ id: CPU, label: 'process_cpu - cpu' }] });
    expect(await ds.getProfileTypes(range)).toEqual([{ id: CPU, label: 'process_cpu - cpu' }]);
    expect(getResource).toHaveBeenCalledWith('profileTypes', { from: FROM, to: TO });
  });

  it('ask for label names and values of a profile type', async () => {
    const { ds, getResource } = withResources({ labelNames: ['service_name', 'k8s_pod_name'], labelValues: ['a'] });
    expect(await ds.getLabelNames(range, CPU)).toEqual(['service_name', 'k8s_pod_name']);
    expect(getResource).toHaveBeenLastCalledWith('labelNames', { from: FROM, to: TO, profileTypeId: CPU });
    expect(await ds.getLabelValues('k8s_pod_name', range, CPU)).toEqual(['a']);
    expect(getResource).toHaveBeenLastCalledWith('labelValues', {
      from: FROM,
      to: TO,
      profileTypeId: CPU,
      label: 'k8s_pod_name',
    });
  });

  it('replace a profile type variable and leave out what is not a profile type', async () => {
    const { ds, getResource } = withResources({ services: ['checkout'] });
    await ds.getServices(undefined, '$type');
    expect(getResource).toHaveBeenLastCalledWith('services', { profileTypeId: CPU });
    await ds.getServices(undefined, '$unknown');
    expect(getResource).toHaveBeenLastCalledWith('services', {});
  });

  it('read null answers as empty lists', async () => {
    const { ds } = withResources({ services: null, labelNames: null, profileTypes: null });
    expect(await ds.getServices()).toEqual([]);
    expect(await ds.getLabelNames()).toEqual([]);
    expect(await ds.getProfileTypes()).toEqual([]);
    expect(await ds.getLabelValues('')).toEqual([]);
  });

  it('are cached by path and parameters; failures are not', async () => {
    const { ds, getResource } = withResources({ labelNames: ['a'] });
    await ds.getLabelNames(range);
    await ds.getLabelNames(range);
    expect(getResource).toHaveBeenCalledTimes(1);
    await ds.getLabelNames(range, CPU);
    expect(getResource).toHaveBeenCalledTimes(2);
    await expect(ds.getLabelValues('x', range)).rejects.toEqual({ data: {} });
    await expect(ds.getLabelValues('x', range)).rejects.toEqual({ data: {} });
    expect(getResource).toHaveBeenCalledTimes(4);
  });

  it('feed ad hoc filter keys and values', async () => {
    const { ds, getResource } = withResources({ labelNames: ['service_name'], labelValues: ['checkout', 'cart'] });
    expect(await ds.getTagKeys({ filters: [], timeRange: range })).toEqual([
      { text: 'service_name', value: 'service_name' },
    ]);
    const values = await ds.getTagValues({
      key: 'service_name',
      filters: [],
      timeRange: range,
      queries: [{ refId: 'A', profileTypeId: CPU }],
    });
    expect(values.map((v) => v.text)).toEqual(['checkout', 'cart']);
    expect(getResource).toHaveBeenLastCalledWith('labelValues', {
      from: FROM,
      to: TO,
      profileTypeId: CPU,
      label: 'service_name',
    });
  });
});

describe('template variable queries', () => {
  const answers = {
    profileTypes: [{ id: CPU, label: 'process_cpu - cpu' }],
    services: ['cart', 'checkout'],
    labelNames: ['service_name'],
    labelValues: ['pod-1'],
  };

  async function values(query: Partial<VariableQuery>): Promise<[MetricFindValue[], jest.SpyInstance]> {
    const ds = datasource();
    const getResource = jest.spyOn(ds, 'getResource').mockImplementation(async (p: string) => answers[p as 'services']);
    const request = { targets: [query], range, scopedVars: {} } as unknown as DataQueryRequest<VariableQuery>;
    const response = await lastValueFrom((ds.variables as FlamehouseVariableSupport).query(request));
    return [response.data, getResource];
  }

  it('list profile types by label, with their ids as values', async () => {
    const [data] = await values({ refId: 'v', type: 'profileTypes' });
    expect(data).toEqual([{ text: 'process_cpu - cpu', value: CPU }]);
  });

  it('list services, label names and label values', async () => {
    expect((await values({ refId: 'v', type: 'services' }))[0].map((v) => v.text)).toEqual(['cart', 'checkout']);
    expect((await values({ refId: 'v', type: 'labelNames' }))[0].map((v) => v.text)).toEqual(['service_name']);
    const [data, getResource] = await values({
      refId: 'v',
      type: 'labelValues',
      label: '$label',
      profileTypeId: '$type',
    });
    expect(data).toEqual([{ text: 'pod-1', value: 'pod-1' }]);
    expect(getResource).toHaveBeenCalledWith('labelValues', {
      from: FROM,
      to: TO,
      profileTypeId: CPU,
      label: 'k8s_pod_name',
    });
  });

  it('narrow to the series of an interpolated selector, so that variables chain', async () => {
    const [, getResource] = await values({
      refId: 'v',
      type: 'labelValues',
      label: 'k8s_pod_name',
      labelSelector: '{service_name="$svc"}',
    });
    expect(getResource).toHaveBeenCalledWith('labelValues', {
      from: FROM,
      to: TO,
      label: 'k8s_pod_name',
      labelSelector: '{service_name="checkout"}',
    });
    const [, services] = await values({ refId: 'v', type: 'services', labelSelector: ' {} ' });
    expect(services).toHaveBeenCalledWith('services', { from: FROM, to: TO });
  });

  it('list services for a query without a type (a new variable)', async () => {
    const [data] = await values({ refId: 'v' });
    expect(data.map((v) => v.text)).toEqual(['cart', 'checkout']);
  });
});
