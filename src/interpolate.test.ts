import { AdHocVariableFilter } from '@grafana/data';

import { adHocMatchers, interpolateQuery, interpolateSelector, regexEscape } from './interpolate';
import { installTemplateSrv } from './testing/templateSrv';

beforeEach(() => {
  installTemplateSrv({
    svc: { value: 'checkout' },
    re: { value: 'prod-.*' },
    envs: { value: ['prod', 'staging'], multi: true },
    dotted: { value: ['a.b', 'c|d'], multi: true },
    oneOfMany: { value: ['api.v1'], multi: true },
    pods: { value: ['api-1', 'api-2'], multi: true },
    quote: { value: 'say "hi"' },
    spans: { value: ['00000000000000a1', '00000000000000b2'], multi: true },
    spanText: { value: '00000000000000c3, 00000000000000d4' },
    labels: { value: ['service_name', 'k8s_pod_name'], multi: true },
    label: { value: 'thread_name' },
    trace: { value: '0123456789abcdef0123456789abcdef' },
    type: { value: 'memory:alloc_space:bytes:space:bytes' },
    hidden: { value: ['kernel', 'native'], multi: true },
    collapsed: { value: 'kernel' },
  });
});

describe('interpolateSelector', () => {
  it.each([
    ['a single value', '{service_name="$svc"}', '{service_name="checkout"}'],
    ['${name} and [[name]] spellings', '{a="${svc}", b="[[svc]]"}', '{a="checkout", b="checkout"}'],
    ['a single value in a regexp, unescaped', '{ns=~"$re"}', '{ns=~"prod-.*"}'],
    ['a multi-value variable in a regexp', '{env=~"$envs"}', '{env=~"(?:prod|staging)"}'],
    ['regexp metacharacters in values', '{x=~"$dotted"}', String.raw`{x=~"(?:a\\.b|c\\|d)"}`],
    ['one value of a multi-value variable, escaped', '{x=~"$oneOfMany"}', String.raw`{x=~"api\\.v1"}`],
    ['a multi-value variable in =, as =~', '{env="$envs"}', '{env=~"(?:prod|staging)"}'],
    ['a multi-value variable in !=, as !~', '{env!="$envs"}', '{env!~"(?:prod|staging)"}'],
    ['literal text around values, escaped', '{pod="ns.$pods"}', String.raw`{pod=~"ns\\.(?:api-1|api-2)"}`],
    ['a value with quotes, escaped in the text', '{msg="$quote"}', String.raw`{msg="say \"hi\""}`],
    ['a variable in a quoted label name', '{"$label"="x"}', '{thread_name="x"}'],
    ['an unknown variable, left as is', '{a="$nope"}', '{a="$nope"}'],
    ['a variable with its own format', '{a=~"${envs:csv}"}', '{a=~"prod,staging"}'],
  ])('replaces %s', (_, selector, expected) => {
    expect(interpolateSelector(selector, {})).toBe(expected);
  });

  it('prefers scoped variables (repeated panels, links)', () => {
    expect(interpolateSelector('{service_name="$svc"}', { svc: { text: 'cart', value: 'cart' } })).toBe(
      '{service_name="cart"}'
    );
  });

  it('returns text without variables or filters unchanged, spacing included', () => {
    expect(interpolateSelector(`{ a = 'x' }`, {})).toBe(`{ a = 'x' }`);
    expect(interpolateSelector(undefined, {})).toBe('');
  });

  it('interpolates text that only parses after replacement as a whole', () => {
    installTemplateSrv({ m: { value: 'service_name="checkout"' }, envs: { value: ['a.b', 'c'], multi: true } });
    expect(interpolateSelector('{$m}', {})).toBe('{service_name="checkout"}');
    expect(interpolateSelector('{$m}', {}, [{ key: 'pod', operator: '=', value: 'p1' }])).toBe(
      '{service_name="checkout", pod="p1"}'
    );
    expect(interpolateSelector('{env=~$envs}', {})).toBe(String.raw`{env=~(?:a\.b|c)}`);
  });
});

describe('ad hoc filters', () => {
  const filters: AdHocVariableFilter[] = [
    { key: 'k8s_namespace_name', operator: '=', value: 'prod' },
    { key: 'thread_name', operator: '!=', value: 'gc' },
    { key: 'pod', operator: '=~', value: 'api-.*' },
    { key: 'deployment.environment.name', operator: '!~', value: 'dev|test' },
  ];

  it('become matchers with their operators; dotted keys are quoted', () => {
    expect(interpolateSelector('{service_name="checkout"}', {}, filters)).toBe(
      '{service_name="checkout", k8s_namespace_name="prod", thread_name!="gc", pod=~"api-.*", "deployment.environment.name"!~"dev|test"}'
    );
  });

  it('apply to an empty selector', () => {
    expect(interpolateSelector('{}', {}, filters.slice(0, 1))).toBe('{k8s_namespace_name="prod"}');
    expect(interpolateSelector('', {}, filters.slice(0, 1))).toBe('{k8s_namespace_name="prod"}');
  });

  it('combine with interpolated variables', () => {
    expect(interpolateSelector('{env="$envs"}', {}, filters.slice(1, 2))).toBe(
      '{env=~"(?:prod|staging)", thread_name!="gc"}'
    );
  });

  it('with several values ("one of") become escaped alternations; other operators are dropped', () => {
    expect(
      adHocMatchers([
        { key: 'pod', operator: '=|', value: '', values: ['a.1', 'b'] },
        { key: 'pod', operator: '!=|', value: '', values: ['c'] },
        { key: 'cpu', operator: '>', value: '3' },
        { key: '', operator: '=', value: 'x' },
      ])
    ).toEqual([
      { name: 'pod', op: '=~', value: 'a\\.1|b' },
      { name: 'pod', op: '!~', value: 'c' },
    ]);
  });
});

