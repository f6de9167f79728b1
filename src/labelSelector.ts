/**
 * Label selectors: `{service_name="checkout", k8s_namespace_name=~"prod-.*"}`.
 *
 * The grammar is the backend's (pkg/query/selector): "{", matchers separated by commas (a trailing comma is
 * allowed), "}". A label name is an identifier or a double-quoted string (`"deployment.environment.name"`); a
 * value is a double- or single-quoted string with Go/PromQL escapes, or a raw backtick string. "" and "{}" mean
 * no matchers. Regexps are checked by the backend (RE2), not here.
 */

/** A matcher operator. */
export type MatcherOp = '=' | '!=' | '=~' | '!~';

/** The operators, in the order the editor offers them. */
export const MATCHER_OPS: readonly MatcherOp[] = ['=', '!=', '=~', '!~'];

/** One label matcher. */
export interface Matcher {
  name: string;
  op: MatcherOp;
  value: string;
}

/** The result of {@link parseSelector}: matchers, or an error with its 1-based position. */
export type ParseResult = { ok: true; matchers: Matcher[] } | { ok: false; error: string; position: number };

/** The most matchers the backend accepts in one selector. */
export const MAX_MATCHERS = 64;

const IDENTIFIER = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

class SelectorSyntaxError extends Error {
  constructor(
    readonly position: number,
    message: string
  ) {
    super(message);
  }
}

/** Whether a label name can be written without quotes. */
export function isIdentifier(name: string): boolean {
  return IDENTIFIER.test(name);
}

/** Quotes a string with double quotes, escaping `\`, `"` and control characters. */
export function quoteString(s: string): string {
  let out = '"';
  for (const ch of s) {
    out += escapeChar(ch);
  }
  return out + '"';
}

function escapeChar(ch: string): string {
  switch (ch) {
    case '\\':
      return '\\\\';
    case '"':
      return '\\"';
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
  }
  const code = ch.codePointAt(0) ?? 0;
  if (code < 0x20 || code === 0x7f) {
    return '\\u' + code.toString(16).padStart(4, '0');
  }
  return ch;
}

/** A label name as written in a selector: bare when it is an identifier, quoted otherwise. */
export function formatLabelName(name: string): string {
  return isIdentifier(name) ? name : quoteString(name);
}

/** One matcher in selector syntax, e.g. `service_name="checkout"`. */
export function formatMatcher(m: Matcher): string {
  return formatLabelName(m.name) + m.op + quoteString(m.value);
}

/** Matchers as a selector; no matchers give `{}`. `parseSelector(formatSelector(ms))` gives `ms` back. */
export function formatSelector(matchers: readonly Matcher[]): string {
  return '{' + matchers.map(formatMatcher).join(', ') + '}';
}

/** Parses a selector. Never throws: syntax errors come back with their position. */
export function parseSelector(text: string): ParseResult {
  try {
    return { ok: true, matchers: new Parser(text).parse() };
  } catch (e) {
    if (e instanceof SelectorSyntaxError) {
      return { ok: false, error: `position ${e.position + 1}: ${e.message}`, position: e.position + 1 };
    }
    throw e;
  }
}

/** Reads a selector left to right; pos is the offset of the next unread character. */
class Parser {
  private pos = 0;

  constructor(private readonly input: string) {}

  parse(): Matcher[] {
    this.skipSpace();
    if (this.atEnd()) {
      return [];
    }
    if (!this.consume('{')) {
      this.fail(this.pos, `must start with "{"`);
    }
    const matchers = this.parseMatchers();
    this.skipSpace();
    if (!this.atEnd()) {
      this.fail(this.pos, `unexpected ${this.describeNext()} after the closing "}"`);
    }
    return matchers;
  }

  private parseMatchers(): Matcher[] {
    const matchers: Matcher[] = [];
    for (;;) {
      this.skipSpace();
      if (this.consume('}')) {
        return matchers;
      }
      if (matchers.length === MAX_MATCHERS) {
        this.fail(this.pos, `more than the limit of ${MAX_MATCHERS} matchers`);
      }
      const m = this.parseMatcher();
      matchers.push(m);
      this.skipSpace();
      if (this.consume('}')) {
        return matchers;
      }
      if (!this.consume(',')) {
        this.fail(this.pos, `expected "," or "}" after ${formatMatcher(m)}, found ${this.describeNext()}`);
      }
    }
  }

  private parseMatcher(): Matcher {
    const name = this.parseLabelName();
    this.skipSpace();
    const op = this.parseOp();
    if (!op) {
      this.fail(this.pos, `expected "=", "!=", "=~" or "!~" after label name ${quoteString(name)}`);
    }
    this.skipSpace();
    if (!isQuote(this.peek())) {
      this.fail(this.pos, `expected quoted value for label ${quoteString(name)}, found ${this.describeNext()}`);
    }
    return { name, op, value: this.parseString() };
  }

