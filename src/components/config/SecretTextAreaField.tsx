import React from 'react';
import { Field, SecretTextArea } from '@grafana/ui';

import { textValue } from './inputs';
import { EditorProps, SecureKey, withSecret, withSecretReset } from './update';

interface Props extends EditorProps {
  secureKey: SecureKey;
  label: string;
  description: string;
  placeholder: string;
  testId: string;
}

/** A PEM certificate or key: write-only, shown as "configured" with Reset once saved. */
export function SecretTextAreaField({
  options,
  onOptionsChange,
  secureKey,
  label,
  description,
  placeholder,
  testId,
}: Props) {
  return (
    <Field label={label} description={description}>
      <SecretTextArea
        data-testid={testId}
        isConfigured={!!options.secureJsonFields?.[secureKey]}
        value={options.secureJsonData?.[secureKey] ?? ''}
        placeholder={placeholder}
        cols={60}
        rows={5}
        onReset={() => onOptionsChange(withSecretReset(options, secureKey))}
        onChange={textValue((v) => onOptionsChange(withSecret(options, secureKey, v)))}
      />
    </Field>
  );
}
