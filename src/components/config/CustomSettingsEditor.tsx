import React from 'react';
import { Button, Field, IconButton, InlineField, Input, Stack } from '@grafana/ui';

import { selectors } from '../../selectors';
import { textValue } from './inputs';
import { EditorProps, addCustomSetting, removeCustomSetting, updateCustomSetting } from './update';
import { settingNameError } from './validation';

/** ClickHouse settings sent with every query, as setting/value rows. */
export function CustomSettingsEditor({ options, onOptionsChange }: EditorProps) {
  const rows = options.jsonData.customSettings ?? [];
  return (
    <Field label="Custom settings" description="ClickHouse settings sent with every query, e.g. max_threads = 4">
      <Stack direction="column" gap={1}>
        {rows.map((row, i) => {
          const error = settingNameError(row.setting);
          return (
            <Stack key={i} direction="row" gap={0.5} alignItems="flex-start">
              <InlineField label="Setting" labelWidth={10} invalid={!!error} error={error}>
                <Input
                  data-testid={selectors.config.customSettings.setting}
                  value={row.setting}
                  placeholder="max_threads"
                  width={30}
                  onChange={textValue((setting) => onOptionsChange(updateCustomSetting(options, i, { setting })))}
                />
              </InlineField>
              <InlineField label="Value" labelWidth={8}>
                <Input
                  data-testid={selectors.config.customSettings.value}
                  value={row.value}
                  placeholder="4"
                  width={30}
                  onChange={textValue((value) => onOptionsChange(updateCustomSetting(options, i, { value })))}
                />
              </InlineField>
              <IconButton
                data-testid={selectors.config.customSettings.remove}
                name="trash-alt"
                aria-label={`Remove setting ${row.setting}`}
                onClick={() => onOptionsChange(removeCustomSetting(options, i))}
              />
            </Stack>
          );
        })}
        <div>
          <Button
            data-testid={selectors.config.customSettings.add}
            variant="secondary"
            icon="plus"
            size="sm"
            onClick={() => onOptionsChange(addCustomSetting(options))}
          >
            Add setting
          </Button>
        </div>
      </Stack>
    </Field>
  );
}
