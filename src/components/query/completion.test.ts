import { applyCompletion, completionContext, filterSuggestions } from './completion';

/** The context at the "|" in text. */
function at(textWithCursor: string) {
  const cursor = textWithCursor.indexOf('|');
  return completionContext(textWithCursor.replace('|', ''), cursor);
}

describe('completionContext', () => {
  it.each([
    ['{|}', { kind: 'name', prefix: '', from: 1, to: 1 }],
    ['{serv|}', { kind: 'name', prefix: 'serv', from: 1, to: 5 }],
    ['{se|rvice="x"}', { kind: 'name', prefix: 'se', from: 1, to: 8 }],
    ['{a="1", |}', { kind: 'name', prefix: '', from: 8, to: 8 }],
    ['{a="1",k8s|', { kind: 'name', prefix: 'k8s', from: 7, to: 10 }],
    ['{"deployment.env|', { kind: 'name', prefix: 'deployment.env', from: 1, to: 16 }],
    ['{a=|}', { kind: 'value', label: 'a', prefix: '', from: 3, to: 3 }],
    ['{a=~ |', { kind: 'value', label: 'a', prefix: '', from: 5, to: 5 }],
    ['{a="ch|"}', { kind: 'value', label: 'a', prefix: 'ch', from: 3, to: 7 }],
    ['{a="ch|eckout", b="x"}', { kind: 'value', label: 'a', prefix: 'ch', from: 3, to: 13 }],
    ['{a!="x\\"y|', { kind: 'value', label: 'a', prefix: 'x"y', from: 4, to: 9 }],
    ['{"k8s.pod.name"="|"}', { kind: 'value', label: 'k8s.pod.name', prefix: '', from: 16, to: 18 }],
    ["{a='it|'}", { kind: 'value', label: 'a', prefix: 'it', from: 3, to: 7 }],
  ])('finds what to complete in %s', (text, expected) => {
    expect(at(text)).toEqual(expected);
  });

  it.each(['|{}', '{}|', '{a="x"|}', '{a="x" |}', 'x|', '{a!|', '{a=x|'])('finds nothing to complete in %s', (text) => {
    expect(at(text)).toBeUndefined();
  });
});

describe('applyCompletion', () => {
  it('adds =""  after a new label name and puts the cursor between the quotes', () => {
    const ctx = at('{k8s|}')!;
    expect(applyCompletion('{k8s}', ctx, 'k8s_pod_name')).toEqual({ text: '{k8s_pod_name=""}', cursor: 15 });
  });

  it('replaces a label name before an operator, quoting names that need it', () => {
    const ctx = at('{se|rvice="x"}')!;
    expect(applyCompletion('{service="x"}', ctx, 'service_name')).toEqual({
      text: '{service_name="x"}',
      cursor: 13,
    });
    expect(applyCompletion('{service="x"}', ctx, 'service.name').text).toBe('{"service.name"="x"}');
  });

  it('replaces the whole value, quoted and escaped', () => {
    const ctx = at('{a="ch|eckout", b="x"}')!;
    expect(applyCompletion('{a="checkout", b="x"}', ctx, 'say "hi"')).toEqual({
      text: '{a="say \\"hi\\"", b="x"}',
      cursor: 15,
    });
  });
});

describe('filterSuggestions', () => {
  const names = ['service_name', 'k8s_pod_name', 'k8s_namespace_name', 'thread_name'];
  const otel = (n: string) => (n.startsWith('k8s_') ? n.replace(/_/g, '.') : undefined);

  it('lists items starting with the prefix first, then those containing it', () => {
    expect(filterSuggestions(names, 'name')).toEqual([
      'service_name',
      'k8s_pod_name',
      'k8s_namespace_name',
      'thread_name',
    ]);
    expect(filterSuggestions(names, 'th')).toEqual(['thread_name']);
    expect(filterSuggestions(['ab', 'xab', 'AB'], 'ab')).toEqual(['ab', 'AB', 'xab']);
  });

  it('matches OTel names too', () => {
    expect(filterSuggestions(names, 'k8s.pod', otel)).toEqual(['k8s_pod_name']);
  });

  it('lists at most max items', () => {
    expect(filterSuggestions(names, '', undefined, 2)).toEqual(['service_name', 'k8s_pod_name']);
  });
});
