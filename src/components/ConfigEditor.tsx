import React, { ChangeEvent } from 'react';
import { DataSourcePluginOptionsEditorProps } from '@grafana/data';
import { Field, Input, RadioButtonGroup, SecretInput, Stack } from '@grafana/ui';

import { selectors } from '../selectors';
import { FlamehouseOptions, FlamehouseSecureJsonData, ProfilesOptions } from '../types';

type Props = DataSourcePluginOptionsEditorProps<FlamehouseOptions, FlamehouseSecureJsonData>;

const protocols = [
  { label: 'Native', value: 'native' as const },
  { label: 'HTTP', value: 'http' as const },
];

/** Connection settings laid out like the official ClickHouse datasource, plus where the profile tables are. */
export function ConfigEditor({ options, onOptionsChange }: Props) {
  const { jsonData, secureJsonFields } = options;

  const setJson = (patch: Partial<FlamehouseOptions>) =>
    onOptionsChange({ ...options, jsonData: { ...jsonData, ...patch } });
  const setProfiles = (patch: Partial<ProfilesOptions>) => setJson({ profiles: { ...jsonData.profiles, ...patch } });
  const text = (apply: (v: string) => void) => (e: ChangeEvent<HTMLInputElement>) => apply(e.currentTarget.value);

  return (
    <Stack direction="column" gap={1}>
      <Field label="Server address" description="Host name or IP of the ClickHouse server">
        <Input
          data-testid={selectors.config.host}
          value={jsonData.host ?? ''}
          placeholder="localhost"
          width={40}
          onChange={text((host) => setJson({ host }))}
        />
      </Field>
      <Field label="Server port" description="9000 native, 8123 HTTP (9440 and 8443 with TLS)">
        <Input
          data-testid={selectors.config.port}
          type="number"
          value={jsonData.port ?? ''}
          width={20}
          onChange={text((port) => setJson({ port: port === '' ? undefined : Number(port) }))}
        />
      </Field>
      <Field label="Protocol">
        <RadioButtonGroup
          data-testid={selectors.config.protocol}
          options={protocols}
          value={jsonData.protocol ?? 'native'}
          onChange={(protocol) => setJson({ protocol })}
        />
      </Field>
      <Field label="Username">
        <Input
          data-testid={selectors.config.username}
          value={jsonData.username ?? ''}
          placeholder="default"
          width={40}
          onChange={text((username) => setJson({ username }))}
        />
      </Field>
      <Field label="Password">
        <SecretInput
          data-testid={selectors.config.password}
          isConfigured={!!secureJsonFields?.password}
          value={options.secureJsonData?.password ?? ''}
          width={40}
          onReset={() =>
            onOptionsChange({
              ...options,
              secureJsonFields: { ...secureJsonFields, password: false },
              secureJsonData: { ...options.secureJsonData, password: '' },
            })
          }
          onChange={text((password) => onOptionsChange({ ...options, secureJsonData: { password } }))}
        />
      </Field>
      <Field label="Profiles database" description="Database of the Flamehouse tables">
        <Input
          data-testid={selectors.config.database}
          value={jsonData.profiles?.database ?? ''}
          placeholder="otel"
          width={40}
          onChange={text((database) => setProfiles({ database }))}
        />
      </Field>
      <Field label="Table prefix" description="Prefix of the Flamehouse table names">
        <Input
          data-testid={selectors.config.tablePrefix}
          value={jsonData.profiles?.tablePrefix ?? ''}
          placeholder="otel_"
          width={40}
          onChange={text((tablePrefix) => setProfiles({ tablePrefix }))}
        />
      </Field>
    </Stack>
  );
}
