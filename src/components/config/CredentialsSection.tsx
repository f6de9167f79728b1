import React from 'react';
import { Field, Input, SecretInput } from '@grafana/ui';

import { DEFAULTS } from '../../options';
import { selectors } from '../../selectors';
import { ConfigSection } from './ConfigSection';
import { textValue } from './inputs';
import { EditorProps, withJsonData, withSecret, withSecretReset } from './update';

/** ClickHouse user and password; the password is write-only. */
export function CredentialsSection({ options, onOptionsChange }: EditorProps) {
  return (
    <ConfigSection
      title="Credentials"
      testId={selectors.config.sections.credentials}
      description="A read-only ClickHouse user is enough; it must be allowed to set max_execution_time."
    >
      <Field label="Username" description={`Default "${DEFAULTS.username}"`}>
        <Input
          data-testid={selectors.config.username}
          value={options.jsonData.username ?? ''}
          placeholder={DEFAULTS.username}
          width={40}
          onChange={textValue((username) => onOptionsChange(withJsonData(options, { username })))}
        />
      </Field>
      <Field label="Password" description="Stored encrypted; the embedded engine needs none on 127.0.0.1">
        <SecretInput
          data-testid={selectors.config.password}
          isConfigured={!!options.secureJsonFields?.password}
          value={options.secureJsonData?.password ?? ''}
          placeholder="password"
          width={40}
          onReset={() => onOptionsChange(withSecretReset(options, 'password'))}
          onChange={textValue((password) => onOptionsChange(withSecret(options, 'password', password)))}
        />
      </Field>
    </ConfigSection>
  );
}
