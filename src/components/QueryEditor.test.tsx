import '../testing/dom';

import React, { useState } from 'react';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { CoreApp, DataSourceInstanceSettings, dateTime, LoadingState, PanelData, TimeRange } from '@grafana/data';
import { DataSourceSrv, setDataSourceSrv } from '@grafana/runtime';

import { DataSource } from '../datasource';
import { saveFile } from '../download';
import { selectors } from '../selectors';
import { flameFrame } from '../testing/frames';
import { installTemplateSrv } from '../testing/templateSrv';
import { FlamehouseOptions, ProfileQuery } from '../types';
import { QueryEditor } from './QueryEditor';

// jsdom cannot download files.
jest.mock('../download', () => ({ saveFile: jest.fn() }));

// Select menus are slow in jsdom, the more so on a cold cache with parallel suites.
jest.setTimeout(30_000);

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const ALLOC = 'memory:alloc_space:bytes:space:bytes';
const INUSE = 'memory:inuse_space:bytes:space:bytes';

const range: TimeRange = {
  from: dateTime(Date.UTC(2025, 0, 2, 10, 0)),
  to: dateTime(Date.UTC(2025, 0, 2, 11, 0)),
  raw: { from: 'now-1h', to: 'now' },
};

const labelValues: Record<string, string[]> = {
  service_name: ['cart', 'checkout'],
  k8s_pod_name: ['api-1', 'api-2'],
};
const resources: Record<string, unknown> = {
  profileTypes: [
    { id: CPU, label: 'process_cpu - cpu' },
    { id: ALLOC, label: 'memory - alloc_space' },
    { id: INUSE, label: 'memory - inuse_space' },
  ],
  labelNames: ['k8s_pod_name', 'service_name', 'thread_name'],
};

interface Options {
  app?: CoreApp;
  data?: PanelData;
  defaultMaxNodes?: number;
  failing?: string;
  /** More jsonData.profiles settings. */
  profiles?: Record<string, unknown>;
}

/** Renders the editor around a query it owns, as Grafana does, with the resources above. */
async function setup(
  initial: Partial<ProfileQuery>,
  { app = CoreApp.PanelEditor, data, defaultMaxNodes, failing, profiles }: Options = {}
) {
  const settings = { uid: 'fh', jsonData: { profiles: { defaultMaxNodes, ...profiles } } };
  const ds = new DataSource(settings as unknown as DataSourceInstanceSettings<FlamehouseOptions>);
  const getResource = jest.spyOn(ds, 'getResource').mockImplementation(async (path: string, params) => {
    if (path === failing) {
      throw { data: { message: `${path} failed: connection refused` } };
    }
    return path === 'labelValues' ? (labelValues[params?.label] ?? []) : resources[path];
  });
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  function Harness() {
    const [query, setQuery] = useState<ProfileQuery>({ refId: 'A', ...initial });
    const change = (q: ProfileQuery) => {
      setQuery(q);
      onChange(q);
    };
    return (
      <QueryEditor
        datasource={ds}
        query={query}
        onChange={change}
        onRunQuery={onRunQuery}
        range={range}
        app={app}
        data={data}
      />
    );
  }
  // Render and let the first lookups answer.
  await act(async () => {
    render(<Harness />);
  });
  const lastQuery = (): ProfileQuery => onChange.mock.lastCall?.[0];
  return { ds, getResource, onChange, onRunQuery, lastQuery };
}

/** Lets the lookups that an interaction started answer. */
const settle = () => act(async () => {});

/** Opens the Select inside an element and picks the option with a text. */
async function pick(container: HTMLElement, text: string) {
  const input = container.querySelector('input')!;
  fireEvent.keyDown(input, { key: 'ArrowDown' });
  fireEvent.click(await screen.findByText(text, { selector: '[role="option"] *, [role="option"]' }));
  await settle();
}

const rows = () => screen.queryAllByTestId(selectors.query.matcherRow);
const selectorText = () => screen.getByTestId(selectors.query.labelSelectorText) as HTMLInputElement;

async function switchToCode() {
  const modes = screen.getByTestId(selectors.query.labelSelectorMode);
  fireEvent.click(within(modes).getByLabelText('Code'));
  return selectorText();
}

