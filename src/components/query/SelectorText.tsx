import React, { KeyboardEvent, useLayoutEffect, useRef, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Input, useStyles2 } from '@grafana/ui';

import type { DataSource } from '../../datasource';
import { containsVariable } from '../../interpolate';
import { identityFirst, otelName } from '../../labelNames';
import { parseSelector } from '../../labelSelector';
import { ResourceRange } from '../../resources';
import { selectors } from '../../selectors';
import { applyCompletion, CompletionContext, completionContext, filterSuggestions } from './completion';
import { Lookup, useLabelValues } from './hooks';

interface Props {
  datasource: DataSource;
  range?: ResourceRange;
  profileTypeId?: string;
  /** The query's selector. */
  value: string;
  labelNames: Lookup<string[]>;
  /** Stores the text; run is false when it does not parse (and has no variable that could make it parse). */
  onCommit: (text: string, run: boolean) => void;
}

/**
 * The selector as text, with suggestions of label names and values at the cursor. The text is stored on blur and
 * run on blur, Enter or Shift+Enter; text that does not parse is kept and shown with its error.
 */
export function SelectorText({ datasource, range, profileTypeId, value, labelNames, onCommit }: Props) {
  const styles = useStyles2(getStyles);
  const inputRef = useRef<HTMLInputElement>(null);
  const pendingCursor = useRef<number | undefined>(undefined);
  const [text, setText] = useState(value);
  const [synced, setSynced] = useState(value);
  const [cursor, setCursor] = useState(value.length);
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  if (value !== synced) {
    // The query changed elsewhere (the builder, a variable editor): show it.
    setSynced(value);
    setText(value);
  }

  const ctx = open ? completionContext(text, cursor) : undefined;
  const values = useLabelValues(datasource, ctx?.kind === 'value' ? ctx.label : undefined, range, profileTypeId);
  const items = suggestions(ctx, labelNames.value, values.value);
  const error = text === value ? errorOf(value) : undefined;

  useLayoutEffect(() => {
    if (pendingCursor.current !== undefined && inputRef.current) {
      inputRef.current.setSelectionRange(pendingCursor.current, pendingCursor.current);
      pendingCursor.current = undefined;
    }
  });

  const commit = (run: boolean) => {
    const parses = parseSelector(text).ok || containsVariable(text);
    if (text !== value || run) {
      onCommit(text, parses);
    }
  };
  const accept = (item: string) => {
    if (!ctx) {
      return;
    }
    const next = applyCompletion(text, ctx, item);
    pendingCursor.current = next.cursor;
    setText(next.text);
    setCursor(next.cursor);
    setActive(0);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    const listed = items.length > 0;
    if (listed && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
      e.preventDefault();
      setActive((a) => (a + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length);
    } else if (listed && !e.shiftKey && (e.key === 'Enter' || e.key === 'Tab')) {
      e.preventDefault();
      accept(items[Math.min(active, items.length - 1)]);
    } else if (e.key === 'Escape' && listed) {
      e.stopPropagation(); // close the suggestions, not the panel editor
      setOpen(false);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      setOpen(false);
      commit(true);
    }
  };
  const track = (el: HTMLInputElement) => setCursor(el.selectionStart ?? el.value.length);

  return (
    <div className={styles.wrapper}>
      <Input
        ref={inputRef}
        data-testid={selectors.query.labelSelectorText}
        value={text}
        invalid={!!error}
        placeholder='{service_name="checkout", k8s_namespace_name=~"prod-.*"}'
        aria-label="Label selector"
        spellCheck={false}
        autoComplete="off"
        onChange={(e) => {
          setText(e.currentTarget.value);
          track(e.currentTarget);
          setOpen(true);
          setActive(0);
        }}
        onKeyDown={onKeyDown}
        onKeyUp={(e) => !NAVIGATION_KEYS.includes(e.key) && track(e.currentTarget)}
        onClick={(e) => {
          track(e.currentTarget);
          setOpen(true);
        }}
        onFocus={() => setOpen(true)}
        onBlur={() => {
          setOpen(false);
          commit(false);
        }}
      />
      {items.length > 0 && ctx && (
        <ul className={styles.list} role="listbox" data-testid={selectors.query.suggestions}>
          {items.map((item, i) => (
            <li
              key={item}
              role="option"
              aria-selected={i === active}
              className={i === active ? styles.active : styles.item}
              onMouseDown={(e) => {
                e.preventDefault(); // keep the focus in the input
                accept(item);
              }}
              title={ctx.kind === 'name' ? otelName(item) : undefined}
            >
              {suggestionLabel(ctx, item)}
            </li>
          ))}
        </ul>
      )}
      {error && (
        <div className={styles.error} role="alert" data-testid={selectors.query.labelSelectorError}>
          {error}
        </div>
      )}
    </div>
  );
}

/** Keys that move in the suggestions rather than in the text. */
const NAVIGATION_KEYS = ['ArrowUp', 'ArrowDown', 'Enter', 'Tab', 'Escape'];

function suggestions(ctx: CompletionContext | undefined, names: string[], values: string[]): string[] {
  if (!ctx) {
    return [];
  }
  const items =
    ctx.kind === 'name'
      ? filterSuggestions(identityFirst(names), ctx.prefix, otelName)
      : filterSuggestions(values, ctx.prefix);
  // Nothing to suggest when the only match is what is typed already.
  return items.length === 1 && items[0] === ctx.prefix ? [] : items;
}

function suggestionLabel(ctx: CompletionContext, item: string): React.ReactNode {
  const otel = ctx.kind === 'name' ? otelName(item) : undefined;
  return otel ? (
    <>
      {otel} <small>{item}</small>
    </>
  ) : (
    item || '(empty)'
  );
}

/** The syntax error of a selector, noting when variables may still fix it. */
function errorOf(text: string): string | undefined {
  const parsed = parseSelector(text);
  if (parsed.ok) {
    return undefined;
  }
  const note = containsVariable(text) ? ' (the query runs: variables are replaced first)' : '';
  return `Invalid selector: ${parsed.error}${note}`;
}

const getStyles = (theme: GrafanaTheme2) => ({
  wrapper: css({ position: 'relative', flexGrow: 1, minWidth: 300 }),
  list: css({
    position: 'absolute',
    zIndex: theme.zIndex.dropdown,
    top: '100%',
    left: 0,
    maxHeight: 300,
    minWidth: 240,
    overflowY: 'auto',
    listStyle: 'none',
    margin: 0,
    padding: theme.spacing(0.5, 0),
    background: theme.colors.background.elevated,
    border: `1px solid ${theme.colors.border.weak}`,
    boxShadow: theme.shadows.z3,
  }),
  item: css({ padding: theme.spacing(0.5, 1), cursor: 'pointer', whiteSpace: 'nowrap' }),
  active: css({
    padding: theme.spacing(0.5, 1),
    cursor: 'pointer',
    whiteSpace: 'nowrap',
    background: theme.colors.action.hover,
  }),
  error: css({ color: theme.colors.error.text, fontSize: theme.typography.bodySmall.fontSize, marginTop: 2 }),
});
