import React from 'react';
import { fireEvent, screen, within } from '@testing-library/react';

import { DEFAULTS } from '../options';
import { selectors } from '../selectors';
import { ConfigEditor } from './ConfigEditor';
import { renderStateful, settings } from './config/testSettings';

// The real picker lists the instance's datasources through getDataSourceSrv.
jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  DataSourcePicker: (props: {
    current?: string;
    tracing?: boolean;
    logs?: boolean;
    metrics?: boolean;
    onChange: (ds: { uid: string }) => void;
    onClear?: () => void;
  }) => (
    <select
      aria-label={
        props.tracing
          ? 'traces datasource'
          : props.logs
            ? 'logs datasource'
            : props.metrics
              ? 'metrics datasource'
              : 'datasource'
      }
      value={props.current ?? ''}
      onChange={(e) => (e.currentTarget.value ? props.onChange({ uid: e.currentTarget.value }) : props.onClear?.())}
    >
      <option value="">none</option>
      <option value="tempo-uid">Tempo</option>
      <option value="loki-uid">Loki</option>
      <option value="prom-uid">Prometheus</option>
    </select>
  ),
}));

const c = selectors.config;

function typeInto(testId: string, value: string, index = 0) {
  fireEvent.change(screen.getAllByTestId(testId)[index], { target: { value } });
}

function toggle(testId: string, index = 0) {
  fireEvent.click(screen.getAllByTestId(testId)[index]);
}

function chooseProtocol(label: 'Native' | 'HTTP') {
  fireEvent.click(within(screen.getByTestId(c.protocol)).getByRole('radio', { name: label }));
}

function chooseSchema(label: 'Flamehouse tables' | 'OpenTelemetry Collector exporter table') {
  fireEvent.click(within(screen.getByTestId(c.schema)).getByRole('radio', { name: label }));
}

function openAdditionalSettings() {
  fireEvent.click(screen.getByTestId(`${c.sections.additional}-header`));
}