describe('QueryEditor: profile type', () => {
  it('shows the profile type by name and sample type, and asks for labels of it in the range', async () => {
    const { getResource } = await setup({ profileTypeId: CPU });
    const picker = screen.getByTestId(selectors.query.profileTypeId);
    await waitFor(() => expect(picker.querySelector('input')).toHaveValue('process_cpu / cpu'));
    expect(getResource).toHaveBeenCalledWith('profileTypes', { from: range.from.valueOf(), to: range.to.valueOf() });
    expect(getResource).toHaveBeenCalledWith('labelNames', {
      from: range.from.valueOf(),
      to: range.to.valueOf(),
      profileTypeId: CPU,
    });
  });

  it('picks another type by name then sample type, and runs the query', async () => {
    const { lastQuery, onRunQuery } = await setup({ profileTypeId: CPU });
    const picker = screen.getByTestId(selectors.query.profileTypeId);
    await waitFor(() => expect(picker.querySelector('input')).toHaveValue('process_cpu / cpu'));
    fireEvent.click(picker.querySelector('input')!);
    fireEvent.click(await screen.findByText('memory'));
    fireEvent.click(await screen.findByText('inuse_space'));
    await settle();
    expect(lastQuery().profileTypeId).toBe(INUSE);
    expect(onRunQuery).toHaveBeenCalledTimes(1);
  });
});

describe('QueryEditor: label selector as rows', () => {
  it('shows one row per matcher, labels by their OTel names', async () => {
    await setup({ labelSelector: '{service_name="checkout", k8s_pod_name=~"api-.*"}' });
    expect(rows()).toHaveLength(2);
    expect(within(rows()[0]).getByText('service.name')).toBeInTheDocument();
    expect(within(rows()[0]).getByText('checkout')).toBeInTheDocument();
    expect(within(rows()[1]).getByText('k8s.pod.name')).toBeInTheDocument();
    expect(within(rows()[1]).getByText('=~')).toBeInTheDocument();
    expect(within(rows()[1]).getByLabelText('Regular expression')).toHaveValue('api-.*');
  });

  it('changes a value from the label values of the range, and runs the query', async () => {
    const { lastQuery, onRunQuery, getResource } = await setup({
      profileTypeId: CPU,
      labelSelector: '{service_name="checkout"}',
    });
    await pick(within(rows()[0]).getByTestId(selectors.query.matcherValue), 'cart');
    expect(lastQuery().labelSelector).toBe('{service_name="cart"}');
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    expect(getResource).toHaveBeenCalledWith('labelValues', expect.objectContaining({ label: 'service_name' }));
  });

  it('adds a row, which joins the query once it has a value, and removes rows', async () => {
    const { lastQuery, onChange } = await setup({ labelSelector: '{service_name="checkout"}' });
    fireEvent.click(screen.getByTestId(selectors.query.matcherAdd));
    expect(rows()).toHaveLength(2);
    await pick(within(rows()[1]).getByTestId(selectors.query.matcherName), 'k8s.pod.name');
    expect(onChange).not.toHaveBeenCalled();
    await pick(within(rows()[1]).getByTestId(selectors.query.matcherValue), 'api-2');
    expect(lastQuery().labelSelector).toBe('{service_name="checkout", k8s_pod_name="api-2"}');
    fireEvent.click(within(rows()[0]).getByTestId(selectors.query.matcherRemove));
    await settle();
    expect(lastQuery().labelSelector).toBe('{k8s_pod_name="api-2"}');
    expect(rows()).toHaveLength(1);
  });

  it('changes the operator; a regexp is typed in', async () => {
    const { lastQuery } = await setup({ labelSelector: '{k8s_pod_name="api-1"}' });
    await pick(within(rows()[0]).getByTestId(selectors.query.matcherOp), '!~');
    expect(lastQuery().labelSelector).toBe('{k8s_pod_name!~"api-1"}');
    const regexp = within(rows()[0]).getByLabelText('Regular expression');
    fireEvent.change(regexp, { target: { value: 'api-[0-9]+' } });
    fireEvent.blur(regexp);
    expect(lastQuery().labelSelector).toBe('{k8s_pod_name!~"api-[0-9]+"}');
  });
});

