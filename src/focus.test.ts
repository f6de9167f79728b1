import { LoadingState, PanelData, dateTime } from '@grafana/data';

import { describeNode, describePath, flameFrame as answerFrame, focusNodes, MAX_FOCUS_NODES } from './focus';
import { flameFrame } from './testing/frames';

describe('focusNodes', () => {
  it('lists the "other" rows of the answer, largest first, each with its path from the root', () => {
    expect(focusNodes(flameFrame())).toEqual([
      { path: ['main', 'other'], label: 'other', value: 30, share: 0.3 },
      { path: ['main', 'handler', 'other'], label: 'other', value: 15, share: 0.15 },
      { path: ['gc', 'other'], label: 'other', value: 10, share: 0.1 },
    ]);
  });

  it('finds nodes by a part of their name, whatever the case, and the "other" rows under them', () => {
    expect(focusNodes(flameFrame(), 'PARS')).toEqual([
      { path: ['main', 'handler', 'parse'], label: 'parse', value: 25, share: 0.25 },
    ]);
    expect(focusNodes(flameFrame(), 'handl').map((n) => n.path.join(' › '))).toEqual([
      'main › handler',
      'main › handler › other',
    ]);
    expect(focusNodes(flameFrame(), 'a').map((n) => n.path.join(' › '))).toEqual([
      'main',
      'main › handler',
      'main › other',
      'main › handler › parse',
      'gc › mark',
      'main › handler › other',
    ]);
  });

  it('has nothing without a flame graph', () => {
    expect(focusNodes(undefined)).toEqual([]);
  });

  it('lists at most MAX_FOCUS_NODES', () => {
    expect(focusNodes(flameFrame(), '').length).toBeLessThanOrEqual(MAX_FOCUS_NODES);
  });
});

describe('describing nodes', () => {
  it('names an "other" row by its parent', () => {
    expect(describeNode({ path: ['main', 'handler', 'other'], label: 'other', value: 1, share: 0 })).toBe(
      'other under main › handler'
    );
    expect(describeNode({ path: ['other'], label: 'other', value: 1, share: 0 })).toBe('other under the root');
    expect(describeNode({ path: ['main', 'parse'], label: 'parse', value: 1, share: 0 })).toBe('main › parse');
    expect(describePath(['a', 'b'])).toBe('a › b');
  });
});

describe('flameFrame', () => {
  it("picks the query's flame graph out of the panel's data", () => {
    const data: PanelData = {
      state: LoadingState.Done,
      series: [flameFrame('B'), flameFrame('A')],
      timeRange: { from: dateTime(0), to: dateTime(1), raw: { from: 'now-1h', to: 'now' } },
    };
    expect(answerFrame(data, 'A')?.refId).toBe('A');
    expect(answerFrame(data, 'C')).toBeUndefined();
    expect(answerFrame(undefined, 'A')).toBeUndefined();
  });
});
