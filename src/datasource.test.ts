import { DataSourceInstanceSettings } from '@grafana/data';

import { DataSource } from './datasource';
import { FlamehouseOptions } from './types';

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getTemplateSrv: () => ({
    replace: (text: string, vars: Record<string, { value: string }>) =>
      text.replace(/\$(\w+)/g, (_m, name: string) => vars[name]?.value ?? `$${name}`),
  }),
}));

const ds = new DataSource({ uid: 'fh', jsonData: {} } as DataSourceInstanceSettings<FlamehouseOptions>);

describe('DataSource', () => {
  it('runs only queries that name a profile type', () => {
    expect(ds.filterQuery({ refId: 'A', profileTypeId: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds' })).toBe(true);
    expect(ds.filterQuery({ refId: 'A', labelSelector: '{}' })).toBe(false);
  });

  it('interpolates template variables in the label selector', () => {
    const q = ds.applyTemplateVariables(
      { refId: 'A', labelSelector: '{service_name="$svc"}' },
      { svc: { text: 'checkout', value: 'checkout' } }
    );
    expect(q.labelSelector).toBe('{service_name="checkout"}');
  });

  it('defaults to a profile query over every series', () => {
    expect(ds.getDefaultQuery('explore' as never)).toEqual({ queryType: 'profile', labelSelector: '{}' });
  });
});
