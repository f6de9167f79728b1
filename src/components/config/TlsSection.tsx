import React from 'react';
import { Field, Switch } from '@grafana/ui';

import { selectors } from '../../selectors';
import { ConfigSection } from './ConfigSection';
import { SecretTextAreaField } from './SecretTextAreaField';
import { EditorProps, withJsonData } from './update';

/** Server verification and client certificates; the certificates are secure fields. */
export function TlsSection(props: EditorProps) {
  const { options, onOptionsChange } = props;
  const { jsonData } = options;
  return (
    <ConfigSection
      title="TLS / SSL settings"
      testId={selectors.config.sections.tls}
      description="Used when Secure connection is on."
    >
      <Field label="Skip TLS verify" description="Accept any server certificate (testing only)">
        <Switch
          data-testid={selectors.config.tlsSkipVerify}
          value={!!jsonData.tlsSkipVerify}
          onChange={(e) => onOptionsChange(withJsonData(options, { tlsSkipVerify: e.currentTarget.checked }))}
        />
      </Field>
      <Field label="TLS client authentication" description="Present a client certificate to the server">
        <Switch
          data-testid={selectors.config.tlsAuth}
          value={!!jsonData.tlsAuth}
          onChange={(e) => onOptionsChange(withJsonData(options, { tlsAuth: e.currentTarget.checked }))}
        />
      </Field>
      {jsonData.tlsAuth && (
        <>
          <SecretTextAreaField
            {...props}
            secureKey="tlsClientCert"
            label="Client certificate"
            description="PEM-encoded client certificate"
            placeholder="-----BEGIN CERTIFICATE-----"
            testId={selectors.config.tlsClientCert}
          />
          <SecretTextAreaField
            {...props}
            secureKey="tlsClientKey"
            label="Client key"
            description="PEM-encoded private key of the client certificate"
            placeholder="-----BEGIN PRIVATE KEY-----"
            testId={selectors.config.tlsClientKey}
          />
        </>
      )}
      <Field label="With CA certificate" description="Verify the server with this CA instead of the system's">
        <Switch
          data-testid={selectors.config.tlsAuthWithCACert}
          value={!!jsonData.tlsAuthWithCACert}
          onChange={(e) => onOptionsChange(withJsonData(options, { tlsAuthWithCACert: e.currentTarget.checked }))}
        />
      </Field>
      {jsonData.tlsAuthWithCACert && (
        <SecretTextAreaField
          {...props}
          secureKey="tlsCACert"
          label="CA certificate"
          description="PEM-encoded certificate of the authority that signed the server's certificate"
          placeholder="-----BEGIN CERTIFICATE-----"
          testId={selectors.config.tlsCACert}
        />
      )}
    </ConfigSection>
  );
}
