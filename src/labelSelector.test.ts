import { formatSelector, Matcher, parseSelector, quoteString, unescape } from './labelSelector';

const m = (name: string, op: Matcher['op'], value: string): Matcher => ({ name, op, value });

describe('parseSelector', () => {
  it.each<[string, string, Matcher[]]>([
    ['empty text', '', []],
    ['blank text', '  \n', []],
    ['empty braces', '{ }', []],
    ['one matcher', '{service_name="checkout"}', [m('service_name', '=', 'checkout')]],
    [
      'every operator',
      '{a="1", b!="2", c=~"3.*", d!~"4|5"}',
      [m('a', '=', '1'), m('b', '!=', '2'), m('c', '=~', '3.*'), m('d', '!~', '4|5')],
    ],
    ['spaces between tokens', '{ a = "1" ,b=~ "x" }', [m('a', '=', '1'), m('b', '=~', 'x')]],
    ['a trailing comma', '{a="1",}', [m('a', '=', '1')]],
    ['a quoted dotted name', '{"deployment.environment.name"="prod"}', [m('deployment.environment.name', '=', 'prod')]],
    ['escaped quote and backslash', String.raw`{a="say \"hi\" C:\\x"}`, [m('a', '=', 'say "hi" C:\\x')]],
    ['control escapes', String.raw`{a="l1\nl2\tx"}`, [m('a', '=', 'l1\nl2\tx')]],
    ['hex, octal and unicode escapes', String.raw`{a="\x41\101\u00e9\U0001F600"}`, [m('a', '=', 'AAé😀')]],
    ['UTF-8 bytes as hex escapes', String.raw`{a="\xc3\xa9"}`, [m('a', '=', 'é')]],
    ['a single-quoted value', `{a='it"s'}`, [m('a', '=', 'it"s')]],
    ['an escaped single quote', String.raw`{a='it\'s'}`, [m('a', '=', "it's")]],
    ['a raw backtick value', '{a=~`\\d+\\.x`}', [m('a', '=~', '\\d+\\.x')]],
    ['an empty value', '{a=""}', [m('a', '=', '')]],
    ['a regexp with braces', '{a=~"x{2,3}"}', [m('a', '=~', 'x{2,3}')]],
  ])('parses %s', (_, text, matchers) => {
    expect(parseSelector(text)).toEqual({ ok: true, matchers });
  });

  it.each<[string, string, number, string]>([
    ['no opening brace', 'service_name="x"', 1, 'must start with "{"'],
    ['a missing operator', '{a "x"}', 4, 'expected "=", "!=", "=~" or "!~"'],
    ['an unquoted value', '{a=x}', 4, 'expected quoted value for label "a"'],
    ['a missing comma', '{a="1" b="2"}', 8, 'expected "," or "}"'],
    ['an unterminated string', '{a="x}', 4, 'unterminated string'],
    ['text after the selector', '{a="1"} x', 9, 'after the closing "}"'],
    ['a name starting with a digit', '{1a="x"}', 2, 'expected label name'],
    ['an empty quoted name', '{""="x"}', 2, 'quoted label name must not be empty'],
    ['an unknown escape', String.raw`{a="\q"}`, 5, 'invalid escape sequence'],
    ['an escaped single quote in double quotes', String.raw`{a="\'"}`, 5, 'invalid escape sequence'],
    ['invalid UTF-8 bytes', String.raw`{a="\xff"}`, 5, 'not valid UTF-8'],
    ['a missing closing brace', '{a="1"', 7, 'expected "," or "}"'],
    ['a newline inside a string', '{a="x\ny"}', 6, 'newline in string'],
  ])('reports %s with its position', (_, text, position, message) => {
    const result = parseSelector(text);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.position).toBe(position);
      expect(result.error).toContain(message);
      expect(result.error).toMatch(new RegExp(`^position ${position}: `));
    }
  });

  it('refuses more than 64 matchers, as the backend does', () => {
    const many = Array.from({ length: 65 }, (_, i) => `l${i}="v"`).join(',');
    expect(parseSelector(`{${many}}`).ok).toBe(false);
    expect(parseSelector(`{${many.split(',').slice(0, 64).join(',')}}`).ok).toBe(true);
  });
});

describe('formatSelector', () => {
  it.each<[string, Matcher[], string]>([
    ['no matchers', [], '{}'],
    ['matchers with every operator', [m('a', '=', '1'), m('b', '!~', 'x|y')], '{a="1", b!~"x|y"}'],
    ['a dotted name, quoted', [m('k8s.pod.name', '=', 'p')], '{"k8s.pod.name"="p"}'],
    ['a name with a dash, quoted', [m('my-label', '=', 'v')], '{"my-label"="v"}'],
    ['quotes and backslashes, escaped', [m('a', '=~', 'C:\\dir "x"')], String.raw`{a=~"C:\\dir \"x\""}`],
    ['a newline and a control character', [m('a', '=', 'x\ny\u0001')], String.raw`{a="x\ny\u0001"}`],
  ])('writes %s', (_, matchers, text) => {
    expect(formatSelector(matchers)).toBe(text);
  });
});

describe('text ⇄ rows round trip', () => {
  it.each<Matcher[]>([
    [],
    [m('service_name', '=', 'checkout'), m('k8s_namespace_name', '=~', 'prod-.*')],
    [m('deployment.environment.name', '!=', 'dev')],
    [m('a', '=', 'back\\slash "quoted" \'single\' `tick`')],
    [m('"weird" name\\', '!~', '\\d+\\.\\w{2}')],
    [m('a', '=', 'tab\there\r\n, unicode é 😀 and \u007f')],
    [m('empty', '=', '')],
  ])('rows → text → rows keeps %j', (...matchers) => {
    const text = formatSelector(matchers);
    expect(parseSelector(text)).toEqual({ ok: true, matchers });
  });

  it.each(['{a="1", b!~"x|y"}', '{"k8s.pod.name"=~"api-.*", service_name="checkout"}', String.raw`{a="q\"b\\"}`])(
    'text in canonical form comes back unchanged: %s',
    (text) => {
      const parsed = parseSelector(text);
      expect(parsed.ok && formatSelector(parsed.matchers)).toBe(text);
    }
  );

  it('normalizes other spellings to the canonical form', () => {
    const parsed = parseSelector(`{ a='x' ,"b"=~\`y\\d\`, }`);
    expect(parsed.ok && formatSelector(parsed.matchers)).toBe(String.raw`{a="x", b=~"y\\d"}`);
  });
});

describe('quoteString and unescape', () => {
  it('are inverses on awkward strings', () => {
    for (const s of ['', '"', '\\', '\\"', 'a\u0000b', 'é😀', '\\u0041']) {
      expect(unescape(quoteString(s).slice(1, -1), '"')).toBe(s);
    }
  });
});
