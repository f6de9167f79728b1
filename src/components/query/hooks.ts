import { useEffect, useState } from 'react';

import type { Lookups } from '../../lookups';
import { Bounds, lookupBounds, ResourceRange } from '../../resources';
import { ProfileTypeInfo } from '../../types';

/** A lookup as components see it: the latest answer (kept while a newer one loads), loading, and an error. */
export interface Lookup<T> {
  value: T;
  loading: boolean;
  error?: string;
}

/** The answer to one lookup, by the key of its arguments. */
interface Settled<T> {
  key: string;
  value?: T;
  error?: string;
}

const NO_STRINGS: string[] = [];
const NO_TYPES: ProfileTypeInfo[] = [];

/** The profile types with data in the range. */
export function useProfileTypes(datasource: Lookups, range?: ResourceRange): Lookup<ProfileTypeInfo[]> {
  const { from, to } = lookupBounds(range) ?? {};
  const key = `${from}|${to}`;
  const [settled, setSettled] = useState<Settled<ProfileTypeInfo[]>>();
  useEffect(() => track(key, datasource.getProfileTypes(bounds(from, to)), setSettled), [datasource, key, from, to]);
  return current(settled, key, NO_TYPES);
}

/** The selector label names with data in the range, of a profile type if given. */
export function useLabelNames(datasource: Lookups, range?: ResourceRange, profileTypeId?: string): Lookup<string[]> {
  const { from, to } = lookupBounds(range) ?? {};
  const key = `${from}|${to}|${profileTypeId}`;
  const [settled, setSettled] = useState<Settled<string[]>>();
  useEffect(
    () => track(key, datasource.getLabelNames(bounds(from, to), profileTypeId), setSettled),
    [datasource, key, from, to, profileTypeId]
  );
  return current(settled, key, NO_STRINGS);
}

/** The values of a label (none without a label) in the range, of a profile type if given. */
export function useLabelValues(
  datasource: Lookups,
  label: string | undefined,
  range?: ResourceRange,
  profileTypeId?: string
): Lookup<string[]> {
  const { from, to } = lookupBounds(range) ?? {};
  const key = label ? `${label}|${from}|${to}|${profileTypeId}` : undefined;
  const [settled, setSettled] = useState<Settled<string[]>>();
  useEffect(() => {
    if (key === undefined || !label) {
      return undefined;
    }
    return track(key, datasource.getLabelValues(label, bounds(from, to), profileTypeId), setSettled);
  }, [datasource, key, label, from, to, profileTypeId]);
  return key === undefined ? { value: NO_STRINGS, loading: false } : current(settled, key, NO_STRINGS);
}

function bounds(from?: number, to?: number): Bounds | undefined {
  return from !== undefined && to !== undefined ? { from, to } : undefined;
}

/** Settles a lookup's promise under its key unless the effect was cleaned up first; returns the cleanup. */
function track<T>(key: string, promise: Promise<T>, settle: (s: Settled<T>) => void): () => void {
  let live = true;
  promise.then(
    (value) => live && settle({ key, value }),
    (err: unknown) => live && settle({ key, error: errorMessage(err) })
  );
  return () => {
    live = false;
  };
}

function current<T>(settled: Settled<T> | undefined, key: string, empty: T): Lookup<T> {
  if (settled?.key !== key) {
    return { value: settled?.value ?? empty, loading: true };
  }
  return { value: settled.value ?? empty, loading: false, error: settled.error };
}

/** The message of an error from a request: backendSrv's `{data: {message}}`, an Error, or anything else. */
export function errorMessage(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const data: unknown = 'data' in err ? err.data : undefined;
    if (typeof data === 'object' && data !== null && 'message' in data && typeof data.message === 'string') {
      return data.message;
    }
    if ('message' in err && typeof err.message === 'string') {
      return err.message;
    }
    if ('statusText' in err && typeof err.statusText === 'string' && err.statusText) {
      return err.statusText;
    }
  }
  return String(err);
}