describe('QueryEditor: label selector as text', () => {
  it('shows the same selector as the rows, and back: text ⇄ rows', async () => {
    const { lastQuery, onRunQuery } = await setup({ labelSelector: '{service_name="checkout"}' });
    const input = await switchToCode();
    expect(input).toHaveValue('{service_name="checkout"}');
    fireEvent.change(input, { target: { value: `{"deployment.environment.name"='prod', thread_name!~"gc|jit"}` } });
    fireEvent.blur(input);
    expect(lastQuery().labelSelector).toBe(`{"deployment.environment.name"='prod', thread_name!~"gc|jit"}`);
    expect(onRunQuery).toHaveBeenCalledTimes(1);

    fireEvent.click(within(screen.getByTestId(selectors.query.labelSelectorMode)).getByLabelText('Builder'));
    await settle();
    expect(rows()).toHaveLength(2);
    expect(within(rows()[0]).getByText('deployment.environment.name')).toBeInTheDocument();
    expect(within(rows()[0]).getByText('prod')).toBeInTheDocument();
    expect(within(rows()[1]).getByLabelText('Regular expression')).toHaveValue('gc|jit');
  });

  it('keeps invalid text, shows where it is wrong, and does not run it', async () => {
    const { lastQuery, onRunQuery } = await setup({ labelSelector: '{}' });
    const input = await switchToCode();
    fireEvent.change(input, { target: { value: '{service_name="checkout"' } });
    fireEvent.blur(input);
    expect(screen.getByTestId(selectors.query.labelSelectorError)).toHaveTextContent(
      'Invalid selector: position 25: expected "," or "}"'
    );
    expect(selectorText()).toHaveValue('{service_name="checkout"');
    expect(lastQuery().labelSelector).toBe('{service_name="checkout"');
    expect(onRunQuery).not.toHaveBeenCalled();
    const builder = within(screen.getByTestId(selectors.query.labelSelectorMode)).getByLabelText('Builder');
    expect(builder).toBeDisabled();
  });

  it('starts as text when the stored selector does not parse', async () => {
    await setup({ labelSelector: '{a=b}' });
    expect(selectorText()).toHaveValue('{a=b}');
    expect(screen.getByTestId(selectors.query.labelSelectorError)).toHaveTextContent('expected quoted value');
  });

  it('runs on Shift+Enter', async () => {
    const { lastQuery, onRunQuery } = await setup({ labelSelector: '{}' });
    const input = await switchToCode();
    fireEvent.change(input, { target: { value: '{thread_name="main"}' } });
    fireEvent.keyDown(input, { key: 'Enter', shiftKey: true });
    expect(lastQuery().labelSelector).toBe('{thread_name="main"}');
    expect(onRunQuery).toHaveBeenCalledTimes(1);
  });

  it('suggests the labels that say where a sample is from first', async () => {
    await setup({ labelSelector: '{}' });
    const input = await switchToCode();
    fireEvent.focus(input);
    fireEvent.change(input, { target: { value: '{}' } });
    input.setSelectionRange(1, 1);
    fireEvent.click(input);
    const names = await screen.findByTestId(selectors.query.suggestions);
    expect(
      within(names)
        .getAllByRole('option')
        .map((o) => o.title)
    ).toEqual(['service.name', 'thread.name', 'k8s.pod.name']);
  });

  it('suggests label names, then values, at the cursor', async () => {
    const { lastQuery } = await setup({ labelSelector: '{}' });
    const input = await switchToCode();
    fireEvent.focus(input);
    fireEvent.change(input, { target: { value: '{k8s}' } });
    input.setSelectionRange(4, 4);
    fireEvent.click(input);
    const names = await screen.findByTestId(selectors.query.suggestions);
    expect(
      within(names)
        .getAllByRole('option')
        .map((o) => o.title)
    ).toEqual(['k8s.pod.name']);
    fireEvent.keyDown(input, { key: 'Enter' });
    expect(input).toHaveValue('{k8s_pod_name=""}');

    await waitFor(() => expect(screen.getByTestId(selectors.query.suggestions)).toHaveTextContent('api-2'));
    const values = within(screen.getByTestId(selectors.query.suggestions)).getAllByRole('option');
    expect(values.map((o) => o.textContent)).toEqual(['api-1', 'api-2']);
    fireEvent.mouseDown(values[1]);
    expect(input).toHaveValue('{k8s_pod_name="api-2"}');
    fireEvent.blur(input);
    expect(lastQuery().labelSelector).toBe('{k8s_pod_name="api-2"}');
  });
});

