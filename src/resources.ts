import { DateTime } from '@grafana/data';

/** A time range for resource lookups: Grafana's TimeRange, or start and end in Unix milliseconds. */
export interface ResourceRange {
  from: DateTime | number;
  to: DateTime | number;
}

/** Start and end of a lookup, in Unix milliseconds. */
export interface Bounds {
  from: number;
  to: number;
}

const MINUTE = 60_000;

/**
 * The bounds of a lookup: the range widened to whole minutes, so that a relative range ("last hour") asks the
 * same question, and hits the cache, for a minute. Undefined without a range: the backend then uses the last 24h.
 */
export function lookupBounds(range?: ResourceRange): Bounds | undefined {
  if (!range) {
    return undefined;
  }
  const from = Math.floor(range.from.valueOf() / MINUTE) * MINUTE;
  const to = Math.ceil(range.to.valueOf() / MINUTE) * MINUTE;
  return Number.isFinite(from) && Number.isFinite(to) && to > from ? { from, to } : undefined;
}

const PROFILE_TYPE_ID = /^[^:$\s]+:[^:$\s]+:[^:$\s]*:[^:$\s]*:[^:$\s]*$/;

/** Whether a string is a profile type id, name:sampleType:sampleUnit:periodType:periodUnit, without variables. */
export function isProfileTypeId(id: string | undefined): id is string {
  return !!id && PROFILE_TYPE_ID.test(id);
}

/** Query parameters of a lookup; an unusable profile type id (empty, a variable) is left out. */
export function lookupParams(
  range: ResourceRange | undefined,
  profileTypeId?: string,
  extra: Record<string, string> = {}
): Record<string, string | number> {
  const params: Record<string, string | number> = { ...extra };
  const bounds = lookupBounds(range);
  if (bounds) {
    params.from = bounds.from;
    params.to = bounds.to;
  }
  if (isProfileTypeId(profileTypeId)) {
    params.profileTypeId = profileTypeId;
  }
  return params;
}

/**
 * A small cache of lookups by path and parameters, so that many matcher rows asking for the same values make
 * one request. Failed lookups are forgotten; the oldest entry goes when the cache is full.
 */
export class LookupCache {
  private readonly entries = new Map<string, Promise<unknown>>();

  constructor(private readonly size = 100) {}

  /** The cached answer for path and params, or load()'s. */
  get<T>(path: string, params: Record<string, string | number>, load: () => Promise<T>): Promise<T> {
    const key = path + '?' + new URLSearchParams(sortedEntries(params)).toString();
    const hit = this.entries.get(key);
    if (hit) {
      return hit as Promise<T>;
    }
    const promise = load();
    this.entries.set(key, promise);
    promise.catch(() => this.entries.delete(key));
    const oldest = this.entries.keys().next();
    if (this.entries.size > this.size && !oldest.done) {
      this.entries.delete(oldest.value);
    }
    return promise;
  }
}

function sortedEntries(params: Record<string, string | number>): string[][] {
  return Object.keys(params)
    .sort()
    .map((k) => [k, String(params[k])]);
}
