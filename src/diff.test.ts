import { baselineSummary, compareQuery, validateOffset, validateTime } from './diff';

describe('diff baseline', () => {
  it.each([
    ['', true],
    ['0', true],
    ['90s', true],
    ['1h30m', true],
    ['7d', true],
    ['2w', true],
    ['1y', true],
    ['$offset', true],
    ['1d12h', false],
    ['yesterday', false],
    ['-1h', false],
  ])('reads offset %p as valid: %p', (text, valid) => {
    expect(validateOffset(text) === undefined).toBe(valid);
  });

  it.each([
    ['now', true],
    ['now-2d', true],
    ['now+1h', true],
    ['1700000000000', true],
    ['2025-01-01T00:00:00Z', true],
    ['${__from}', true],
    ['now-1d/d', false],
    ['last week', false],
  ])('reads time %p as valid: %p', (text, valid) => {
    expect(validateTime(text) === undefined).toBe(valid);
  });

  it('summarizes the baseline as the backend reads it', () => {
    expect(baselineSummary(undefined)).toBe('same labels, previous period');
    expect(baselineSummary({ offset: '1d' })).toBe('same labels, 1d earlier');
    expect(baselineSummary({ labelSelector: '{pod="a"}' })).toBe('{pod="a"}, same range');
    expect(baselineSummary({ from: 'now-2d', to: 'now-1d' })).toBe('same labels, now-2d to now-1d');
  });

  it('compares a flame graph query with its previous period, keeping its selection and options', () => {
    expect(
      compareQuery({
        refId: 'A',
        queryType: 'profile',
        profileTypeId: 'p',
        labelSelector: '{a="b"}',
        maxNodes: 100,
        groupBy: ['pod'],
        spanSelector: ['00000000000000a1'],
      })
    ).toEqual({
      refId: 'A',
      queryType: 'diff',
      profileTypeId: 'p',
      labelSelector: '{a="b"}',
      maxNodes: 100,
      left: {},
      groupBy: undefined,
      spanSelector: undefined,
      traceId: undefined,
    });
  });
});
