import React from 'react';
import { Divider, Stack, Text } from '@grafana/ui';

import { AdditionalSettingsSection } from './config/AdditionalSettingsSection';
import { CredentialsSection } from './config/CredentialsSection';
import { LinksSection } from './config/LinksSection';
import { ProfilesSection } from './config/ProfilesSection';
import { ServerSection } from './config/ServerSection';
import { TlsSection } from './config/TlsSection';
import { EditorProps } from './config/update';

/**
 * The datasource settings page: the ClickHouse connection laid out like the
 * official ClickHouse datasource's (server, TLS, credentials, additional
 * settings), then which schema and where its tables are, and the query defaults,
 * then the traces table and the datasources profiles link to.
 */
export function ConfigEditor(props: EditorProps) {
  return (
    <Stack direction="column" gap={2}>
      <Text element="p" color="secondary">
        Flamehouse shows OpenTelemetry profiles stored in ClickHouse as flame graphs, top-function tables and time
        series. Connect it to the ClickHouse server that holds the Flamehouse tables or the OpenTelemetry Collector
        exporter&apos;s profiles table; every setting is explained in docs/grafana.md of the Flamehouse repository.
      </Text>
      <Divider />
      <ServerSection {...props} />
      <Divider />
      <TlsSection {...props} />
      <Divider />
      <CredentialsSection {...props} />
      <Divider />
      <AdditionalSettingsSection {...props} />
      <Divider />
      <ProfilesSection {...props} />
      <Divider />
      <LinksSection {...props} />
    </Stack>
  );
}
