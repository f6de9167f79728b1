import React from 'react';
import { Button, Field, IconButton, InlineField, InlineSwitch, Input, SecretInput, Stack } from '@grafana/ui';

import { HttpHeader, secureHeaderKey } from '../../options';
import { selectors } from '../../selectors';
import { textValue } from './inputs';
import {
  EditorProps,
  addHeader,
  removeHeader,
  renameHeader,
  resetHeaderSecret,
  setHeaderSecure,
  setHeaderValue,
} from './update';
import { headerNameError } from './validation';

/**
 * HTTP headers sent with every request. A secure header's value is stored
 * encrypted (secureJsonData secureHttpHeaders.<name>) and shown as
 * "configured" once saved.
 */
export function HttpHeadersEditor({ options, onOptionsChange }: EditorProps) {
  const rows = options.jsonData.httpHeaders ?? [];
  return (
    <Field
      label="HTTP headers"
      description="Sent with every request, e.g. for a proxy in front of ClickHouse. Secure values are stored encrypted."
    >
      <Stack direction="column" gap={1}>
        {rows.map((row, i) => (
          <HeaderRow
            key={i}
            row={row}
            error={headerNameError(rows, i)}
            configured={row.secure && !!options.secureJsonFields?.[secureHeaderKey(row.name)]}
            secretValue={options.secureJsonData?.[secureHeaderKey(row.name)] ?? ''}
            onRename={(name) => onOptionsChange(renameHeader(options, i, name))}
            onValue={(value) => onOptionsChange(setHeaderValue(options, i, value))}
            onSecure={(secure) => onOptionsChange(setHeaderSecure(options, i, secure))}
            onReset={() => onOptionsChange(resetHeaderSecret(options, i))}
            onRemove={() => onOptionsChange(removeHeader(options, i))}
          />
        ))}
        <div>
          <Button
            data-testid={selectors.config.httpHeaders.add}
            variant="secondary"
            icon="plus"
            size="sm"
            onClick={() => onOptionsChange(addHeader(options))}
          >
            Add header
          </Button>
        </div>
      </Stack>
    </Field>
  );
}

interface RowProps {
  row: HttpHeader;
  error?: string;
  configured: boolean;
  secretValue: string;
  onRename: (name: string) => void;
  onValue: (value: string) => void;
  onSecure: (secure: boolean) => void;
  onReset: () => void;
  onRemove: () => void;
}

function HeaderRow({ row, error, configured, secretValue, onRename, onValue, onSecure, onReset, onRemove }: RowProps) {
  return (
    <Stack direction="row" gap={0.5} alignItems="flex-start">
      <InlineField label="Header" labelWidth={10} invalid={!!error} error={error}>
        <Input
          data-testid={selectors.config.httpHeaders.name}
          value={row.name}
          placeholder="X-Header-Name"
          width={25}
          onChange={textValue(onRename)}
        />
      </InlineField>
      <InlineField label="Value" labelWidth={8}>
        {row.secure ? (
          <SecretInput
            data-testid={selectors.config.httpHeaders.value}
            isConfigured={configured}
            value={secretValue}
            placeholder="secret value"
            width={30}
            onReset={onReset}
            onChange={textValue(onValue)}
          />
        ) : (
          <Input
            data-testid={selectors.config.httpHeaders.value}
            value={row.value}
            placeholder="value"
            width={30}
            onChange={textValue(onValue)}
          />
        )}
      </InlineField>
      <InlineField label="Secure" labelWidth={8} tooltip="Store the value encrypted; it cannot be read back">
        <InlineSwitch
          data-testid={selectors.config.httpHeaders.secure}
          value={row.secure}
          onChange={(e) => onSecure(e.currentTarget.checked)}
        />
      </InlineField>
      <IconButton
        data-testid={selectors.config.httpHeaders.remove}
        name="trash-alt"
        aria-label={`Remove header ${row.name}`}
        onClick={onRemove}
      />
    </Stack>
  );
}
