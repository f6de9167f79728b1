import React, { ChangeEvent } from 'react';
import { QueryEditorProps } from '@grafana/data';
import { InlineField, Input, Stack } from '@grafana/ui';

import { DataSource } from '../datasource';
import { selectors } from '../selectors';
import { FlamehouseOptions, ProfileQuery } from '../types';

type Props = QueryEditorProps<DataSource, ProfileQuery, FlamehouseOptions>;

/** Profile type and label selector, edited as text. */
export function QueryEditor({ query, onChange, onRunQuery }: Props) {
  const set = (patch: Partial<ProfileQuery>) => onChange({ ...query, ...patch });
  return (
    <Stack gap={0}>
      <InlineField label="Profile type" labelWidth={16}>
        <Input
          data-testid={selectors.query.profileTypeId}
          value={query.profileTypeId ?? ''}
          placeholder="process_cpu:cpu:nanoseconds:cpu:nanoseconds"
          width={50}
          onChange={(e: ChangeEvent<HTMLInputElement>) => set({ profileTypeId: e.currentTarget.value })}
          onBlur={onRunQuery}
        />
      </InlineField>
      <InlineField label="Labels" labelWidth={10} grow>
        <Input
          data-testid={selectors.query.labelSelector}
          value={query.labelSelector ?? ''}
          placeholder='{service_name="checkout"}'
          onChange={(e: ChangeEvent<HTMLInputElement>) => set({ labelSelector: e.currentTarget.value })}
          onBlur={onRunQuery}
        />
      </InlineField>
    </Stack>
  );
}
