import React from 'react';
import { QueryEditorProps } from '@grafana/data';
import { Stack } from '@grafana/ui';

import { DataSource } from '../datasource';
import { FlamehouseOptions, ProfileQuery } from '../types';
import { useLabelNames, useProfileTypes } from './query/hooks';
import { LabelSelectorEditor } from './query/LabelSelectorEditor';
import { ProfileTypePicker } from './query/ProfileTypePicker';
import { QueryErrors } from './query/QueryErrors';
import { QueryOptions } from './query/QueryOptions';

type Props = QueryEditorProps<DataSource, ProfileQuery, FlamehouseOptions>;

/**
 * The query editor of Explore and panels, shaped like Pyroscope's: profile type and label selector, then the
 * options collapsed under a summary, then the query's errors. Picks run the query at once; the selector text runs
 * on blur or Shift+Enter.
 */
export function QueryEditor({ datasource, query, onChange, onRunQuery, range, app, data }: Props) {
  const profileTypeId = query.profileTypeId || datasource.defaultProfileType;
  const profileTypes = useProfileTypes(datasource, range);
  const labelNames = useLabelNames(datasource, range, profileTypeId);
  const change = (patch: Partial<ProfileQuery>, run = true) => {
    onChange({ ...query, ...patch });
    if (run) {
      onRunQuery();
    }
  };
  const lookupErrors = [
    profileTypes.error && `Profile types: ${profileTypes.error}`,
    labelNames.error && `Label names: ${labelNames.error}`,
  ].filter((e): e is string => !!e);

  return (
    <Stack direction="column" gap={0.5}>
      <Stack gap={1} wrap="wrap" alignItems="flex-start">
        <ProfileTypePicker
          value={query.profileTypeId}
          defaultValue={datasource.defaultProfileType}
          types={profileTypes}
          onChange={(id) => change({ profileTypeId: id })}
        />
        <LabelSelectorEditor
          datasource={datasource}
          range={range}
          profileTypeId={profileTypeId}
          value={query.labelSelector ?? ''}
          labelNames={labelNames}
          onChange={(labelSelector, run) => change({ labelSelector }, run)}
        />
      </Stack>
      <QueryOptions
        query={query}
        app={app}
        labelNames={labelNames}
        defaultMaxNodes={datasource.defaultMaxNodes}
        onChange={(patch) => change(patch)}
      />
      <QueryErrors data={data} refId={query.refId} lookupErrors={lookupErrors} />
    </Stack>
  );
}
