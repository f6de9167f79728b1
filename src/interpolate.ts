import { AdHocVariableFilter, ScopedVars } from '@grafana/data';
import { getTemplateSrv } from '@grafana/runtime';

import { formatSelector, Matcher, parseSelector } from './labelSelector';
import { ProfileQuery } from './types';

/**
 * Template variables and ad hoc filters in queries. The selector is interpolated matcher by matcher, so that a
 * value is escaped for its operator: in `=~` and `!~` a multi-value variable becomes an alternation of escaped
 * values (`(?:a|b)`); in `=` and `!=` a variable with several values turns the matcher into `=~` / `!~`.
 */

/** A template variable reference: $name, ${name...} or [[name...]]. */
const VARIABLE = /\$\{[^}]+\}|\$\w+|\[\[[^\]]+\]\]/g;

interface VariableModelLike {
  multi?: boolean;
  includeAll?: boolean;
}

/** A piece of a matcher value: literal text, or the values of a variable. */
type Part = { literal: string } | { values: string[]; escape: boolean };

/** Escapes RE2 metacharacters. */
export function regexEscape(s: string): string {
  return s.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');
}

/** Whether text refers to a template variable. */
export function containsVariable(text: string | undefined): boolean {
  return !!text && new RegExp(VARIABLE.source).test(text);
}

/** A query with its variables replaced and the ad hoc filters added to its selector. */
export function interpolateQuery(
  query: ProfileQuery,
  scopedVars: ScopedVars,
  filters: AdHocVariableFilter[] = []
): ProfileQuery {
  const replace = (text: string) => getTemplateSrv().replace(text, scopedVars);
  const out: ProfileQuery = { ...query, labelSelector: interpolateSelector(query.labelSelector, scopedVars, filters) };
  if (query.profileTypeId) {
    out.profileTypeId = replace(query.profileTypeId).trim();
  }
  if (query.traceId) {
    out.traceId = replace(query.traceId).trim();
  }
  if (query.spanSelector) {
    out.spanSelector = interpolateList(query.spanSelector, scopedVars, /[\s,]+/);
  }
  if (query.groupBy) {
    out.groupBy = interpolateList(query.groupBy, scopedVars, /\s*,\s*/);
  }
  if (query.hideFrames) {
    out.hideFrames = interpolateList(query.hideFrames, scopedVars, /[\s,]+/);
  }
  if (query.collapseFrames) {
    out.collapseFrames = interpolateList(query.collapseFrames, scopedVars, /[\s,]+/);
  }
  if (query.function) {
    out.function = replace(query.function).trim();
  }
  if (query.buildId) {
    out.buildId = replace(query.buildId).trim();
  }
  if (query.mappingFile) {
    out.mappingFile = replace(query.mappingFile).trim();
  }
  if (query.left) {
    // The baseline takes the same ad hoc filters: both sides compare the same slice of the dashboard.
    const left = query.left;
    out.left = {
      ...left,
      labelSelector: left.labelSelector?.trim()
        ? interpolateSelector(left.labelSelector, scopedVars, filters)
        : undefined,
      offset: left.offset ? replace(left.offset).trim() : undefined,
      from: left.from ? replace(left.from).trim() : undefined,
      to: left.to ? replace(left.to).trim() : undefined,
    };
  }
  return out;
}

/**
 * A selector with its variables replaced and ad hoc filters appended as matchers. Text that does not parse is
 * interpolated as a whole (multi-value variables as alternations) and left for the backend to report.
 */
export function interpolateSelector(
  selector: string | undefined,
  scopedVars: ScopedVars,
  filters: AdHocVariableFilter[] = []
): string {
  const text = selector ?? '';
  const extra = adHocMatchers(filters);
  const parsed = parseSelector(text);
  if (!parsed.ok) {
    const replaced = getTemplateSrv().replace(text, scopedVars, alternationFormat);
    const reparsed = parseSelector(replaced);
    return reparsed.ok && extra.length > 0 ? formatSelector([...reparsed.matchers, ...extra]) : replaced;
  }
  const hasVariables = parsed.matchers.some((m) => containsVariable(m.name) || containsVariable(m.value));
  if (!hasVariables && extra.length === 0) {
    return text;
  }
  return formatSelector([...parsed.matchers.map((m) => interpolateMatcher(m, scopedVars)), ...extra]);
}

