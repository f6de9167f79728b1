import React from 'react';
import { Field, Input, RadioButtonGroup, Switch } from '@grafana/ui';

import { DEFAULTS, Protocol, defaultPort } from '../../options';
import { selectors } from '../../selectors';
import { ConfigSection } from './ConfigSection';
import { HttpHeadersEditor } from './HttpHeadersEditor';
import { EditorProps, withConnectionMode, withJsonData } from './update';
import { numberOrUndefined, textValue } from './inputs';
import { portError } from './validation';

const protocols: Array<{ label: string; value: Protocol; description: string }> = [
  { label: 'Native', value: 'native', description: 'ClickHouse native TCP protocol' },
  { label: 'HTTP', value: 'http', description: "ClickHouse's HTTP interface (the embedded Flamehouse engine)" },
];

/** Server address, port, protocol, TLS on or off; the HTTP path and headers for protocol http. */
export function ServerSection({ options, onOptionsChange }: EditorProps) {
  const { jsonData } = options;
  const protocol = jsonData.protocol ?? DEFAULTS.protocol;
  const port = defaultPort(protocol, jsonData.secure);
  return (
    <ConfigSection
      title="Server"
      testId={selectors.config.sections.server}
      description="The ClickHouse server that holds the profiles (Flamehouse tables or the Collector exporter's table). The embedded engine of flamehouse run serves HTTP on 127.0.0.1:8123 (user default)."
    >
      <Field label="Server address" description="Host name or IP address of the ClickHouse server" required>
        <Input
          data-testid={selectors.config.host}
          value={jsonData.host ?? ''}
          placeholder={DEFAULTS.host}
          width={40}
          onChange={textValue((host) => onOptionsChange(withJsonData(options, { host })))}
        />
      </Field>
      <Field
        label="Server port"
        description={`Default ${port}: 9000 native, 8123 HTTP, 9440 and 8443 with TLS`}
        invalid={!!portError(jsonData.port)}
        error={portError(jsonData.port)}
      >
        <Input
          data-testid={selectors.config.port}
          type="number"
          value={jsonData.port ?? ''}
          placeholder={String(port)}
          width={20}
          onChange={textValue((v) => onOptionsChange(withJsonData(options, { port: numberOrUndefined(v) })))}
        />
      </Field>
      <Field label="Protocol" description="Native or HTTP; the port default follows">
        <RadioButtonGroup<Protocol>
          data-testid={selectors.config.protocol}
          options={protocols}
          value={protocol}
          onChange={(p) => onOptionsChange(withConnectionMode(options, { protocol: p }))}
        />
      </Field>
      <Field label="Secure connection" description="Connect with TLS; see TLS / SSL settings below">
        <Switch
          data-testid={selectors.config.secure}
          value={!!jsonData.secure}
          onChange={(e) => onOptionsChange(withConnectionMode(options, { secure: e.currentTarget.checked }))}
        />
      </Field>
      {protocol === 'http' && (
        <>
          <Field label="HTTP URL path" description="Path of the HTTP interface, when it sits behind a proxy">
            <Input
              data-testid={selectors.config.path}
              value={jsonData.path ?? ''}
              placeholder="/"
              width={40}
              onChange={textValue((path) => onOptionsChange(withJsonData(options, { path })))}
            />
          </Field>
          <HttpHeadersEditor options={options} onOptionsChange={onOptionsChange} />
        </>
      )}
    </ConfigSection>
  );
}
