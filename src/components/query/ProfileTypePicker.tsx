import React, { useMemo } from 'react';
import { Cascader, CascaderOption, InlineField } from '@grafana/ui';

import { selectors } from '../../selectors';
import { ProfileTypeInfo } from '../../types';
import { Lookup } from './hooks';

interface Props {
  value?: string;
  /** The datasource's default profile type, used when the query names none. */
  defaultValue?: string;
  types: Lookup<ProfileTypeInfo[]>;
  onChange: (profileTypeId: string) => void;
}

/** The profile type, picked by name then sample type (e.g. process_cpu / cpu) from the types with data. */
export function ProfileTypePicker({ value, defaultValue, types, onChange }: Props) {
  const options = useMemo(() => profileTypeOptions(types.value, value), [types.value, value]);
  const placeholder = types.loading ? 'Loading…' : defaultValue ? `Default: ${defaultValue}` : 'Choose a profile type';
  return (
    <InlineField
      label="Profile type"
      labelWidth={14}
      tooltip="Profile types with data in the time range, by name then sample type. A variable such as $type can be typed in."
    >
      <div data-testid={selectors.query.profileTypeId}>
        <Cascader
          // The Cascader reads initialValue once: mount a new one when the value or the options change.
          key={`${value}|${options.length}`}
          options={options}
          initialValue={value}
          onSelect={onChange}
          placeholder={placeholder}
          displayAllSelectedLevels
          changeOnSelect={false}
          allowCustomValue
          width={40}
        />
      </div>
    </InlineField>
  );
}

/**
 * Cascader options for profile types: one branch per name, one leaf per sample type, and a third level (units
 * and period) where a name and sample type have several ids. The current value is listed first when the range
 * has no data of it (or it is a variable), so that it still shows.
 */
export function profileTypeOptions(types: ProfileTypeInfo[], current?: string): CascaderOption[] {
  const byName = new Map<string, Map<string, ProfileTypeInfo[]>>();
  const flat: CascaderOption[] = [];
  for (const t of types) {
    const [name, sampleType] = t.id.split(':');
    if (!sampleType) {
      flat.push({ value: t.id, label: t.label });
      continue;
    }
    const samples = byName.get(name) ?? new Map<string, ProfileTypeInfo[]>();
    samples.set(sampleType, [...(samples.get(sampleType) ?? []), t]);
    byName.set(name, samples);
  }
  const options: CascaderOption[] = [...byName].map(([name, samples]) => ({
    value: `name:${name}`,
    label: name,
    items: [...samples].map(([sampleType, ids]) => sampleOption(name, sampleType, ids)),
  }));
  if (current && !types.some((t) => t.id === current)) {
    options.unshift({ value: current, label: current });
  }
  return [...options, ...flat];
}

function sampleOption(name: string, sampleType: string, ids: ProfileTypeInfo[]): CascaderOption {
  if (ids.length === 1) {
    return { value: ids[0].id, label: sampleType, title: ids[0].id };
  }
  return {
    value: `sample:${name}:${sampleType}`,
    label: sampleType,
    items: ids.map((t) => {
      const [, , unit, periodType, periodUnit] = t.id.split(':');
      return { value: t.id, label: `${unit || '-'} per ${periodType || '-'} ${periodUnit || ''}`.trim(), title: t.id };
    }),
  };
}
