import React, { useState } from 'react';
import { InlineField, RadioButtonGroup, Stack } from '@grafana/ui';

import type { DataSource } from '../../datasource';
import { formatSelector, parseSelector } from '../../labelSelector';
import { ResourceRange } from '../../resources';
import { selectors } from '../../selectors';
import { Lookup } from './hooks';
import { MatcherRows } from './MatcherRows';
import { SelectorText } from './SelectorText';

/** How the selector is edited: rows of matchers, or text. */
export type SelectorMode = 'builder' | 'code';

const MODES = [
  { label: 'Builder', value: 'builder' as const, description: 'Edit the selector as rows of label filters' },
  { label: 'Code', value: 'code' as const, description: 'Edit the selector as text' },
];

interface Props {
  datasource: DataSource;
  range?: ResourceRange;
  profileTypeId?: string;
  /** The field's label; default "Labels". */
  label?: string;
  labelWidth?: number;
  tooltip?: string;
  value: string;
  labelNames: Lookup<string[]>;
  /** Stores a selector; run says whether to run the query too. */
  onChange: (selector: string, run: boolean) => void;
}

/**
 * The label selector, edited as rows (builder) or as text (code); both edit the same text. The builder is
 * unavailable while the text does not parse, so that a bad edit is never replaced by an empty selector.
 */
export function LabelSelectorEditor({
  datasource,
  range,
  profileTypeId,
  label = 'Labels',
  labelWidth = 14,
  tooltip = 'Label matchers, e.g. {service_name="checkout", k8s_namespace_name=~"prod-.*"}: = and != compare, =~ and !~ match RE2 regexps (anchored).',
  value,
  labelNames,
  onChange,
}: Props) {
  const parsed = parseSelector(value);
  const [mode, setMode] = useState<SelectorMode>(parsed.ok ? 'builder' : 'code');
  return (
    <InlineField label={label} labelWidth={labelWidth} grow tooltip={tooltip}>
      <div data-testid={selectors.query.labelSelector} style={{ flexGrow: 1 }}>
        <Stack gap={1} alignItems="flex-start">
          <div data-testid={selectors.query.labelSelectorMode}>
            <RadioButtonGroup
              size="sm"
              options={MODES}
              value={parsed.ok ? mode : 'code'}
              disabledOptions={parsed.ok ? [] : ['builder']}
              onChange={setMode}
            />
          </div>
          {mode === 'builder' && parsed.ok ? (
            <MatcherRows
              datasource={datasource}
              range={range}
              profileTypeId={profileTypeId}
              matchers={parsed.matchers}
              labelNames={labelNames}
              onChange={(matchers) => onChange(formatSelector(matchers), true)}
            />
          ) : (
            <SelectorText
              datasource={datasource}
              range={range}
              profileTypeId={profileTypeId}
              value={value}
              labelNames={labelNames}
              onCommit={onChange}
            />
          )}
        </Stack>
      </div>
    </InlineField>
  );
}
