import {
  databaseError,
  headerNameError,
  maxNodesError,
  metricsQueryError,
  otelTableError,
  portError,
  profileTypeError,
  secondsError,
  settingNameError,
  tablePrefixError,
  tracesTableError,
} from './validation';

// The same rules as the backend's LoadSettings (pkg/plugin/settings.go) and
// schema.Config.Validate (pkg/schema/config.go); an empty value is the default.
describe('field checks', () => {
  it.each([undefined, '', '10', '0', '2.5', '.5', ' 7 '])('accepts %j seconds', (v) => {
    expect(secondsError(v)).toBeUndefined();
  });

  it.each(['-1', 'ten', '10s', '1,5'])('refuses %j seconds', (v) => {
    expect(secondsError(v)).toBeDefined();
  });

  it('checks ports', () => {
    expect(portError(undefined)).toBeUndefined();
    expect(portError(8123)).toBeUndefined();
    expect(portError(0)).toBeUndefined(); // the default port, as in the backend
    expect(portError(65536)).toBeDefined();
    expect(portError(80.5)).toBeDefined();
  });

  it('checks the database and the table prefix like the schema does', () => {
    expect(databaseError('otel')).toBeUndefined();
    expect(databaseError('_profiles2')).toBeUndefined();
    expect(databaseError('2profiles')).toBeDefined();
    expect(databaseError('my-db')).toBeDefined();
    expect(tablePrefixError('')).toBeUndefined();
    expect(tablePrefixError('2024_')).toBeUndefined();
    expect(tablePrefixError('otel.')).toBeDefined();
  });

  it.each([undefined, '', 'otel_profiles', '_p', 'Profiles2'])('accepts exporter table %j', (v) => {
    expect(otelTableError(v)).toBeUndefined();
  });

  it.each(['2profiles', 'otel-profiles', 'otel.otel_profiles', 'otel profiles', '`t`'])(
    'refuses exporter table %j',
    (v) => {
      expect(otelTableError(v)).toMatch(/Must be a plain identifier/);
    }
  );

  it('checks profile type ids', () => {
    expect(profileTypeError('process_cpu:cpu:nanoseconds:cpu:nanoseconds')).toBeUndefined();
    expect(profileTypeError('memory:alloc_space:bytes::')).toBeUndefined();
    expect(profileTypeError('process_cpu:cpu')).toBeDefined();
    expect(profileTypeError(':cpu:nanoseconds:cpu:nanoseconds')).toBeDefined();
  });

  it('checks max nodes', () => {
    expect(maxNodesError(16384)).toBeUndefined();
    expect(maxNodesError(0)).toBeUndefined(); // the default, as in the backend
    expect(maxNodesError(1 << 20)).toBeUndefined();
    expect(maxNodesError((1 << 20) + 1)).toBeDefined();
    expect(maxNodesError(-1)).toBeDefined();
    expect(maxNodesError(1.5)).toBeDefined();
  });

  it('checks setting and header names', () => {
    expect(settingNameError('max_threads')).toBeUndefined();
    expect(settingNameError('')).toMatch(/Name the setting/);
    expect(settingNameError('max threads')).toBeDefined();
    const headers = [
      { name: 'X-A', value: '', secure: false },
      { name: 'X-B:', value: '', secure: false },
      { name: 'x-a', value: '', secure: false },
    ];
    expect(headerNameError(headers, 0)).toBeUndefined();
    expect(headerNameError(headers, 1)).toMatch(/no spaces or colons/);
    expect(headerNameError(headers, 2)).toMatch(/already set/);
  });

  it('checks the traces table like the other tables', () => {
    expect(tracesTableError(undefined)).toBeUndefined();
    expect(tracesTableError('otel_traces')).toBeUndefined();
    expect(tracesTableError('otel-traces')).toMatch(/plain identifier/);
  });

  it('accepts the metrics query placeholders and Grafana variables, and names unknown ones', () => {
    expect(metricsQueryError(undefined)).toBeUndefined();
    expect(metricsQueryError('rate(x{service_name="${service_name}"}[$__rate_interval])')).toBeUndefined();
    expect(metricsQueryError('x{a="${k8s_namespace_name}", b="${k8s_pod_name}"}[${__range}]')).toBeUndefined();
    expect(metricsQueryError('x{a="${namespace}", b="${pod}"}')).toBe(
      'Unknown placeholder ${namespace}, ${pod}; the placeholders are ${service_name}, ${k8s_namespace_name}, ${k8s_pod_name}'
    );
  });
});