  private parseLabelName(): string {
    const start = this.pos;
    if (this.peek() === '"') {
      const name = this.parseString();
      if (name === '') {
        this.fail(start, 'quoted label name must not be empty');
      }
      return name;
    }
    const name = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(this.input.slice(start))?.[0];
    if (!name) {
      this.fail(start, `expected label name or "}", found ${this.describeNext()}`);
    }
    this.pos += name.length;
    return name;
  }

  private parseOp(): MatcherOp | undefined {
    for (const op of ['=~', '!~', '!=', '='] as const) {
      if (this.input.startsWith(op, this.pos)) {
        this.pos += op.length;
        return op;
      }
    }
    return undefined;
  }

  /** Reads a string in any quote style from its opening quote and returns its contents. */
  private parseString(): string {
    const start = this.pos;
    const quote = this.input[start];
    const end = closingQuote(this.input, start);
    if (end.error !== undefined) {
      this.fail(end.at, end.error);
    }
    this.pos = end.at + 1;
    const body = this.input.slice(start + 1, end.at);
    if (quote === '`') {
      return body;
    }
    const result = unescape(body, quote);
    if (typeof result !== 'string') {
      this.fail(start + 1 + result.at, result.error);
    }
    return result;
  }

  private skipSpace() {
    while (!this.atEnd() && ' \t\n\r'.includes(this.input[this.pos])) {
      this.pos++;
    }
  }

  private consume(c: string): boolean {
    if (this.peek() !== c) {
      return false;
    }
    this.pos++;
    return true;
  }

  private peek(): string {
    return this.input[this.pos] ?? '';
  }

  private atEnd(): boolean {
    return this.pos >= this.input.length;
  }

  private describeNext(): string {
    return this.atEnd() ? 'end of input' : quoteString(String.fromCodePoint(this.input.codePointAt(this.pos) ?? 0));
  }

  private fail(pos: number, message: string): never {
    throw new SelectorSyntaxError(pos, message);
  }
}

function isQuote(c: string): boolean {
  return c === '"' || c === "'" || c === '`';
}

/**
 * Finds the quote closing the string opened at start. Backtick strings are raw; the others skip escaped
 * characters and may not contain a newline.
 */
export function closingQuote(input: string, start: number): { at: number; error?: string } {
  const quote = input[start];
  for (let i = start + 1; i < input.length; i++) {
    const c = input[i];
    if (c === quote) {
      return { at: i };
    } else if (quote === '`') {
      continue;
    } else if (c === '\\') {
      i++;
    } else if (c === '\n') {
      return { at: i, error: `newline in string starting at position ${start + 1}` };
    }
  }
  return { at: start, error: `unterminated string starting at position ${start + 1}` };
}

const SIMPLE_ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92 };

/**
 * Decodes the body of a double- or single-quoted string with Go/PromQL escapes: \n and friends, \\, the enclosing
 * quote, \xNN and octal \NNN (bytes), \uNNNN and \UNNNNNNNN. Returns the error and its offset in body otherwise.
 */
export function unescape(body: string, quote: string): string | { error: string; at: number } {
  if (!body.includes('\\')) {
    return body;
  }
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < body.length;) {
    if (body[i] !== '\\') {
      const ch = String.fromCodePoint(body.codePointAt(i) ?? 0);
      bytes.push(...encoder.encode(ch));
      i += ch.length;
      continue;
    }
    const decoded = decodeEscape(body, i, quote);
    if (!decoded) {
      return { error: `invalid escape sequence ${quoteString(body.slice(i, i + 2))}`, at: i };
    }
    bytes.push(...(decoded.byte !== undefined ? [decoded.byte] : encoder.encode(decoded.text)));
    i = decoded.next;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes));
  } catch {
    return { error: 'string is not valid UTF-8', at: 0 };
  }
}

type Escape = { byte?: number; text: string; next: number };

/** Decodes the escape sequence at body[i] (a backslash), or returns undefined when it is invalid. */
function decodeEscape(body: string, i: number, quote: string): Escape | undefined {
  const c = body[i + 1] ?? '';
  if (c in SIMPLE_ESCAPES) {
    return { byte: SIMPLE_ESCAPES[c], text: '', next: i + 2 };
  }
  if (c === quote) {
    return { byte: c.charCodeAt(0), text: '', next: i + 2 };
  }
  const hex = (n: number) => (new RegExp(`^[0-9a-fA-F]{${n}}$`).test(body.slice(i + 2, i + 2 + n)) ? n : 0);
  if (c === 'x' && hex(2)) {
    return { byte: parseInt(body.slice(i + 2, i + 4), 16), text: '', next: i + 4 };
  }
  if ((c === 'u' && hex(4)) || (c === 'U' && hex(8))) {
    const n = c === 'u' ? 4 : 8;
    const code = parseInt(body.slice(i + 2, i + 2 + n), 16);
    if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return undefined;
    }
    return { text: String.fromCodePoint(code), next: i + 2 + n };
  }
  if (/^[0-7]{3}$/.test(body.slice(i + 1, i + 4))) {
    const code = parseInt(body.slice(i + 1, i + 4), 8);
    return code > 255 ? undefined : { byte: code, text: '', next: i + 4 };
  }
  return undefined;
}
