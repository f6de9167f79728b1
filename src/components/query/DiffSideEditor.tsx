import React from 'react';
import { InlineField, InlineFieldRow, RadioButtonGroup, Stack } from '@grafana/ui';

import type { DataSource } from '../../datasource';
import { BaselineRange, baselineRange, validateOffset, validateTime } from '../../diff';
import { ResourceRange } from '../../resources';
import { selectors } from '../../selectors';
import { DiffSide } from '../../types';
import { Lookup } from './hooks';
import { LabelSelectorEditor } from './LabelSelectorEditor';
import { CommitInput } from './QueryOptions';

const RANGE_MODES = [
  { label: 'Offset', value: 'offset' as const, description: "The query's range shifted back, e.g. 1h or 7d" },
  { label: 'Time range', value: 'range' as const, description: 'An explicit range, e.g. now-2d to now-1d' },
];

interface Props {
  datasource: DataSource;
  range?: ResourceRange;
  profileTypeId?: string;
  labelNames: Lookup<string[]>;
  value?: DiffSide;
  /** Stores the baseline; run says whether to run the query too. */
  onChange: (left: DiffSide, run: boolean) => void;
}

/**
 * The baseline (left side) of a diff query: its label selector, edited by the same selector editor as the query's
 * (empty: the query's), and its range, an offset back from the query's range or an explicit range.
 */
export function DiffSideEditor({ datasource, range, profileTypeId, labelNames, value, onChange }: Props) {
  const side = value ?? {};
  const mode = baselineRange(side);
  const placeholder = side.labelSelector?.trim() ? '0 (same range)' : 'previous period';
  return (
    <div data-testid={selectors.query.baseline}>
      <Stack direction="column" gap={0.5}>
        <LabelSelectorEditor
          datasource={datasource}
          range={range}
          profileTypeId={profileTypeId}
          label="Baseline labels"
          labelWidth={17}
          tooltip="The selector of the baseline (the left side of the diff), in the same syntax; empty: the query's labels."
          value={side.labelSelector ?? ''}
          labelNames={labelNames}
          onChange={(labelSelector, run) => onChange({ ...side, labelSelector: labelSelector || undefined }, run)}
        />
        <InlineFieldRow>
          <InlineField
            label="Baseline range"
            labelWidth={17}
            tooltip="The baseline's time range: the query's range shifted back by an offset, or an explicit range. Values are scaled to the query's range length."
          >
            <RadioButtonGroup<BaselineRange>
              size="sm"
              options={RANGE_MODES}
              value={mode}
              onChange={(m) =>
                onChange(
                  m === 'offset'
                    ? { ...side, from: undefined, to: undefined }
                    : { ...side, offset: undefined, from: side.from ?? 'now-2d', to: side.to ?? 'now-1d' },
                  true
                )
              }
            />
          </InlineField>
          {mode === 'offset' ? (
            <CommitInput
              label="Offset"
              tooltip="How far back the baseline's range is: 1h, 1d, 7d; 0 for the same range. Empty: the previous period of the same length, or the same range when the baseline has its own labels."
              testId={selectors.query.baselineOffset}
              value={side.offset ?? ''}
              placeholder={placeholder}
              validate={validateOffset}
              onCommit={(offset) => onChange({ ...side, offset: offset || undefined }, true)}
            />
          ) : (
            <>
              <CommitInput
                label="From"
                tooltip="Start of the baseline: now-2d, Unix milliseconds, an RFC 3339 time, or a variable such as ${__from}."
                testId={selectors.query.baselineFrom}
                value={side.from ?? ''}
                placeholder="now-2d"
                validate={validateTime}
                onCommit={(from) => onChange({ ...side, from: from || undefined }, true)}
              />
              <CommitInput
                label="To"
                tooltip="End of the baseline: now-1d, Unix milliseconds, an RFC 3339 time, or a variable."
                testId={selectors.query.baselineTo}
                value={side.to ?? ''}
                placeholder="now-1d"
                validate={validateTime}
                onCommit={(to) => onChange({ ...side, to: to || undefined }, true)}
              />
            </>
          )}
        </InlineFieldRow>
      </Stack>
    </div>
  );
}