/** A matcher with its variables replaced, escaped for its operator. */
export function interpolateMatcher(m: Matcher, scopedVars: ScopedVars): Matcher {
  const name = getTemplateSrv().replace(m.name, scopedVars);
  if (!containsVariable(m.value)) {
    return { ...m, name };
  }
  const parts = splitVariables(m.value).map((p) => (p.variable ? expand(p.text, scopedVars) : { literal: p.text }));
  const regexp = m.op === '=~' || m.op === '!~';
  const several = parts.some((p) => 'values' in p && p.values.length !== 1);
  if (regexp) {
    return { name, op: m.op, value: parts.map((p) => ('literal' in p ? p.literal : alternation(p))).join('') };
  }
  if (!several) {
    return { name, op: m.op, value: parts.map((p) => ('literal' in p ? p.literal : p.values[0])).join('') };
  }
  const value = parts.map((p) => ('literal' in p ? regexEscape(p.literal) : alternation({ ...p, escape: true })));
  return { name, op: m.op === '=' ? '=~' : '!~', value: value.join('') };
}

/** Splits text into literal pieces and variable references. */
function splitVariables(text: string): Array<{ text: string; variable: boolean }> {
  const parts: Array<{ text: string; variable: boolean }> = [];
  let last = 0;
  for (const match of text.matchAll(VARIABLE)) {
    if (match.index > last) {
      parts.push({ text: text.slice(last, match.index), variable: false });
    }
    parts.push({ text: match[0], variable: true });
    last = match.index + match[0].length;
  }
  if (last < text.length) {
    parts.push({ text: text.slice(last), variable: false });
  }
  return parts;
}

/** The values of one variable reference; an unknown variable, or one with its own format, stays text. */
function expand(reference: string, scopedVars: ScopedVars): Part {
  let part: Part | undefined;
  const text = getTemplateSrv().replace(reference, scopedVars, (value: unknown, variable?: VariableModelLike) => {
    const values = Array.isArray(value) ? value.map(String) : [String(value ?? '')];
    part = { values, escape: values.length !== 1 || !!variable?.multi || !!variable?.includeAll };
    return values.join(',');
  });
  return part ?? { literal: text };
}

/** A variable's values in a regexp: one value as is (or escaped), several as an escaped alternation. */
function alternation(p: { values: string[]; escape: boolean }): string {
  if (!p.escape) {
    return p.values.join('|');
  }
  const escaped = p.values.map(regexEscape);
  return escaped.length === 1 ? escaped[0] : `(?:${escaped.join('|')})`;
}

/** A format function for whole-selector interpolation: several values as an escaped alternation. */
function alternationFormat(value: unknown): string {
  if (!Array.isArray(value)) {
    return String(value ?? '');
  }
  return alternation({ values: value.map(String), escape: true });
}

/**
 * Interpolates a list whose entries a multi-value variable may expand into several items (span ids, group-by
 * labels): each entry's values are joined with commas and split on `separators`; empty items and repeats go.
 */
export function interpolateList(entries: string[], scopedVars: ScopedVars, separators: RegExp): string[] {
  const csv = (value: unknown) => (Array.isArray(value) ? value.join(',') : String(value ?? ''));
  const items = entries.flatMap((e) => getTemplateSrv().replace(e, scopedVars, csv).split(separators));
  return [...new Set(items.map((i) => i.trim()).filter((i) => i !== ''))];
}

/** Ad hoc filters as matchers: `=`, `!=`, `=~`, `!~`, and the multi-value `=|` / `!=|` as regexps; others dropped. */
export function adHocMatchers(filters: AdHocVariableFilter[]): Matcher[] {
  return filters.flatMap((f): Matcher[] => {
    if (!f.key) {
      return [];
    }
    switch (f.operator) {
      case '=':
      case '!=':
      case '=~':
      case '!~':
        return [{ name: f.key, op: f.operator, value: f.value }];
      case '=|':
      case '!=|': {
        const values = (f.values?.length ? f.values : [f.value]).map(regexEscape);
        return [{ name: f.key, op: f.operator === '=|' ? '=~' : '!~', value: values.join('|') }];
      }
    }
    return [];
  });
}