describe('QueryEditor: options', () => {
  const summary = () => screen.getByTestId(selectors.query.optionsSummary);

  it('are collapsed under a summary', async () => {
    await setup({ queryType: 'metrics', groupBy: ['service_name'], limit: 10, spanSelector: ['00000000000000a1'] });
    expect(summary()).toHaveTextContent('Type: Metrics, Group by: service_name, Limit: 10, Spans: 00000000000000a1');
    expect(screen.queryByTestId(selectors.query.queryType)).not.toBeInTheDocument();
  });

  it('set the query type and run the query; Both is offered in Explore only', async () => {
    const { lastQuery, onRunQuery } = await setup({ queryType: 'profile' });
    fireEvent.click(summary());
    const types = screen.getByTestId(selectors.query.queryType);
    expect(within(types).queryByLabelText('Both')).not.toBeInTheDocument();
    fireEvent.click(within(types).getByLabelText('Table'));
    expect(lastQuery().queryType).toBe('table');
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    expect(summary()).toHaveTextContent('Type: Table');
  });

  it('offer Both in Explore', async () => {
    const { lastQuery } = await setup({ queryType: 'profile' }, { app: CoreApp.Explore });
    fireEvent.click(summary());
    fireEvent.click(within(screen.getByTestId(selectors.query.queryType)).getByLabelText('Both'));
    expect(lastQuery().queryType).toBe('both');
  });

  it('show "both" as a flame graph outside Explore', async () => {
    await setup({ queryType: 'both' });
    expect(summary()).toHaveTextContent('Type: Profile');
  });

  it('group by labels', async () => {
    const { lastQuery, onRunQuery } = await setup({ queryType: 'metrics' });
    fireEvent.click(summary());
    await pick(screen.getByTestId(selectors.query.groupBy), 'k8s.pod.name');
    expect(lastQuery().groupBy).toEqual(['k8s_pod_name']);
    expect(onRunQuery).toHaveBeenCalledTimes(1);
  });

  it('group a flame graph by process: the labels that tell processes apart come first', async () => {
    resources.labelNames = [
      'cpu_logical_number',
      'process_executable_name',
      'process_pid',
      'service_name',
      'thread_name',
    ];
    try {
      const { lastQuery, onRunQuery } = await setup({ queryType: 'profile' });
      fireEvent.click(summary());
      const groupBy = screen.getByTestId(selectors.query.groupBy);
      fireEvent.keyDown(groupBy.querySelector('input')!, { key: 'ArrowDown' });
      const options = await screen.findAllByRole('option');
      expect(options.map((o) => o.textContent)).toEqual([
        expect.stringContaining('service.name'),
        expect.stringContaining('process.executable.name'),
        expect.stringContaining('process.pid'),
        expect.stringContaining('thread.name'),
        expect.stringContaining('cpu_logical_number'),
      ]);
      fireEvent.click(options[1]);
      await settle();
      expect(lastQuery().groupBy).toEqual(['process_executable_name']);
      expect(onRunQuery).toHaveBeenCalledTimes(1);
      expect(summary()).toHaveTextContent('Type: Profile, Group by: process_executable_name');
    } finally {
      resources.labelNames = ['k8s_pod_name', 'service_name', 'thread_name'];
    }
  });

  it('show, collapse or hide kernel and native frames in flame graphs and tables', async () => {
    const { lastQuery, onRunQuery } = await setup({ queryType: 'profile', collapseFrames: ['native'] });
    expect(summary()).toHaveTextContent('Type: Profile, Native frames: collapsed');
    fireEvent.click(summary());
    const kernel = screen.getByTestId(selectors.query.kernelFrames);
    expect(within(kernel).getByLabelText('Show')).toBeChecked();
    fireEvent.click(within(kernel).getByLabelText('Hide'));
    expect(lastQuery()).toMatchObject({ hideFrames: ['kernel'], collapseFrames: ['native'] });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    fireEvent.click(within(screen.getByTestId(selectors.query.nativeFrames)).getByLabelText('Show'));
    expect(lastQuery().collapseFrames).toBeUndefined();
    expect(summary()).toHaveTextContent('Type: Profile, Kernel frames: hidden');
  });

  it('offer the frame kinds for flame graphs and tables only', async () => {
    await setup({ queryType: 'metrics', hideFrames: ['kernel'] });
    expect(summary()).not.toHaveTextContent('Kernel');
    fireEvent.click(summary());
    expect(screen.queryByTestId(selectors.query.kernelFrames)).not.toBeInTheDocument();
  });

  it('store limit and max nodes as numbers; max nodes shows the default', async () => {
    const { lastQuery } = await setup({}, { defaultMaxNodes: 4096 });
    fireEvent.click(summary());
    const maxNodes = screen.getByTestId(selectors.query.maxNodes);
    expect(maxNodes).toHaveAttribute('placeholder', '4096');
    fireEvent.change(maxNodes, { target: { value: '2000' } });
    fireEvent.blur(maxNodes);
    expect(lastQuery().maxNodes).toBe(2000);
    const limit = screen.getByTestId(selectors.query.limit);
    fireEvent.change(limit, { target: { value: '0.5' } });
    fireEvent.blur(limit);
    expect(screen.getByText('A whole number from 1 to 10000')).toBeInTheDocument();
    expect(lastQuery().limit).toBeUndefined();
  });

  it('check span ids and the trace id before storing them', async () => {
    const { lastQuery, onChange } = await setup({});
    fireEvent.click(summary());
    const spans = screen.getByTestId(selectors.query.spanSelector);
    fireEvent.change(spans, { target: { value: 'xyz, 00000000000000a1' } });
    fireEvent.blur(spans);
    expect(screen.getByText('Not a span id (16 hex digits): xyz')).toBeInTheDocument();
    expect(onChange).not.toHaveBeenCalled();
    expect(spans).toHaveValue('xyz, 00000000000000a1');
    fireEvent.change(spans, { target: { value: '00000000000000a1 00000000000000B2, $span' } });
    fireEvent.blur(spans);
    expect(lastQuery().spanSelector).toEqual(['00000000000000a1', '00000000000000B2', '$span']);

    const trace = screen.getByTestId(selectors.query.traceId);
    fireEvent.change(trace, { target: { value: 'abc' } });
    fireEvent.blur(trace);
    expect(screen.getByText('A trace id is 32 hex digits')).toBeInTheDocument();
    fireEvent.change(trace, { target: { value: '0123456789abcdef0123456789abcdef' } });
    fireEvent.keyDown(trace, { key: 'Enter' });
    expect(lastQuery().traceId).toBe('0123456789abcdef0123456789abcdef');
    expect(screen.queryByText('A trace id is 32 hex digits')).not.toBeInTheDocument();
  });
});

