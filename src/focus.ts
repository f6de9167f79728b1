import { DataFrame, Field, PanelData } from '@grafana/data';

/** The label of the rows truncation folds a node's smaller children into (pkg/query/flame). */
export const OTHER = 'other';

/** A flame graph node the editor offers to open in place. */
export interface FocusNode {
  /** Labels from the root's children down to the node; an "other" row's ends in "other". */
  path: string[];
  label: string;
  value: number;
  /** Of the root's total, 0 to 1. */
  share: number;
}

/** How many nodes the picker lists. */
export const MAX_FOCUS_NODES = 50;

/** The flame graph frame of a query in a panel's data: the "response" frame with its refId, if any. */
export function flameFrame(data: PanelData | undefined, refId: string): DataFrame | undefined {
  return data?.series.find((f) => f.name === 'response' && (f.refId === refId || f.refId === undefined));
}

/**
 * The nodes of a flame graph answer a user may open in place: its "other" rows (what truncation folded away), or,
 * when `search` is set, the nodes whose label contains it (e.g. a name from the panel's "Copy function name") and the
 * "other" rows under such a node, largest first, at most MAX_FOCUS_NODES. Grafana's flame graph panel offers no way for a datasource to act on a
 * click (its context menu is its own: Focus block, Copy function name, Sandwich view, no data links), so the editor
 * reads the last answer instead.
 */
export function focusNodes(frame: DataFrame | undefined, search = ''): FocusNode[] {
  const rows = flameRows(frame);
  if (rows.length === 0) {
    return [];
  }
  const total = rows[0].value || 1;
  const needle = search.trim().toLowerCase();
  const out: FocusNode[] = [];
  const path: string[] = [];
  for (const row of rows.slice(1)) {
    path.length = row.level - 1;
    path.push(row.label);
    const other = row.label === OTHER;
    const named = other ? path[path.length - 2] : row.label;
    const matches = needle ? (named ?? '').toLowerCase().includes(needle) : other;
    if (matches) {
      out.push({ path: [...path], label: row.label, value: row.value, share: row.value / total });
    }
  }
  out.sort((a, b) => b.value - a.value || a.path.join('\u0000').localeCompare(b.path.join('\u0000')));
  return out.slice(0, MAX_FOCUS_NODES);
}

/** A node as the picker shows it: "other under main › handler" or "main › handler › parse". */
export function describeNode(node: FocusNode): string {
  const parents = node.path.slice(0, -1);
  if (node.label === OTHER) {
    return parents.length ? `other under ${parents.join(' › ')}` : 'other under the root';
  }
  return node.path.join(' › ');
}

/** A focus path as the editor summarises it. */
export function describePath(path: string[]): string {
  return path.join(' › ');
}

interface FlameRow {
  level: number;
  value: number;
  label: string;
}

/** The rows of a nested-set flame graph frame: level, value and label (an enum's text, or a string). */
function flameRows(frame: DataFrame | undefined): FlameRow[] {
  const level = fieldNamed(frame, 'level');
  const value = fieldNamed(frame, 'value');
  const label = fieldNamed(frame, 'label');
  if (!frame || !level || !value || !label) {
    return [];
  }
  const texts = label.config?.type?.enum?.text;
  const out: FlameRow[] = [];
  for (let i = 0; i < frame.length; i++) {
    const raw: unknown = label.values[i];
    const text = typeof raw === 'number' && texts ? texts[raw] : raw;
    out.push({ level: Number(level.values[i]), value: Number(value.values[i]), label: String(text ?? '') });
  }
  return out;
}

function fieldNamed(frame: DataFrame | undefined, name: string): Field | undefined {
  return frame?.fields.find((f) => f.name === name);
}
