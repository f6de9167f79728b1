import '../../testing/dom';

import React, { useState } from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import { DataSourceInstanceSettings, dateTime, TimeRange } from '@grafana/data';

import { DataSource } from '../../datasource';
import { selectors } from '../../selectors';
import { installTemplateSrv } from '../../testing/templateSrv';
import { FlamehouseOptions, VariableQuery } from '../../types';
import { describeVariableQuery, VariableQueryEditor } from './VariableQueryEditor';

// Select menus are slow in jsdom, the more so on a cold cache with parallel suites.
jest.setTimeout(30_000);

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const range: TimeRange = {
  from: dateTime(Date.UTC(2025, 0, 2, 10, 0)),
  to: dateTime(Date.UTC(2025, 0, 2, 11, 0)),
  raw: { from: 'now-1h', to: 'now' },
};
const resources: Record<string, unknown> = {
  profileTypes: [{ id: CPU, label: 'process_cpu - cpu' }],
  labelNames: ['k8s_pod_name', 'service_name'],
};

async function setup(initial: Partial<VariableQuery>) {
  installTemplateSrv();
  const ds = new DataSource({ uid: 'fh', jsonData: {} } as DataSourceInstanceSettings<FlamehouseOptions>);
  const getResource = jest.spyOn(ds, 'getResource').mockImplementation(async (path: string) => resources[path]);
  const onChange = jest.fn();
  function Harness() {
    const [query, setQuery] = useState({ refId: 'A', ...initial } as VariableQuery);
    const change = (q: VariableQuery) => {
      setQuery(q);
      onChange(q);
    };
    return <VariableQueryEditor datasource={ds} query={query} onChange={change} onRunQuery={jest.fn()} range={range} />;
  }
  await act(async () => {
    render(<Harness />);
  });
  return { onChange, getResource, lastQuery: (): VariableQuery => onChange.mock.lastCall?.[0] };
}

async function pick(container: HTMLElement, text: string) {
  fireEvent.keyDown(container.querySelector('input')!, { key: 'ArrowDown' });
  fireEvent.click(await screen.findByText(text, { selector: '[role="option"] *, [role="option"]' }));
  await act(async () => {});
}

describe('VariableQueryEditor', () => {
  it('lists services for a new variable, optionally of a profile type', async () => {
    const { lastQuery } = await setup({});
    const type = screen.getByTestId(selectors.variable.type);
    expect(within(type).getByLabelText('Services')).toBeChecked();
    expect(screen.queryByTestId(selectors.variable.label)).not.toBeInTheDocument();
    await pick(screen.getByTestId(selectors.variable.profileType), 'process_cpu - cpu');
    expect(lastQuery()).toEqual({
      refId: 'A',
      type: 'services',
      profileTypeId: CPU,
      query: `services (${CPU})`,
    });
  });

  it('asks for the label of label values, from the label names of the range', async () => {
    const { lastQuery, getResource } = await setup({});
    fireEvent.click(within(screen.getByTestId(selectors.variable.type)).getByLabelText('Label values'));
    expect(lastQuery().type).toBe('labelValues');
    await pick(screen.getByTestId(selectors.variable.label), 'k8s.pod.name');
    expect(lastQuery()).toEqual({
      refId: 'A',
      type: 'labelValues',
      label: 'k8s_pod_name',
      query: 'label values of k8s_pod_name',
    });
    expect(getResource).toHaveBeenCalledWith('labelNames', { from: range.from.valueOf(), to: range.to.valueOf() });
  });

  it('shows a stored query, and no profile type for profile types', async () => {
    await setup({ type: 'labelValues', label: 'service_name', profileTypeId: CPU });
    expect(within(screen.getByTestId(selectors.variable.label)).getByText('service.name')).toBeInTheDocument();
    expect(
      within(screen.getByTestId(selectors.variable.profileType)).getByText('process_cpu - cpu')
    ).toBeInTheDocument();
    fireEvent.click(within(screen.getByTestId(selectors.variable.type)).getByLabelText('Profile types'));
    expect(screen.queryByTestId(selectors.variable.profileType)).not.toBeInTheDocument();
  });

  it('stores a label selector on blur, so that variables chain', async () => {
    const { lastQuery } = await setup({ type: 'labelValues', label: 'k8s_pod_name' });
    const input = screen.getByTestId(selectors.variable.labelSelector);
    fireEvent.change(input, { target: { value: ' {service_name=~"$service"} ' } });
    fireEvent.blur(input);
    expect(lastQuery()).toEqual({
      refId: 'A',
      type: 'labelValues',
      label: 'k8s_pod_name',
      labelSelector: '{service_name=~"$service"}',
      query: 'label values of k8s_pod_name where {service_name=~"$service"}',
    });
    fireEvent.change(input, { target: { value: '' } });
    fireEvent.blur(input);
    expect(lastQuery().labelSelector).toBeUndefined();
  });

  it('describes queries for the variables list', () => {
    expect(describeVariableQuery({ refId: 'A', type: 'labelNames' })).toBe('label names');
    expect(describeVariableQuery({ refId: 'A', type: 'profileTypes', profileTypeId: CPU })).toBe('profile types');
  });
});