describe('QueryEditor: spans and traces', () => {
  const summary = () => screen.getByTestId(selectors.query.optionsSummary);
  const TRACE = '0123456789abcdef0123456789abcdef';

  it('offer Spans and Trace; spans keep the selector and limit, without group by and max nodes', async () => {
    const { lastQuery, onRunQuery } = await setup({ queryType: 'profile', labelSelector: '{service_name="cart"}' });
    fireEvent.click(summary());
    fireEvent.click(within(screen.getByTestId(selectors.query.queryType)).getByLabelText('Spans'));
    expect(lastQuery()).toMatchObject({ queryType: 'spans', labelSelector: '{service_name="cart"}' });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    expect(summary()).toHaveTextContent('Type: Spans');
    expect(screen.getByTestId(selectors.query.labelSelector)).toBeInTheDocument();
    expect(screen.getByTestId(selectors.query.limit)).toBeInTheDocument();
    expect(screen.getByTestId(selectors.query.spanSelector)).toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.groupBy)).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.maxNodes)).not.toBeInTheDocument();
  });

  it('ask a traces query for its trace id next to the profile type, instead of the selector', async () => {
    const { lastQuery, onRunQuery } = await setup({ queryType: 'traces', profileTypeId: CPU });
    expect(screen.getByTestId(selectors.query.profileTypeId)).toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.labelSelector)).not.toBeInTheDocument();
    const trace = screen.getByTestId(selectors.query.traceId);
    expect(trace).toHaveAttribute('placeholder', '32 hex digits');

    fireEvent.change(trace, { target: { value: 'not-a-trace' } });
    fireEvent.blur(trace);
    expect(screen.getByText('A trace id is 32 hex digits')).toBeInTheDocument();
    expect(onRunQuery).not.toHaveBeenCalled();

    fireEvent.change(trace, { target: { value: TRACE } });
    fireEvent.keyDown(trace, { key: 'Enter' });
    expect(lastQuery()).toMatchObject({ queryType: 'traces', traceId: TRACE });
    expect(onRunQuery).toHaveBeenCalledTimes(1);

    fireEvent.change(trace, { target: { value: '${trace}' } });
    fireEvent.blur(trace);
    expect(lastQuery().traceId).toBe('${trace}');
  });

  it('show only the query type among the options of a traces query', async () => {
    await setup({ queryType: 'traces', traceId: TRACE });
    expect(summary()).toHaveTextContent(`Type: Trace, Trace: ${TRACE}`);
    fireEvent.click(summary());
    expect(screen.getByTestId(selectors.query.queryType)).toBeInTheDocument();
    expect(screen.getAllByTestId(selectors.query.traceId)).toHaveLength(1);
    expect(screen.queryByTestId(selectors.query.limit)).not.toBeInTheDocument();
  });
});

