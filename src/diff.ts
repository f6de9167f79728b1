import { containsVariable } from './interpolate';
import { DiffSide, ProfileQuery } from './types';

/**
 * Diff queries: the baseline's range and its summary, and the query the editor's "Compare" button makes of a flame
 * graph query.
 */

/** How the baseline's range is chosen. */
export type BaselineRange = 'offset' | 'range';

/** A duration the backend reads: 0, Go's (90s, 1h30m) or days, weeks or years (2d, 1w, 1y). */
const DURATION = /^(0|(\d+(ms|s|m|h))+|\d+[dwy])$/;

/** Why an offset is invalid, or undefined; variables are accepted as they are. */
export function validateOffset(text: string): string | undefined {
  const t = text.trim();
  return t === '' || DURATION.test(t) || containsVariable(t) ? undefined : 'A duration such as 1h, 1d or 7d';
}

/** Why a time of the baseline's range is invalid, or undefined. */
export function validateTime(text: string): string | undefined {
  const t = text.trim();
  const relative = /^now([+-]((\d+(ms|s|m|h))+|\d+[dwy]))?$/;
  if (t === '' || containsVariable(t) || /^\d+$/.test(t) || relative.test(t)) {
    return undefined;
  }
  return Number.isNaN(Date.parse(t)) ? 'Unix milliseconds, an RFC 3339 time or now-1h' : undefined;
}

/** The baseline's range mode: an explicit range when from or to is set. */
export function baselineRange(side: DiffSide | undefined): BaselineRange {
  return side?.from || side?.to ? 'range' : 'offset';
}

/** A short description of the baseline, for the options' summary. */
export function baselineSummary(side: DiffSide | undefined): string {
  const what = side?.labelSelector?.trim() ? side.labelSelector.trim() : 'same labels';
  if (baselineRange(side) === 'range') {
    return `${what}, ${side?.from ?? '?'} to ${side?.to ?? '?'}`;
  }
  if (side?.offset) {
    return `${what}, ${side.offset} earlier`;
  }
  return side?.labelSelector?.trim() ? `${what}, same range` : `${what}, previous period`;
}

/**
 * The diff of a flame graph query against its previous period: same profile type, labels and filters, the baseline
 * left to its defaults (the previous period of the same length), which the editor then lets the user change.
 */
export function compareQuery(query: ProfileQuery): ProfileQuery {
  return {
    ...query,
    queryType: 'diff',
    left: query.left ?? {},
    groupBy: undefined,
    spanSelector: undefined,
    traceId: undefined,
  };
}
