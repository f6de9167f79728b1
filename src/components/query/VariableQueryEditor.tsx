import React from 'react';
import { QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField, Input, RadioButtonGroup, Select, Stack } from '@grafana/ui';

import { labelOption, labelOptions } from '../../labelNames';
import type { LookupDataSource } from '../../lookups';
import { selectors } from '../../selectors';
import { FlamehouseOptions, normalizeVariableQuery, ProfileQuery, VariableQuery, VariableQueryType } from '../../types';
import { useLabelNames, useProfileTypes } from './hooks';

type Props = QueryEditorProps<LookupDataSource, ProfileQuery, FlamehouseOptions, VariableQuery>;

const TYPES: Array<SelectableValue<VariableQueryType>> = [
  { label: 'Services', value: 'services' },
  { label: 'Label names', value: 'labelNames' },
  { label: 'Label values', value: 'labelValues' },
  { label: 'Profile types', value: 'profileTypes' },
];

/** A readable summary of a variable query, e.g. "label values of k8s_pod_name (process_cpu:…)". */
export function describeVariableQuery(q: VariableQuery): string {
  const of = (q.profileTypeId ? ` (${q.profileTypeId})` : '') + (q.labelSelector ? ` where ${q.labelSelector}` : '');
  switch (q.type) {
    case 'profileTypes':
      return 'profile types';
    case 'labelNames':
      return `label names${of}`;
    case 'labelValues':
      return `label values of ${q.label || '?'}${of}`;
  }
  return `services${of}`;
}

/** The option of a value, or the value itself when it is not listed (a variable, no data in the range). */
function selectedOption(options: Array<SelectableValue<string>>, value?: string): SelectableValue<string> | null {
  return value ? (options.find((o) => o.value === value) ?? { label: value, value }) : null;
}

/**
 * The editor of a template variable query: what to list (services, label names, a label's values, profile
 * types), the label, and optionally a profile type to restrict it to.
 */
export function VariableQueryEditor({ datasource, query, onChange, range }: Props) {
  const q = normalizeVariableQuery(query);
  const types = useProfileTypes(datasource, range);
  const labelNames = useLabelNames(datasource, range, q.profileTypeId);
  const change = (patch: Partial<VariableQuery>) => {
    const next = { ...q, ...patch };
    onChange({ ...next, query: describeVariableQuery(next) });
  };
  const profileTypeOptions = types.value.map((t) => ({ label: t.label, value: t.id, description: t.id }));
  return (
    <Stack direction="column" gap={0.5}>
      <InlineField label="Query type" labelWidth={20}>
        <div data-testid={selectors.variable.type}>
          <RadioButtonGroup options={TYPES} value={q.type} onChange={(type) => change({ type })} />
        </div>
      </InlineField>
      {q.type === 'labelValues' && (
        <InlineField label="Label" labelWidth={20} tooltip="The label whose values the variable lists">
          <div data-testid={selectors.variable.label}>
            <Select
              aria-label="Label"
              width={40}
              options={labelOptions(labelNames.value)}
              isLoading={labelNames.loading}
              value={q.label ? labelOption(q.label) : null}
              allowCustomValue
              onChange={(v) => change({ label: v?.value })}
            />
          </div>
        </InlineField>
      )}
      {q.type !== 'profileTypes' && (
        <InlineField label="Profile type" labelWidth={20} tooltip="Optional: only data of this profile type">
          <div data-testid={selectors.variable.profileType}>
            <Select
              aria-label="Profile type"
              width={40}
              placeholder="Any"
              options={profileTypeOptions}
              isLoading={types.loading}
              value={selectedOption(profileTypeOptions, q.profileTypeId)}
              allowCustomValue
              isClearable
              onChange={(v) => change({ profileTypeId: v?.value || undefined })}
            />
          </div>
        </InlineField>
      )}
      {q.type !== 'profileTypes' && (
        <InlineField
          label="Label selector"
          labelWidth={20}
          tooltip='Optional: only series this selector selects, e.g. {service_name=~"$service"}, so that variables chain'
        >
          <Input
            data-testid={selectors.variable.labelSelector}
            aria-label="Label selector"
            width={60}
            placeholder="{}"
            defaultValue={q.labelSelector ?? ''}
            onBlur={(e) => change({ labelSelector: e.currentTarget.value.trim() || undefined })}
          />
        </InlineField>
      )}
    </Stack>
  );
}