describe('QueryEditor: diff', () => {
  const summary = () => screen.getByTestId(selectors.query.optionsSummary);
  const baseline = () => screen.getByTestId(selectors.query.baseline);

  it('turns a flame graph query into a diff against the previous period with one click, and runs it', async () => {
    const { lastQuery, onRunQuery } = await setup(
      { queryType: 'profile', profileTypeId: CPU, labelSelector: '{service_name="cart"}', spanSelector: [] },
      { app: CoreApp.Explore }
    );
    fireEvent.click(screen.getByRole('button', { name: /Compare/ }));
    await settle();
    expect(lastQuery()).toMatchObject({
      queryType: 'diff',
      profileTypeId: CPU,
      labelSelector: '{service_name="cart"}',
      left: {},
    });
    expect(lastQuery().spanSelector).toBeUndefined();
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    expect(summary()).toHaveTextContent('Type: Diff, Baseline: same labels, previous period');
    expect(baseline()).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /Compare/ })).not.toBeInTheDocument();
  });

  it('offers Compare on flame graphs only', async () => {
    await setup({ queryType: 'metrics' });
    expect(screen.queryByTestId(selectors.query.compare)).not.toBeInTheDocument();
  });

  it("edits the baseline's labels with the selector editor, and its offset", async () => {
    const { lastQuery, onRunQuery } = await setup({
      queryType: 'diff',
      profileTypeId: CPU,
      labelSelector: '{service_name="cart"}',
    });
    expect(within(baseline()).getByText('Baseline labels')).toBeInTheDocument();
    const offset = within(baseline()).getByTestId(selectors.query.baselineOffset);
    expect(offset).toHaveAttribute('placeholder', 'previous period');
    fireEvent.change(offset, { target: { value: 'yesterday' } });
    fireEvent.blur(offset);
    expect(within(baseline()).getByText('A duration such as 1h, 1d or 7d')).toBeInTheDocument();
    expect(onRunQuery).not.toHaveBeenCalled();
    fireEvent.change(offset, { target: { value: '1d' } });
    fireEvent.blur(offset);
    expect(lastQuery().left).toEqual({ offset: '1d' });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    expect(summary()).toHaveTextContent('Baseline: same labels, 1d earlier');

    // The baseline's selector, in the same editor as the query's (its own rows, code mode and completion).
    const modes = within(baseline()).getByTestId(selectors.query.labelSelectorMode);
    fireEvent.click(within(modes).getByLabelText('Code'));
    const text = within(baseline()).getByTestId(selectors.query.labelSelectorText);
    fireEvent.change(text, { target: { value: '{service_name="checkout"}' } });
    fireEvent.blur(text);
    expect(lastQuery().left).toEqual({ offset: '1d', labelSelector: '{service_name="checkout"}' });
    expect(lastQuery().labelSelector).toBe('{service_name="cart"}');
    expect(summary()).toHaveTextContent('Baseline: {service_name="checkout"}, 1d earlier');
  });

  it('takes an explicit range for the baseline, variables included', async () => {
    const { lastQuery } = await setup({ queryType: 'diff', left: { offset: '1h' } });
    fireEvent.click(within(baseline()).getByLabelText('Time range'));
    await settle();
    expect(lastQuery().left).toEqual({ from: 'now-2d', to: 'now-1d' });
    const from = within(baseline()).getByTestId(selectors.query.baselineFrom);
    fireEvent.change(from, { target: { value: 'last week' } });
    fireEvent.blur(from);
    expect(within(baseline()).getByText('Unix milliseconds, an RFC 3339 time or now-1h')).toBeInTheDocument();
    fireEvent.change(from, { target: { value: '${__from}' } });
    fireEvent.blur(from);
    const to = within(baseline()).getByTestId(selectors.query.baselineTo);
    fireEvent.change(to, { target: { value: '2025-01-01T00:00:00Z' } });
    fireEvent.blur(to);
    expect(lastQuery().left).toEqual({ from: '${__from}', to: '2025-01-01T00:00:00Z' });
    fireEvent.click(within(baseline()).getByLabelText('Offset'));
    expect(lastQuery().left).toEqual({});
  });

  it('has max nodes and the function filter among its options, without group by and span ids', async () => {
    await setup({ queryType: 'diff' });
    fireEvent.click(summary());
    expect(screen.getByTestId(selectors.query.maxNodes)).toBeInTheDocument();
    expect(screen.getByTestId(selectors.query.function)).toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.groupBy)).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.spanSelector)).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.ratio)).not.toBeInTheDocument();
  });
});

describe('QueryEditor: executables', () => {
  const summary = () => screen.getByTestId(selectors.query.optionsSummary);

  it('offers Executables: the selector, limit and span ids, without group by, max nodes or the function filter', async () => {
    const { lastQuery, onRunQuery } = await setup({ queryType: 'profile', labelSelector: '{service_name="cart"}' });
    fireEvent.click(summary());
    fireEvent.click(within(screen.getByTestId(selectors.query.queryType)).getByLabelText('Executables'));
    expect(lastQuery()).toMatchObject({ queryType: 'executables', labelSelector: '{service_name="cart"}' });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    expect(summary()).toHaveTextContent('Type: Executables');
    expect(screen.getByTestId(selectors.query.labelSelector)).toBeInTheDocument();
    expect(screen.getByTestId(selectors.query.limit)).toBeInTheDocument();
    expect(screen.getByTestId(selectors.query.spanSelector)).toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.groupBy)).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.maxNodes)).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.function)).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.mappingFile)).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.compare)).not.toBeInTheDocument();
  });

  it('shows the executable filter of a flame graph opened from a row, edits it, and drops it for an executables query', async () => {
    const ID = '3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8';
    const { lastQuery } = await setup({ queryType: 'profile', buildId: ID, mappingFile: '/usr/lib/libc.so.6' });
    expect(summary()).toHaveTextContent(`Type: Profile, Executable: /usr/lib/libc.so.6 ${ID}`);
    fireEvent.click(summary());
    const file = screen.getByTestId(selectors.query.mappingFile);
    const buildId = screen.getByTestId(selectors.query.buildId);
    expect(file).toHaveValue('/usr/lib/libc.so.6');
    expect(buildId).toHaveValue(ID);

    fireEvent.change(buildId, { target: { value: 'not a build id' } });
    fireEvent.blur(buildId);
    expect(screen.getByText('A build id is hex digits (GNU) or a Go build id')).toBeInTheDocument();
    fireEvent.change(buildId, { target: { value: '' } });
    fireEvent.blur(buildId);
    expect(lastQuery()).toMatchObject({ buildId: undefined, mappingFile: '/usr/lib/libc.so.6' });

    fireEvent.click(within(screen.getByTestId(selectors.query.queryType)).getByLabelText('Executables'));
    expect(lastQuery()).toMatchObject({ queryType: 'executables', buildId: undefined, mappingFile: undefined });
    expect(summary()).toHaveTextContent(/^Type: Executables$/);
  });
});

