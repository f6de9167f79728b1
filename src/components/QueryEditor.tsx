import React from 'react';
import { CoreApp, QueryEditorProps } from '@grafana/data';
import { Button, Stack } from '@grafana/ui';

import { DataSource } from '../datasource';
import { compareQuery } from '../diff';
import { saveFile } from '../download';
import { flameFrame } from '../focus';
import { selectors } from '../selectors';
import { FlamehouseOptions, ProfileQuery } from '../types';
import { DiffSideEditor } from './query/DiffSideEditor';
import { FocusPicker } from './query/FocusPicker';
import { useLabelNames, useProfileTypes } from './query/hooks';
import { LabelSelectorEditor } from './query/LabelSelectorEditor';
import { ProfileTypePicker } from './query/ProfileTypePicker';
import { QueryErrors } from './query/QueryErrors';
import { PprofButton } from './query/PprofButton';
import { CommitInput, effectiveQueryType, QueryOptions, validateTraceId } from './query/QueryOptions';
import { RelatedLinks } from './query/RelatedLinks';

type Props = QueryEditorProps<DataSource, ProfileQuery, FlamehouseOptions>;

/**
 * The query editor of Explore and panels, shaped like Pyroscope's: profile type and label selector (a traces query:
 * profile type and trace id; a flame graph also a "Compare" button that makes it a diff; a diff query its
 * baseline's selector and range below), then the options collapsed under a summary, failed suggestions (Grafana shows the
 * query's own errors under the editor), and in Explore a row of links to the query's logs, metrics and trace. Flame
 * graphs and tables have a "pprof" button that downloads the answer; flame graphs a picker that opens a node of the
 * last answer in place ("other" rows first). Picks run the query at once; the selector text runs on blur or
 * Shift+Enter.
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
  const type = effectiveQueryType(query, app);
  const traces = type === 'traces';
  const related = app === CoreApp.Explore && range ? datasource.relatedLinks(query, range) : [];

  return (
    <Stack direction="column" gap={0.5}>
      <Stack gap={1} wrap="wrap" alignItems="flex-start">
        <ProfileTypePicker
          value={query.profileTypeId}
          defaultValue={datasource.defaultProfileType}
          types={profileTypes}
          onChange={(id) => change({ profileTypeId: id })}
        />
        {traces ? (
          <CommitInput
            label="Trace ID"
            tooltip="The trace to show: 32 hex digits, or a variable. Spans with samples of the profile type link to their flame graph."
            testId={selectors.query.traceId}
            width={40}
            value={query.traceId ?? ''}
            placeholder="32 hex digits"
            validate={validateTraceId}
            onCommit={(t) => change({ traceId: t || undefined })}
          />
        ) : (
          <LabelSelectorEditor
            datasource={datasource}
            range={range}
            profileTypeId={profileTypeId}
            value={query.labelSelector ?? ''}
            labelNames={labelNames}
            onChange={(labelSelector, run) => change({ labelSelector }, run)}
          />
        )}
        {(type === 'profile' || type === 'both' || type === 'table') && (
          <PprofButton
            range={range}
            download={async (r) => {
              const file = await datasource.downloadPprof(query, r);
              saveFile(file.blob, file.filename);
            }}
          />
        )}
        {(type === 'profile' || type === 'both') && (
          <Button
            data-testid={selectors.query.compare}
            size="sm"
            variant="secondary"
            fill="outline"
            icon="exchange-alt"
            tooltip="Diff this flame graph against a baseline: the previous period of the same length, or an offset, range or selection you choose"
            onClick={() => {
              onChange(compareQuery(query));
              onRunQuery();
            }}
          >
            Compare
          </Button>
        )}
      </Stack>
      {(type === 'profile' || type === 'both') && (
        <FocusPicker
          frame={flameFrame(data, query.refId)}
          focusPath={query.focusPath}
          onChange={(focusPath) => change({ focusPath })}
        />
      )}
      {type === 'diff' && (
        <DiffSideEditor
          datasource={datasource}
          range={range}
          profileTypeId={profileTypeId}
          labelNames={labelNames}
          value={query.left}
          onChange={(left, run) => change({ left }, run)}
        />
      )}
      <QueryOptions
        query={query}
        app={app}
        labelNames={labelNames}
        defaultMaxNodes={datasource.defaultMaxNodes}
        onChange={(patch) => change(patch)}
      />
      <QueryErrors lookupErrors={lookupErrors} />
      <RelatedLinks links={related} />
    </Stack>
  );
}