describe('interpolateQuery', () => {
  it('expands multi-value span variables and comma- or space-separated text into several ids', () => {
    const q = interpolateQuery({ refId: 'A', spanSelector: ['$spans', '$spanText', ' 00000000000000a1 '] }, {});
    expect(q.spanSelector).toEqual(['00000000000000a1', '00000000000000b2', '00000000000000c3', '00000000000000d4']);
  });

  it('expands a multi-value group-by variable into labels, without repeats', () => {
    const q = interpolateQuery({ refId: 'A', groupBy: ['$labels', 'service_name', '$label'] }, {});
    expect(q.groupBy).toEqual(['service_name', 'k8s_pod_name', 'thread_name']);
  });

  it('expands frame kinds from variables; an unknown variable stays for the backend to report', () => {
    const q = interpolateQuery({ refId: 'A', hideFrames: ['$hidden'], collapseFrames: ['$collapsed', '$none'] }, {});
    expect(q.hideFrames).toEqual(['kernel', 'native']);
    expect(q.collapseFrames).toEqual(['kernel', '$none']);
    expect(interpolateQuery({ refId: 'A', collapseFrames: ['${collapsed}'] }, {}).collapseFrames).toEqual(['kernel']);
  });

  it('replaces the trace id and the profile type', () => {
    const q = interpolateQuery({ refId: 'A', traceId: '$trace', profileTypeId: '$type' }, {});
    expect(q.traceId).toBe('0123456789abcdef0123456789abcdef');
    expect(q.profileTypeId).toBe('memory:alloc_space:bytes:space:bytes');
  });

  it("interpolates a diff's baseline: its selector with the ad hoc filters, offset and range", () => {
    const filters: AdHocVariableFilter[] = [{ key: 'k8s_namespace_name', operator: '=', value: 'shop' }];
    const q = interpolateQuery(
      {
        refId: 'A',
        queryType: 'diff',
        labelSelector: '{service_name="$svc"}',
        left: { labelSelector: '{env=~"$envs"}', offset: '${offset}', from: '', to: undefined },
      },
      { offset: { text: '1d', value: '1d' } },
      filters
    );
    expect(q.labelSelector).toBe('{service_name="checkout", k8s_namespace_name="shop"}');
    expect(q.left).toEqual({ labelSelector: '{env=~"(?:prod|staging)", k8s_namespace_name="shop"}', offset: '1d' });
    const range = interpolateQuery(
      { refId: 'A', left: { from: '${__from}', to: '$to' } },
      {
        __from: { text: '1700000000000', value: '1700000000000' },
        to: { text: 'now-1d', value: 'now-1d' },
      }
    );
    expect(JSON.parse(JSON.stringify(range.left))).toEqual({ from: '1700000000000', to: 'now-1d' });
  });

  it("leaves a baseline without a selector to the query's, filters included", () => {
    const q = interpolateQuery({ refId: 'A', left: { offset: '1h' } }, {}, [{ key: 'a', operator: '=', value: 'b' }]);
    expect(JSON.parse(JSON.stringify(q.left))).toEqual({ offset: '1h' });
  });

  it('replaces variables in the function filter', () => {
    installTemplateSrv({ fn: { value: 'regexp.Compile' } });
    expect(interpolateQuery({ refId: 'A', function: ' $fn ' }, {}).function).toBe('regexp.Compile');
  });

  it('replaces variables in the executable filter', () => {
    installTemplateSrv({ lib: { value: '/usr/lib/libc.so.6' }, id: { value: 'ab12' } });
    expect(interpolateQuery({ refId: 'A', mappingFile: '$lib', buildId: ' ${id} ' }, {})).toMatchObject({
      mappingFile: '/usr/lib/libc.so.6',
      buildId: 'ab12',
    });
  });

  it('adds no keys the query does not have', () => {
    const q = interpolateQuery({ refId: 'A', labelSelector: '{}' }, {});
    expect(q).toEqual({ refId: 'A', labelSelector: '{}' });
  });
});

describe('regexEscape', () => {
  it('escapes every RE2 metacharacter', () => {
    expect(regexEscape('a.b*c+d?e(f)g|h[i]j{k}l^m$n\\o')).toBe(String.raw`a\.b\*c\+d\?e\(f\)g\|h\[i\]j\{k\}l\^m\$n\\o`);
  });
});