describe('QueryEditor: function filter and ratio', () => {
  const summary = () => screen.getByTestId(selectors.query.optionsSummary);

  it('filters by a function, self or total, and makes series ratios', async () => {
    const { lastQuery, onRunQuery } = await setup({ queryType: 'metrics', profileTypeId: CPU });
    fireEvent.click(summary());
    const values = screen.getByTestId(selectors.query.functionValue);
    expect(within(values).getByLabelText('Self')).toBeDisabled();
    const fn = screen.getByTestId(selectors.query.function);
    fireEvent.change(fn, { target: { value: 'regexp.Compile' } });
    fireEvent.blur(fn);
    expect(lastQuery().function).toBe('regexp.Compile');
    fireEvent.click(within(screen.getByTestId(selectors.query.functionValue)).getByLabelText('Self'));
    expect(lastQuery().functionValue).toBe('self');
    fireEvent.click(screen.getByLabelText('Ratio'));
    expect(lastQuery()).toMatchObject({ function: 'regexp.Compile', functionValue: 'self', ratio: true });
    expect(onRunQuery).toHaveBeenCalledTimes(3);
    expect(summary()).toHaveTextContent('Function: regexp.Compile (self), Ratio');
  });

  it('offers ratio for time series only', async () => {
    await setup({ queryType: 'table' });
    fireEvent.click(summary());
    expect(screen.getByTestId(selectors.query.function)).toBeInTheDocument();
    expect(screen.queryByLabelText('Ratio')).not.toBeInTheDocument();
  });
});

describe('QueryEditor: related links', () => {
  beforeEach(() => {
    const byUid: Record<string, Partial<DataSourceInstanceSettings>> = {
      loki: { uid: 'loki', type: 'loki', name: 'Loki' },
      tempo: { uid: 'tempo', type: 'tempo', name: 'Tempo' },
    };
    const srv: Partial<DataSourceSrv> = {
      // eslint-disable-next-line @typescript-eslint/no-deprecated -- what the datasource class calls (Grafana 11.6)
      getInstanceSettings: (ref) => byUid[String(ref)] as DataSourceInstanceSettings | undefined,
    };
    setDataSourceSrv(srv as DataSourceSrv);
  });

  const profiles = { logsDatasourceUid: 'loki', tracesDatasourceUid: 'tempo' };
  const links = () => screen.queryAllByTestId(selectors.query.relatedLink);

  it("link the query's logs and trace in Explore, in a new tab", async () => {
    await setup(
      { labelSelector: '{service_name="cart"}', traceId: '0123456789abcdef0123456789abcdef' },
      { app: CoreApp.Explore, profiles }
    );
    expect(screen.getByTestId(selectors.query.related)).toHaveTextContent('Related');
    expect(links().map((l) => l.textContent)).toEqual(['Logs for this selection', 'Open trace']);
    const href = decodeURIComponent(links()[0].getAttribute('href') ?? '');
    expect(href).toMatch(/^\/explore\?/);
    expect(href).toContain('"expr":"{service_name=\\"cart\\"}"');
    expect(links()[0]).toHaveAttribute('target', '_blank');
  });

  it('follow the query as it changes', async () => {
    await setup({ labelSelector: '{}' }, { app: CoreApp.Explore, profiles });
    expect(screen.queryByTestId(selectors.query.related)).not.toBeInTheDocument();
    const text = await switchToCode();
    fireEvent.change(text, { target: { value: '{k8s_pod_name="api-1"}' } });
    fireEvent.blur(text);
    expect(links().map((l) => l.textContent)).toEqual(['Logs for this selection']);
  });

  it('are not shown outside Explore', async () => {
    await setup({ labelSelector: '{service_name="cart"}' }, { app: CoreApp.PanelEditor, profiles });
    expect(screen.queryByTestId(selectors.query.related)).not.toBeInTheDocument();
  });

  it('are not shown without linked datasources', async () => {
    await setup({ labelSelector: '{service_name="cart"}' }, { app: CoreApp.Explore });
    expect(screen.queryByTestId(selectors.query.related)).not.toBeInTheDocument();
  });
});

