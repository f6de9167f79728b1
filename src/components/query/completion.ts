import { closingQuote, formatLabelName, quoteString, unescape } from '../../labelSelector';

/**
 * What the cursor of a selector being typed is on: a label name or a label's value. `from`..`to` is the text a
 * suggestion replaces (the token under the cursor, quotes included); `prefix` is the part typed before the cursor.
 */
export type CompletionContext =
  | { kind: 'name'; prefix: string; from: number; to: number }
  | { kind: 'value'; label: string; prefix: string; from: number; to: number };

const IDENTIFIER = /^[a-zA-Z_][a-zA-Z0-9_]*/;

/** Finds what to complete at `cursor` in a possibly incomplete selector; undefined where nothing fits. */
export function completionContext(text: string, cursor: number): CompletionContext | undefined {
  let pos = skipSpace(text, 0);
  if (pos >= cursor || text[pos] !== '{') {
    return undefined;
  }
  pos++;
  for (;;) {
    pos = skipSpace(text, pos);
    if (pos >= cursor) {
      return { kind: 'name', prefix: '', from: cursor, to: cursor + identifierLength(text, cursor) };
    }
    const name = readName(text, pos, cursor);
    if (!name || name.context) {
      return name?.context;
    }
    const value = readOpAndValue(text, name.end, cursor, name.name);
    if (!value || value.context) {
      return value?.context;
    }
    pos = skipSpace(text, value.end);
    if (pos >= cursor || text[pos] !== ',') {
      return undefined;
    }
    pos++;
  }
}

type Step = { end: number; name: string; context?: CompletionContext };

/** Reads a label name at pos; returns a name context when the cursor is on it. */
function readName(text: string, pos: number, cursor: number): Step | undefined {
  if (text[pos] === '"') {
    const close = closingQuote(text, pos);
    if (close.error !== undefined || close.at >= cursor) {
      const to = close.error !== undefined ? cursor : close.at + 1;
      return { end: to, name: '', context: { kind: 'name', prefix: partial(text, pos, cursor), from: pos, to } };
    }
    const name = unescape(text.slice(pos + 1, close.at), '"');
    return typeof name === 'string' ? { end: close.at + 1, name } : undefined;
  }
  const name = IDENTIFIER.exec(text.slice(pos))?.[0];
  if (!name) {
    return undefined;
  }
  const end = pos + name.length;
  if (end >= cursor) {
    return { end, name, context: { kind: 'name', prefix: text.slice(pos, cursor), from: pos, to: end } };
  }
  return { end, name };
}

/** Reads the operator and value after a label name; returns a value context when the cursor is on the value. */
function readOpAndValue(text: string, pos: number, cursor: number, label: string): Step | undefined {
  pos = skipSpace(text, pos);
  const op = ['=~', '!~', '!=', '='].find((o) => text.startsWith(o, pos));
  if (!op || pos + op.length > cursor) {
    return undefined;
  }
  pos = skipSpace(text, pos + op.length);
  if (pos >= cursor) {
    return { end: pos, name: label, context: { kind: 'value', label, prefix: '', from: cursor, to: cursor } };
  }
  if (!`"'\``.includes(text[pos])) {
    return undefined;
  }
  const close = closingQuote(text, pos);
  if (close.error !== undefined || close.at >= cursor) {
    const to = close.error !== undefined ? cursor : close.at + 1;
    return {
      end: to,
      name: label,
      context: { kind: 'value', label, prefix: partial(text, pos, cursor), from: pos, to },
    };
  }
  return { end: close.at + 1, name: label };
}

/** The unescaped text of a string from its opening quote at start up to the cursor. */
function partial(text: string, start: number, cursor: number): string {
  const body = text.slice(start + 1, cursor);
  if (text[start] === '`') {
    return body;
  }
  const value = unescape(body.replace(/\\$/, ''), text[start]);
  return typeof value === 'string' ? value : body;
}

function skipSpace(text: string, pos: number): number {
  while (pos < text.length && ' \t\n\r'.includes(text[pos])) {
    pos++;
  }
  return pos;
}

function identifierLength(text: string, pos: number): number {
  return IDENTIFIER.exec(text.slice(pos))?.[0].length ?? 0;
}

/**
 * Puts a chosen suggestion into the text. A label name without an operator after it gets `=""`, with the
 * cursor between the quotes so that values are suggested next.
 */
export function applyCompletion(text: string, ctx: CompletionContext, item: string): { text: string; cursor: number } {
  const rest = text.slice(ctx.to);
  let insert: string;
  let cursor: number;
  if (ctx.kind === 'name') {
    insert = formatLabelName(item);
    const hasOp = /^\s*[=!]/.test(rest);
    cursor = ctx.from + insert.length + (hasOp ? 0 : 2);
    insert += hasOp ? '' : '=""';
  } else {
    insert = quoteString(item);
    cursor = ctx.from + insert.length;
  }
  return { text: text.slice(0, ctx.from) + insert + rest, cursor };
}

/**
 * Suggestions matching a prefix, case-insensitively, on the item or on its alias (a label's OTel name): those
 * starting with it first, then those containing it.
 */
export function filterSuggestions(
  items: readonly string[],
  prefix: string,
  alias: (item: string) => string | undefined = () => undefined,
  max = 100
): string[] {
  const p = prefix.toLowerCase();
  const names = (i: string) => [i.toLowerCase(), alias(i)?.toLowerCase() ?? ''];
  const starts = new Set(items.filter((i) => names(i).some((n) => n.startsWith(p))));
  const contains = p ? items.filter((i) => !starts.has(i) && names(i).some((n) => n.includes(p))) : [];
  return [...starts, ...contains].slice(0, max);
}
