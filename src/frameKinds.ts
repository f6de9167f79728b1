import { FrameKind, FrameMode, ProfileQuery } from './types';

/**
 * Frame kinds in queries: what a flame graph or table does with kernel frames and with the interpreter's native
 * frames (pkg/query/framekinds.go marks them `name [kernel]` and `name [native]`, and hides or collapses them on
 * request). A kind is shown unless the query lists it in `hideFrames` or `collapseFrames`.
 */

export const FRAME_KINDS: readonly FrameKind[] = ['kernel', 'native'];

/** What the query does with a kind's frames. */
export function frameMode(query: Pick<ProfileQuery, 'hideFrames' | 'collapseFrames'>, kind: FrameKind): FrameMode {
  if (query.hideFrames?.includes(kind)) {
    return 'hide';
  }
  return query.collapseFrames?.includes(kind) ? 'collapse' : 'show';
}

/** The change that gives a kind a mode, other kinds (and variables) kept; empty lists are dropped. */
export function withFrameMode(
  query: Pick<ProfileQuery, 'hideFrames' | 'collapseFrames'>,
  kind: FrameKind,
  mode: FrameMode
): Pick<ProfileQuery, 'hideFrames' | 'collapseFrames'> {
  const list = (current: string[] | undefined, add: boolean) => {
    const kept = (current ?? []).filter((k) => k !== kind);
    const next = add ? [...kept, kind] : kept;
    return next.length ? next : undefined;
  };
  return {
    hideFrames: list(query.hideFrames, mode === 'hide'),
    collapseFrames: list(query.collapseFrames, mode === 'collapse'),
  };
}

/** The options summary's words for the kinds not shown, e.g. "Kernel frames: hidden". */
export function frameModesSummary(query: Pick<ProfileQuery, 'hideFrames' | 'collapseFrames'>): string[] {
  const words: Record<FrameMode, string> = { show: '', collapse: 'collapsed', hide: 'hidden' };
  const names: Record<FrameKind, string> = { kernel: 'Kernel frames', native: 'Native frames' };
  return FRAME_KINDS.filter((k) => frameMode(query, k) !== 'show').map(
    (k) => `${names[k]}: ${words[frameMode(query, k)]}`
  );
}