describe('ConfigEditor', () => {
  it('renders every section, each with its fields', () => {
    renderStateful(ConfigEditor, settings({ host: 'ch.local', port: 8123, profiles: { database: 'prof' } }));

    const server = screen.getByTestId(c.sections.server);
    expect(within(server).getByText('Server')).toBeInTheDocument();
    expect(within(server).getByTestId(c.host)).toHaveValue('ch.local');
    expect(within(server).getByTestId(c.port)).toHaveValue(8123);
    expect(within(server).getByTestId(c.protocol)).toBeInTheDocument();
    expect(within(server).getByTestId(c.secure)).not.toBeChecked();

    const tls = screen.getByTestId(c.sections.tls);
    expect(within(tls).getByTestId(c.tlsSkipVerify)).toBeInTheDocument();
    expect(within(tls).getByTestId(c.tlsAuth)).toBeInTheDocument();
    expect(within(tls).getByTestId(c.tlsAuthWithCACert)).toBeInTheDocument();

    const credentials = screen.getByTestId(c.sections.credentials);
    expect(within(credentials).getByTestId(c.username)).toHaveAttribute('placeholder', 'default');
    expect(within(credentials).getByTestId(c.password)).toHaveAttribute('type', 'password');

    expect(screen.getByTestId(c.sections.additional)).toHaveTextContent('Additional settings');

    const profiles = screen.getByTestId(c.sections.profiles);
    expect(within(profiles).getByTestId(c.database)).toHaveValue('prof');
    for (const id of [
      c.schema,
      c.tablePrefix,
      c.tenant,
      c.defaultProfileType,
      c.defaultMaxNodes,
      c.spanWindowPadding,
      c.minStep,
      c.cache,
      c.cacheTtl,
      c.cacheClosedAfter,
    ]) {
      expect(within(profiles).getByTestId(id)).toBeInTheDocument();
    }

    const links = screen.getByTestId(c.sections.links);
    expect(within(links).getByText('Traces, logs and metrics')).toBeInTheDocument();
    for (const id of [c.tracesDatasource, c.tracesDatabase, c.tracesTable, c.logsDatasource, c.metricsDatasource]) {
      expect(within(links).getByTestId(id)).toBeInTheDocument();
    }
    expect(within(links).getByLabelText('traces datasource')).toBeInTheDocument();
    expect(within(links).getByLabelText('logs datasource')).toBeInTheDocument();
    expect(within(links).getByLabelText('metrics datasource')).toBeInTheDocument();
    expect(within(links).getByTestId(c.metricsQuery)).toHaveAttribute('placeholder', DEFAULTS.metricsQuery);
  });

  describe('server', () => {
    it('shows the default port of the protocol and TLS as placeholder', () => {
      renderStateful(ConfigEditor, settings({ host: 'ch' }));
      const port = () => screen.getByTestId(c.port);
      expect(port()).toHaveAttribute('placeholder', '9000');
      chooseProtocol('HTTP');
      expect(port()).toHaveAttribute('placeholder', '8123');
      toggle(c.secure);
      expect(port()).toHaveAttribute('placeholder', '8443');
      chooseProtocol('Native');
      expect(port()).toHaveAttribute('placeholder', '9440');
    });

    it('shows the HTTP path and headers for protocol http only', () => {
      const view = renderStateful(ConfigEditor, settings({ host: 'ch', path: '/ch' }));
      expect(screen.queryByTestId(c.path)).not.toBeInTheDocument();
      expect(screen.queryByTestId(c.httpHeaders.add)).not.toBeInTheDocument();

      chooseProtocol('HTTP');
      expect(view.latest().jsonData.protocol).toBe('http');
      expect(screen.getByTestId(c.path)).toHaveValue('/ch');
      expect(screen.getByTestId(c.httpHeaders.add)).toBeInTheDocument();

      chooseProtocol('Native');
      expect(view.latest().jsonData.protocol).toBe('native');
      expect(screen.queryByTestId(c.path)).not.toBeInTheDocument();
      // Hidden, not lost: switching back shows the path again.
      expect(view.latest().jsonData.path).toBe('/ch');
    });

    it('moves a default port along with the protocol and TLS, and keeps a custom one', () => {
      const view = renderStateful(ConfigEditor, settings({ host: 'ch', port: 9000 }));
      chooseProtocol('HTTP');
      expect(view.latest().jsonData.port).toBe(8123);
      toggle(c.secure);
      expect(view.latest().jsonData).toMatchObject({ port: 8443, secure: true });

      typeInto(c.port, '18123');
      expect(view.latest().jsonData.port).toBe(18123);
      chooseProtocol('Native');
      expect(view.latest().jsonData.port).toBe(18123);

      typeInto(c.port, '');
      expect(view.latest().jsonData.port).toBeUndefined();
    });

    it('writes host and path into jsonData and keeps the other keys', () => {
      const view = renderStateful(ConfigEditor, settings({ protocol: 'http', username: 'reader' }));
      typeInto(c.host, 'clickhouse.internal');
      typeInto(c.path, '/clickhouse');
      expect(view.latest().jsonData).toEqual({
        protocol: 'http',
        username: 'reader',
        host: 'clickhouse.internal',
        path: '/clickhouse',
      });
    });

    it('flags a port out of range', () => {
      renderStateful(ConfigEditor, settings({ host: 'ch', port: 70000 }));
      expect(screen.getByText('Must be a port number between 1 and 65535')).toBeInTheDocument();
    });
  });

  describe('HTTP headers', () => {
    it('adds, fills and removes rows', () => {
      const view = renderStateful(ConfigEditor, settings({ protocol: 'http' }));
      toggle(c.httpHeaders.add);
      toggle(c.httpHeaders.add);
      typeInto(c.httpHeaders.name, 'X-Team', 0);
      typeInto(c.httpHeaders.value, 'perf', 0);
      typeInto(c.httpHeaders.name, 'X-Env', 1);
      typeInto(c.httpHeaders.value, 'prod', 1);
      expect(view.latest().jsonData.httpHeaders).toEqual([
        { name: 'X-Team', value: 'perf', secure: false },
        { name: 'X-Env', value: 'prod', secure: false },
      ]);

      toggle(c.httpHeaders.remove, 0);
      expect(view.latest().jsonData.httpHeaders).toEqual([{ name: 'X-Env', value: 'prod', secure: false }]);
      expect(screen.getAllByTestId(c.httpHeaders.name)).toHaveLength(1);
      expect(screen.getByTestId(c.httpHeaders.value)).toHaveValue('prod');
    });

    it('keeps a secure value in secureJsonData only', () => {
      const view = renderStateful(ConfigEditor, settings({ protocol: 'http' }));
      toggle(c.httpHeaders.add);
      typeInto(c.httpHeaders.name, 'X-Api-Key');
      typeInto(c.httpHeaders.value, 'plain-then-secret');
      toggle(c.httpHeaders.secure);
      let s = view.latest();
      expect(s.jsonData.httpHeaders).toEqual([{ name: 'X-Api-Key', value: '', secure: true }]);
      expect(s.secureJsonData).toEqual({ 'secureHttpHeaders.X-Api-Key': 'plain-then-secret' });
      expect(screen.getByTestId(c.httpHeaders.value)).toHaveAttribute('type', 'password');

      typeInto(c.httpHeaders.value, 's3cret');
      s = view.latest();
      expect(s.secureJsonData).toEqual({ 'secureHttpHeaders.X-Api-Key': 's3cret' });
      expect(JSON.stringify(s.jsonData)).not.toContain('s3cret');
    });

    it('shows a stored secure value as configured, and resets it', () => {
      const view = renderStateful(
        ConfigEditor,
        settings(
          { protocol: 'http', httpHeaders: [{ name: 'X-Api-Key', value: '', secure: true }] },
          { fields: { 'secureHttpHeaders.X-Api-Key': true } }
        )
      );
      expect(screen.getByTestId(c.httpHeaders.value)).toHaveValue('configured');
      expect(screen.getByTestId(c.httpHeaders.value)).toBeDisabled();

      fireEvent.click(within(screen.getByTestId(c.sections.server)).getByRole('button', { name: 'Reset' }));
      const s = view.latest();
      expect(s.secureJsonFields['secureHttpHeaders.X-Api-Key']).toBe(false);
      expect(s.secureJsonData?.['secureHttpHeaders.X-Api-Key']).toBe('');
      expect(screen.getByTestId(c.httpHeaders.value)).toHaveValue('');
      expect(screen.getByTestId(c.httpHeaders.value)).toBeEnabled();
    });

    it('clears the stored secret of a removed secure header', () => {
      const view = renderStateful(
        ConfigEditor,
        settings(
          { protocol: 'http', httpHeaders: [{ name: 'X-Api-Key', value: '', secure: true }] },
          { fields: { 'secureHttpHeaders.X-Api-Key': true } }
        )
      );
      toggle(c.httpHeaders.remove);
      const s = view.latest();
      expect(s.jsonData.httpHeaders).toEqual([]);
      expect(s.secureJsonFields['secureHttpHeaders.X-Api-Key']).toBe(false);
      expect(s.secureJsonData?.['secureHttpHeaders.X-Api-Key']).toBe('');
    });

    it('flags empty and repeated header names', () => {
      renderStateful(
        ConfigEditor,
        settings({
          protocol: 'http',
          httpHeaders: [
            { name: 'X-A', value: '1', secure: false },
            { name: 'x-a', value: '2', secure: false },
            { name: '', value: '3', secure: false },
          ],
        })
      );
      expect(screen.getByText('This header is already set above')).toBeInTheDocument();
      expect(screen.getByText('Name the header')).toBeInTheDocument();
    });
  });

  describe('TLS', () => {
    it('shows the certificate fields when their switches are on', () => {
      const view = renderStateful(ConfigEditor, settings({ host: 'ch' }));
      expect(screen.queryByTestId(c.tlsClientCert)).not.toBeInTheDocument();
      expect(screen.queryByTestId(c.tlsCACert)).not.toBeInTheDocument();

      toggle(c.tlsAuth);
      toggle(c.tlsAuthWithCACert);
      toggle(c.tlsSkipVerify);
      expect(view.latest().jsonData).toMatchObject({ tlsAuth: true, tlsAuthWithCACert: true, tlsSkipVerify: true });

      typeInto(c.tlsClientCert, '-----BEGIN CERTIFICATE-----client');
      typeInto(c.tlsClientKey, '-----BEGIN PRIVATE KEY-----key');
      typeInto(c.tlsCACert, '-----BEGIN CERTIFICATE-----ca');
      const s = view.latest();
      expect(s.secureJsonData).toEqual({
        tlsClientCert: '-----BEGIN CERTIFICATE-----client',
        tlsClientKey: '-----BEGIN PRIVATE KEY-----key',
        tlsCACert: '-----BEGIN CERTIFICATE-----ca',
      });
      expect(JSON.stringify(s.jsonData)).not.toContain('BEGIN');
    });

    it('shows stored certificates as configured and resets each one alone', () => {
      const view = renderStateful(
        ConfigEditor,
        settings(
          { tlsAuth: true, tlsAuthWithCACert: true },
          { fields: { tlsClientCert: true, tlsClientKey: true, tlsCACert: true } }
        )
      );
      for (const id of [c.tlsClientCert, c.tlsClientKey, c.tlsCACert]) {
        expect(screen.getByTestId(id)).toHaveValue('configured');
      }
      const resets = within(screen.getByTestId(c.sections.tls)).getAllByRole('button', { name: 'Reset' });
      expect(resets).toHaveLength(3);
      fireEvent.click(resets[1]); // the client key
      const s = view.latest();
      expect(s.secureJsonFields).toEqual({ tlsClientCert: true, tlsClientKey: false, tlsCACert: true });
      expect(s.secureJsonData).toEqual({ tlsClientKey: '' });
      expect(screen.getByTestId(c.tlsClientKey)).toHaveValue('');
      expect(screen.getByTestId(c.tlsClientCert)).toHaveValue('configured');
    });
  });

  describe('credentials', () => {
    it('keeps the password in secureJsonData only', () => {
      const view = renderStateful(ConfigEditor, settings());
      typeInto(c.username, 'reader');
      typeInto(c.password, 's3cret');
      const s = view.latest();
      expect(s.jsonData).toEqual({ username: 'reader' });
      expect(s.secureJsonData).toEqual({ password: 's3cret' });
    });

    it('resets a stored password', () => {
      const view = renderStateful(ConfigEditor, settings({}, { fields: { password: true } }));
      expect(screen.getByTestId(c.password)).toHaveValue('configured');
      fireEvent.click(within(screen.getByTestId(c.sections.credentials)).getByRole('button', { name: 'Reset' }));
      expect(view.latest().secureJsonFields.password).toBe(false);
      expect(view.latest().secureJsonData).toEqual({ password: '' });
      expect(screen.getByTestId(c.password)).toHaveAttribute('type', 'password');
    });
  });

  describe('additional settings', () => {
    it('starts closed when nothing in it is set, and open when something is', () => {
      renderStateful(ConfigEditor, settings());
      expect(screen.queryByTestId(c.dialTimeout)).not.toBeInTheDocument();
      openAdditionalSettings();
      expect(screen.getByTestId(c.dialTimeout)).toBeInTheDocument();
    });

    it('opens on stored values and writes timeouts as strings of seconds', () => {
      const view = renderStateful(ConfigEditor, settings({ queryTimeout: '120' }));
      expect(screen.getByTestId(c.queryTimeout)).toHaveValue('120');
      typeInto(c.dialTimeout, '5');
      typeInto(c.defaultDatabase, 'analytics');
      expect(view.latest().jsonData).toEqual({ queryTimeout: '120', dialTimeout: '5', defaultDatabase: 'analytics' });

      typeInto(c.dialTimeout, 'soon');
      expect(screen.getByText('Must be a number of seconds, e.g. 10')).toBeInTheDocument();
    });

    it('adds, edits and removes custom settings', () => {
      const view = renderStateful(ConfigEditor, settings());
      openAdditionalSettings();
      toggle(c.customSettings.add);
      toggle(c.customSettings.add);
      typeInto(c.customSettings.setting, 'max_threads', 0);
      typeInto(c.customSettings.value, '4', 0);
      typeInto(c.customSettings.setting, 'max_memory_usage', 1);
      typeInto(c.customSettings.value, '10000000000', 1);
      expect(view.latest().jsonData.customSettings).toEqual([
        { setting: 'max_threads', value: '4' },
        { setting: 'max_memory_usage', value: '10000000000' },
      ]);

      toggle(c.customSettings.remove, 0);
      expect(view.latest().jsonData.customSettings).toEqual([{ setting: 'max_memory_usage', value: '10000000000' }]);
      expect(screen.getByTestId(c.customSettings.setting)).toHaveValue('max_memory_usage');

      typeInto(c.customSettings.setting, 'max memory');
      expect(screen.getByText('Not a ClickHouse setting name')).toBeInTheDocument();
    });
  });

  describe('profiles', () => {
    it('writes profiles.* and keeps the other keys', () => {
      const view = renderStateful(ConfigEditor, settings({ host: 'ch', profiles: { tablePrefix: 'x_' } }));
      typeInto(c.database, 'profiles');
      typeInto(c.tenant, 'team-a');
      typeInto(c.defaultProfileType, 'memory:alloc_space:bytes:space:bytes');
      typeInto(c.defaultMaxNodes, '8192');
      typeInto(c.spanWindowPadding, '30');
      typeInto(c.minStep, '10');
      expect(view.latest().jsonData).toEqual({
        host: 'ch',
        profiles: {
          tablePrefix: 'x_',
          database: 'profiles',
          tenant: 'team-a',
          defaultProfileType: 'memory:alloc_space:bytes:space:bytes',
          defaultMaxNodes: 8192,
          spanWindowPadding: '30',
          minStep: '10',
        },
      });
      typeInto(c.defaultMaxNodes, '');
      expect(view.latest().jsonData.profiles?.defaultMaxNodes).toBeUndefined();
    });

    it('sets the cache of closed ranges: mode, TTL and how long ago a range must end', () => {
      const view = renderStateful(ConfigEditor, settings({ host: 'ch' }));
      const cache = within(screen.getByTestId(c.cache));
      expect(cache.getByRole('radio', { name: 'Auto' })).toBeChecked();
      expect(screen.getByTestId(c.cacheTtl)).toHaveAttribute('placeholder', '300');
      expect(screen.getByTestId(c.cacheClosedAfter)).toHaveAttribute('placeholder', '60');
      fireEvent.click(cache.getByRole('radio', { name: 'Plugin' }));
      typeInto(c.cacheTtl, '600');
      typeInto(c.cacheClosedAfter, '120');
      expect(view.latest().jsonData.profiles).toEqual({ cache: 'plugin', cacheTtl: '600', cacheClosedAfter: '120' });
      typeInto(c.cacheTtl, 'ten minutes');
      expect(screen.getByText('Must be a number of seconds, e.g. 10')).toBeInTheDocument();
    });

    describe('schema', () => {
      it('defaults to the Flamehouse tables: table prefix and tenant, no exporter table', () => {
        renderStateful(ConfigEditor, settings({ host: 'ch' }));
        const schema = within(screen.getByTestId(c.schema));
        expect(schema.getByRole('radio', { name: 'Flamehouse tables' })).toBeChecked();
        expect(schema.getByRole('radio', { name: 'OpenTelemetry Collector exporter table' })).not.toBeChecked();
        expect(screen.getByTestId(c.tablePrefix)).toBeInTheDocument();
        expect(screen.getByTestId(c.tenant)).toBeInTheDocument();
        expect(screen.queryByTestId(c.otelTable)).not.toBeInTheDocument();
        expect(screen.queryByTestId(c.otelNote)).not.toBeInTheDocument();
      });

      it('switches to the exporter table: shows its table, hides table prefix and tenant, and keeps them', () => {
        const view = renderStateful(
          ConfigEditor,
          settings({ host: 'ch', profiles: { database: 'otel', tablePrefix: 'fh_', tenant: 'team-a' } })
        );
        chooseSchema('OpenTelemetry Collector exporter table');
        expect(view.latest().jsonData).toEqual({
          host: 'ch',
          profiles: { database: 'otel', tablePrefix: 'fh_', tenant: 'team-a', schema: 'otel' },
        });
        expect(screen.getByTestId(c.otelTable)).toHaveValue('');
        expect(screen.getByTestId(c.otelTable)).toHaveAttribute('placeholder', 'otel_profiles');
        expect(screen.queryByTestId(c.tablePrefix)).not.toBeInTheDocument();
        expect(screen.queryByTestId(c.tenant)).not.toBeInTheDocument();
        expect(screen.getByTestId(c.otelNote)).toHaveTextContent(/no tenant column/);
        expect(screen.getByTestId(c.database)).toHaveValue('otel');

        // Hidden, not lost: switching back shows the prefix and tenant again.
        chooseSchema('Flamehouse tables');
        expect(view.latest().jsonData.profiles).toEqual({
          database: 'otel',
          tablePrefix: 'fh_',
          tenant: 'team-a',
          schema: 'flamehouse',
        });
        expect(screen.getByTestId(c.tablePrefix)).toHaveValue('fh_');
        expect(screen.getByTestId(c.tenant)).toHaveValue('team-a');
        expect(screen.queryByTestId(c.otelTable)).not.toBeInTheDocument();
      });

      it('shows a stored exporter table and writes profiles.otelTable', () => {
        const view = renderStateful(ConfigEditor, settings({ profiles: { schema: 'otel', otelTable: 'profiles_v1' } }));
        expect(
          within(screen.getByTestId(c.schema)).getByRole('radio', { name: 'OpenTelemetry Collector exporter table' })
        ).toBeChecked();
        expect(screen.getByTestId(c.otelTable)).toHaveValue('profiles_v1');
        typeInto(c.otelTable, 'otel_profiles_2');
        expect(view.latest().jsonData.profiles).toEqual({ schema: 'otel', otelTable: 'otel_profiles_2' });
        typeInto(c.otelTable, '');
        expect(view.latest().jsonData.profiles).toEqual({ schema: 'otel', otelTable: '' });
      });

      it('flags an exporter table that is not a plain identifier', () => {
        renderStateful(ConfigEditor, settings({ profiles: { schema: 'otel', otelTable: 'otel-profiles' } }));
        const profiles = within(screen.getByTestId(c.sections.profiles));
        expect(profiles.getByText(/Must be a plain identifier/)).toBeInTheDocument();

        typeInto(c.otelTable, '1profiles');
        expect(profiles.getByText(/Must be a plain identifier/)).toBeInTheDocument();

        typeInto(c.otelTable, 'otel_profiles');
        expect(profiles.queryByText(/Must be a plain identifier/)).not.toBeInTheDocument();
      });
    });

    it('flags values the backend would refuse', () => {
      renderStateful(
        ConfigEditor,
        settings({
          profiles: {
            database: '1db',
            tablePrefix: 'otel-',
            defaultProfileType: 'cpu',
            defaultMaxNodes: -5,
            minStep: '-1',
          },
        })
      );
      const profiles = screen.getByTestId(c.sections.profiles);
      expect(within(profiles).getByText(/Must be a plain identifier/)).toBeInTheDocument();
      expect(within(profiles).getByText('Must consist of letters, digits and underscores')).toBeInTheDocument();
      expect(
        within(profiles).getByText(/Must be name:sampleType:sampleUnit:periodType:periodUnit/)
      ).toBeInTheDocument();
      expect(within(profiles).getByText(/Must be a whole number between 1 and/)).toBeInTheDocument();
      expect(within(profiles).getByText('Must be a number of seconds, e.g. 10')).toBeInTheDocument();
    });
  });

  describe('traces, logs and metrics', () => {
    it('links traces, logs and metrics datasources by uid', () => {
      const view = renderStateful(ConfigEditor, settings({ profiles: { database: 'otel' } }));
      fireEvent.change(screen.getByLabelText('traces datasource'), { target: { value: 'tempo-uid' } });
      fireEvent.change(screen.getByLabelText('logs datasource'), { target: { value: 'loki-uid' } });
      fireEvent.change(screen.getByLabelText('metrics datasource'), { target: { value: 'prom-uid' } });
      expect(view.latest().jsonData.profiles).toEqual({
        database: 'otel',
        tracesDatasourceUid: 'tempo-uid',
        logsDatasourceUid: 'loki-uid',
        metricsDatasourceUid: 'prom-uid',
      });
      fireEvent.change(screen.getByLabelText('traces datasource'), { target: { value: '' } });
      expect(view.latest().jsonData.profiles?.tracesDatasourceUid).toBeUndefined();
      expect(view.latest().jsonData.profiles?.logsDatasourceUid).toBe('loki-uid');
    });

    it('writes the traces table and the metrics query, with the defaults as placeholders', () => {
      const view = renderStateful(ConfigEditor, settings({ host: 'ch', profiles: { database: 'prof' } }));
      expect(screen.getByTestId(c.tracesDatabase)).toHaveAttribute('placeholder', 'prof');
      expect(screen.getByTestId(c.tracesTable)).toHaveAttribute('placeholder', 'otel_traces');
      typeInto(c.tracesDatabase, 'telemetry');
      typeInto(c.tracesTable, 'traces_v2');
      typeInto(c.metricsQuery, 'go_goroutines{service_name="${service_name}"}');
      expect(view.latest().jsonData).toEqual({
        host: 'ch',
        profiles: {
          database: 'prof',
          tracesDatabase: 'telemetry',
          tracesTable: 'traces_v2',
          metricsQuery: 'go_goroutines{service_name="${service_name}"}',
        },
      });
      expect(screen.getByTestId(c.metricsQuery)).toHaveValue('go_goroutines{service_name="${service_name}"}');
    });

    it('flags traces tables that are not identifiers, and unknown placeholders', () => {
      renderStateful(
        ConfigEditor,
        settings({ profiles: { tracesDatabase: 'tele-metry', tracesTable: '1traces', metricsQuery: 'up{a="${pod}"}' } })
      );
      const links = within(screen.getByTestId(c.sections.links));
      expect(links.getAllByText(/Must be a plain identifier/)).toHaveLength(2);
      expect(links.getByText(/Unknown placeholder \$\{pod\}/)).toBeInTheDocument();

      typeInto(c.tracesDatabase, 'telemetry');
      typeInto(c.tracesTable, 'otel_traces');
      typeInto(c.metricsQuery, 'up{a="${k8s_pod_name}"}[${__interval}]');
      expect(links.queryByText(/Must be a plain identifier/)).not.toBeInTheDocument();
      expect(links.queryByText(/Unknown placeholder/)).not.toBeInTheDocument();
    });
  });
});
