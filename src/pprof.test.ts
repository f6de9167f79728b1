import { DataSourceInstanceSettings, dateTime, TimeRange } from '@grafana/data';
import { of, throwError } from 'rxjs';

import { attachmentName, DataSource } from './datasource';
import { installTemplateSrv } from './testing/templateSrv';
import { FlamehouseOptions } from './types';

const fetch = jest.fn();
jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getBackendSrv: () => ({ fetch }),
}));

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const range: TimeRange = {
  from: dateTime(Date.UTC(2025, 0, 2, 10, 0, 30)),
  to: dateTime(Date.UTC(2025, 0, 2, 11, 0, 30)),
  raw: { from: 'now-1h', to: 'now' },
};

function datasource(): DataSource {
  const settings = { uid: 'fh', jsonData: { profiles: {} } };
  return new DataSource(settings as unknown as DataSourceInstanceSettings<FlamehouseOptions>);
}

beforeEach(() => {
  fetch.mockReset();
  installTemplateSrv({ svc: { value: 'checkout' } });
});

describe('downloadPprof', () => {
  it("asks the pprof resource for the query as it runs, variables replaced, over the range's milliseconds", async () => {
    const blob = new Blob(['pprof']);
    fetch.mockReturnValue(
      of({
        data: blob,
        headers: new Headers({
          'content-disposition': 'attachment; filename="flamehouse-process_cpu-checkout-20250102T100030Z.pb.gz"',
        }),
      })
    );
    const file = await datasource().downloadPprof(
      {
        refId: 'A',
        datasource: { uid: 'fh', type: 'flamehouse-profiles-datasource' },
        hide: false,
        queryType: 'profile',
        profileTypeId: CPU,
        labelSelector: '{service_name="$svc"}',
        hideFrames: ['kernel'],
        spanSelector: ['00000000000000a1'],
      },
      range
    );
    expect(file).toEqual({ blob, filename: 'flamehouse-process_cpu-checkout-20250102T100030Z.pb.gz' });
    expect(fetch).toHaveBeenCalledTimes(1);
    const request = fetch.mock.calls[0][0];
    expect(request.url).toBe('/api/datasources/uid/fh/resources/pprof');
    expect(request.responseType).toBe('blob');
    expect(request.params.from).toBe(String(range.from.valueOf()));
    expect(request.params.to).toBe(String(range.to.valueOf()));
    expect(JSON.parse(request.params.query)).toEqual({
      queryType: 'profile',
      profileTypeId: CPU,
      labelSelector: '{service_name="checkout"}',
      hideFrames: ['kernel'],
      spanSelector: ['00000000000000a1'],
    });
  });

  it("rejects with the backend's message, which a blob response carries as JSON", async () => {
    const body = new Blob([JSON.stringify({ message: 'invalid query: focusPath opens a node of a flame graph' })]);
    fetch.mockReturnValue(throwError(() => ({ status: 400, data: body, statusText: 'Bad Request' })));
    await expect(
      datasource().downloadPprof({ refId: 'A', queryType: 'metrics', profileTypeId: CPU }, range)
    ).rejects.toThrow('invalid query: focusPath opens a node of a flame graph');
  });

  it('rejects with the status when the body says nothing', async () => {
    fetch.mockReturnValue(throwError(() => ({ status: 502, data: new Blob(['']), statusText: 'Bad Gateway' })));
    await expect(datasource().downloadPprof({ refId: 'A', profileTypeId: CPU }, range)).rejects.toThrow('Bad Gateway');
  });
});

describe('attachmentName', () => {
  it('reads a safe file name, else names the file itself', () => {
    expect(attachmentName('attachment; filename="a-b_c.pb.gz"')).toBe('a-b_c.pb.gz');
    expect(attachmentName('attachment; filename="../../etc/passwd"')).toBe('flamehouse.pb.gz');
    expect(attachmentName(null)).toBe('flamehouse.pb.gz');
  });
});
