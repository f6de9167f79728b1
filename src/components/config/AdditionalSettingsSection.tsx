import React from 'react';
import { Field, Input } from '@grafana/ui';

import { DEFAULTS } from '../../options';
import { selectors } from '../../selectors';
import { ConfigSection } from './ConfigSection';
import { CustomSettingsEditor } from './CustomSettingsEditor';
import { textValue } from './inputs';
import { EditorProps, withJsonData } from './update';
import { secondsError } from './validation';

/** Default database, timeouts and custom ClickHouse settings; open when any is set. */
export function AdditionalSettingsSection(props: EditorProps) {
  const { options, onOptionsChange } = props;
  const { jsonData } = options;
  const anySet =
    !!jsonData.defaultDatabase ||
    !!jsonData.dialTimeout ||
    !!jsonData.queryTimeout ||
    !!jsonData.customSettings?.length;
  const dialError = secondsError(jsonData.dialTimeout);
  const queryError = secondsError(jsonData.queryTimeout);
  return (
    <ConfigSection
      title="Additional settings"
      testId={selectors.config.sections.additional}
      collapsible
      initiallyOpen={anySet}
      description="Optional: timeouts and ClickHouse settings."
    >
      <Field
        label="Default database"
        description="As in the ClickHouse datasource, so settings can be shared; Flamehouse reads its tables from the Profiles database below"
      >
        <Input
          data-testid={selectors.config.defaultDatabase}
          value={jsonData.defaultDatabase ?? ''}
          placeholder="default"
          width={40}
          onChange={textValue((defaultDatabase) => onOptionsChange(withJsonData(options, { defaultDatabase })))}
        />
      </Field>
      <Field
        label="Dial timeout (seconds)"
        description={`Time to connect; default ${DEFAULTS.dialTimeout}`}
        invalid={!!dialError}
        error={dialError}
      >
        <Input
          data-testid={selectors.config.dialTimeout}
          value={jsonData.dialTimeout ?? ''}
          placeholder={DEFAULTS.dialTimeout}
          width={20}
          onChange={textValue((dialTimeout) => onOptionsChange(withJsonData(options, { dialTimeout })))}
        />
      </Field>
      <Field
        label="Query timeout (seconds)"
        description={`The queries' max_execution_time; default ${DEFAULTS.queryTimeout}`}
        invalid={!!queryError}
        error={queryError}
      >
        <Input
          data-testid={selectors.config.queryTimeout}
          value={jsonData.queryTimeout ?? ''}
          placeholder={DEFAULTS.queryTimeout}
          width={20}
          onChange={textValue((queryTimeout) => onOptionsChange(withJsonData(options, { queryTimeout })))}
        />
      </Field>
      <CustomSettingsEditor {...props} />
    </ConfigSection>
  );
}