describe('QueryEditor: pprof download', () => {
  it('downloads the query over the range and saves the file under its name', async () => {
    const { ds } = await setup({
      profileTypeId: CPU,
      labelSelector: '{service_name="checkout"}',
      hideFrames: ['kernel'],
    });
    const blob = new Blob(['pprof']);
    const download = jest.spyOn(ds, 'downloadPprof').mockResolvedValue({ blob, filename: 'flamehouse-x.pb.gz' });
    fireEvent.click(screen.getByTestId(selectors.query.downloadPprof));
    await settle();
    expect(download).toHaveBeenCalledWith(
      expect.objectContaining({ refId: 'A', labelSelector: '{service_name="checkout"}', hideFrames: ['kernel'] }),
      range
    );
    expect(saveFile).toHaveBeenCalledWith(blob, 'flamehouse-x.pb.gz');
  });

  it("shows the backend's message when the download fails", async () => {
    const { ds } = await setup({ profileTypeId: CPU, queryType: 'table' });
    jest.spyOn(ds, 'downloadPprof').mockRejectedValue(new Error('ClickHouse: connection refused'));
    fireEvent.click(screen.getByTestId(selectors.query.downloadPprof));
    expect(await screen.findByTestId(selectors.query.downloadPprofError)).toHaveTextContent(
      'pprof: ClickHouse: connection refused'
    );
  });

  it('is offered for flame graphs and tables only', async () => {
    await setup({ profileTypeId: CPU, queryType: 'metrics' });
    expect(screen.queryByTestId(selectors.query.downloadPprof)).not.toBeInTheDocument();
  });
});

describe('QueryEditor: open in place', () => {
  const answer: PanelData = { state: LoadingState.Done, series: [flameFrame('A')], timeRange: range };

  it('offers the "other" rows of the last answer, largest first, and opens the one picked', async () => {
    const { lastQuery, onRunQuery } = await setup({ profileTypeId: CPU }, { data: answer });
    const input = screen.getByTestId(selectors.query.focusPicker).querySelector('input')!;
    fireEvent.keyDown(input, { key: 'ArrowDown' });
    const options = await screen.findAllByRole('option');
    expect(options.map((o) => o.textContent)).toEqual([
      expect.stringContaining('other under main'),
      expect.stringContaining('other under main › handler'),
      expect.stringContaining('other under gc'),
    ]);
    expect(options[0]).toHaveTextContent('30.0% of the total');
    fireEvent.click(options[1]);
    await settle();
    expect(lastQuery().focusPath).toEqual(['main', 'handler', 'other']);
    expect(onRunQuery).toHaveBeenCalledTimes(1);
  });

  it('finds a node by the name typed in, and closes an opened node', async () => {
    const { lastQuery } = await setup({ profileTypeId: CPU, focusPath: ['gc', 'other'] }, { data: answer });
    expect(screen.getByTestId(selectors.query.focusPath)).toHaveTextContent('Opened: gc › other');
    const input = screen.getByTestId(selectors.query.focusPicker).querySelector('input')!;
    fireEvent.change(input, { target: { value: 'pars' } });
    fireEvent.click(await screen.findByText('main › handler › parse'));
    await settle();
    expect(lastQuery().focusPath).toEqual(['main', 'handler', 'parse']);
    fireEvent.click(screen.getByTestId(selectors.query.focusClear));
    await settle();
    expect(lastQuery().focusPath).toBeUndefined();
  });

  it('is not offered for tables', async () => {
    await setup({ profileTypeId: CPU, queryType: 'table' }, { data: answer });
    expect(screen.queryByTestId(selectors.query.focusPicker)).not.toBeInTheDocument();
  });
});

describe('QueryEditor: errors', () => {
  const failed: PanelData = {
    state: LoadingState.Error,
    series: [],
    timeRange: range,
    errors: [{ refId: 'A', message: 'the traces table "otel"."otel_traces" is missing' }],
  };

  it("leaves the query's own errors to Grafana, which shows them under the editor", async () => {
    // Grafana's query row (Explore, panel edit) shows data.errors of its refId: repeating them would show each twice.
    await setup({ labelSelector: '{}' }, { data: failed });
    expect(screen.queryByText(/otel_traces/)).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.query.errors)).not.toBeInTheDocument();
  });

  it('shows nothing without errors', async () => {
    await setup({ labelSelector: '{}' }, { data: { state: LoadingState.Done, series: [], timeRange: range } });
    expect(screen.queryByTestId(selectors.query.errors)).not.toBeInTheDocument();
  });

  it('says when suggestions cannot be loaded, which Grafana does not show', async () => {
    await setup({ labelSelector: '{}' }, { failing: 'labelNames', data: failed });
    const errors = await screen.findByTestId(selectors.query.errors);
    expect(errors).toHaveTextContent('Label names: labelNames failed: connection refused');
    expect(errors).not.toHaveTextContent('otel_traces');
  });
});

beforeEach(() => {
  installTemplateSrv();
});

afterEach(settle);
