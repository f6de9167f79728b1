import React, { useState } from 'react';
import { SelectableValue } from '@grafana/data';
import { Button, IconButton, Input, Select, Stack } from '@grafana/ui';

import type { DataSource } from '../../datasource';
import { labelOption, labelOptions } from '../../labelNames';
import { formatSelector, Matcher, MATCHER_OPS, MatcherOp } from '../../labelSelector';
import { ResourceRange } from '../../resources';
import { selectors } from '../../selectors';
import { Lookup, useLabelValues } from './hooks';

/** A matcher being edited: the value is undefined until one is chosen, and such a row is not in the query yet. */
export interface Row {
  name: string;
  op: MatcherOp;
  value?: string;
}

interface Props {
  datasource: DataSource;
  range?: ResourceRange;
  profileTypeId?: string;
  /** The query's matchers. */
  matchers: Matcher[];
  labelNames: Lookup<string[]>;
  onChange: (matchers: Matcher[]) => void;
}

const OP_OPTIONS: Array<SelectableValue<MatcherOp>> = MATCHER_OPS.map((op) => ({ label: op, value: op }));

/** The complete rows as matchers: those with a label and a value. */
export function completeMatchers(rows: Row[]): Matcher[] {
  return rows.flatMap((r) => (r.name && r.value !== undefined ? [{ name: r.name, op: r.op, value: r.value }] : []));
}

/**
 * The selector as rows of label, operator and value. Rows being filled in stay local; the query changes (and runs)
 * when a complete row changes, appears or goes.
 */
export function MatcherRows({ datasource, range, profileTypeId, matchers, labelNames, onChange }: Props) {
  const key = formatSelector(matchers);
  const [rows, setRows] = useState<Row[]>(matchers);
  const [synced, setSynced] = useState(key);
  if (key !== synced) {
    // The query changed elsewhere (the text editor, a link): start again from it.
    setSynced(key);
    setRows(matchers);
  }

  const update = (next: Row[]) => {
    setRows(next);
    const complete = completeMatchers(next);
    const nextKey = formatSelector(complete);
    if (nextKey !== key) {
      setSynced(nextKey);
      onChange(complete);
    }
  };
  const setRow = (i: number, row: Row) => update(rows.map((r, j) => (j === i ? row : r)));

  return (
    <Stack direction="column" gap={0.5}>
      {rows.map((row, i) => (
        <MatcherRow
          key={i}
          row={row}
          datasource={datasource}
          range={range}
          profileTypeId={profileTypeId}
          labelNames={labelNames}
          onChange={(r) => setRow(i, r)}
          onRemove={() => update(rows.filter((_, j) => j !== i))}
        />
      ))}
      <div>
        <Button
          data-testid={selectors.query.matcherAdd}
          icon="plus"
          variant="secondary"
          fill="text"
          size="sm"
          onClick={() => update([...rows, { name: '', op: '=' }])}
        >
          Label filter
        </Button>
      </div>
    </Stack>
  );
}

interface RowProps {
  row: Row;
  datasource: DataSource;
  range?: ResourceRange;
  profileTypeId?: string;
  labelNames: Lookup<string[]>;
  onChange: (row: Row) => void;
  onRemove: () => void;
}

function MatcherRow({ row, datasource, range, profileTypeId, labelNames, onChange, onRemove }: RowProps) {
  const regexp = row.op === '=~' || row.op === '!~';
  const values = useLabelValues(datasource, regexp ? undefined : row.name || undefined, range, profileTypeId);
  return (
    <div data-testid={selectors.query.matcherRow}>
      <Stack gap={0.5} alignItems="center">
        <div data-testid={selectors.query.matcherName}>
          <Select
            aria-label="Label"
            width={30}
            placeholder="Label"
            options={labelOptions(labelNames.value)}
            isLoading={labelNames.loading}
            value={row.name ? labelOption(row.name) : null}
            allowCustomValue
            onChange={(v) => onChange({ ...row, name: v?.value ?? '', value: undefined })}
          />
        </div>
        <div data-testid={selectors.query.matcherOp}>
          <Select
            aria-label="Operator"
            width={8}
            options={OP_OPTIONS}
            value={row.op}
            onChange={(v) => onChange({ ...row, op: v.value ?? '=' })}
          />
        </div>
        <div data-testid={selectors.query.matcherValue}>
          {regexp ? (
            <Input
              // Reset the uncontrolled text when the value changes elsewhere.
              key={row.value}
              aria-label="Regular expression"
              width={30}
              placeholder="prod-.*"
              defaultValue={row.value}
              onBlur={(e) => e.currentTarget.value !== row.value && onChange({ ...row, value: e.currentTarget.value })}
              onKeyDown={(e) => e.key === 'Enter' && e.currentTarget.blur()}
            />
          ) : (
            <Select
              aria-label="Value"
              width={30}
              placeholder={row.name ? 'Value' : 'Choose a label first'}
              disabled={!row.name}
              options={values.value.map((v) => ({ label: v || '(empty)', value: v }))}
              isLoading={values.loading}
              noOptionsMessage={values.error ?? 'No values in the time range'}
              value={row.value !== undefined ? { label: row.value || '(empty)', value: row.value } : null}
              allowCustomValue
              onChange={(v) => onChange({ ...row, value: v?.value ?? '' })}
            />
          )}
        </div>
        <IconButton
          name="times"
          aria-label="Remove label filter"
          data-testid={selectors.query.matcherRemove}
          onClick={onRemove}
        />
      </Stack>
    </div>
  );
}
