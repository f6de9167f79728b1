import { DataSourcePluginOptionsEditorProps, DataSourceSettings } from '@grafana/data';

import {
  CustomSetting,
  FlamehouseOptions,
  FlamehouseSecureJsonData,
  HttpHeader,
  ProfilesOptions,
  Protocol,
  defaultPort,
  secureHeaderKey,
} from '../../options';

/**
 * Pure updates of the datasource settings, one per editor action. Each
 * returns new settings and never mutates its argument.
 */

export type Settings = DataSourceSettings<FlamehouseOptions, FlamehouseSecureJsonData>;
export type EditorProps = DataSourcePluginOptionsEditorProps<FlamehouseOptions, FlamehouseSecureJsonData>;
export type SecureKey = Extract<keyof FlamehouseSecureJsonData, string>;

export function withJsonData(s: Settings, patch: Partial<FlamehouseOptions>): Settings {
  return { ...s, jsonData: { ...s.jsonData, ...patch } };
}

export function withProfiles(s: Settings, patch: Partial<ProfilesOptions>): Settings {
  return withJsonData(s, { profiles: { ...s.jsonData.profiles, ...patch } });
}

/** Sets a secret to send on the next save. */
export function withSecret(s: Settings, key: SecureKey, value: string): Settings {
  return { ...s, secureJsonData: { ...s.secureJsonData, [key]: value } };
}

/** Clears a stored secret: Grafana stores the empty value on save. */
export function withSecretReset(s: Settings, key: SecureKey): Settings {
  return {
    ...s,
    secureJsonFields: { ...s.secureJsonFields, [key]: false },
    secureJsonData: { ...s.secureJsonData, [key]: '' },
  };
}

/** Forgets a secret: resets it when stored, drops it when only typed. */
function withSecretDropped(s: Settings, key: SecureKey): Settings {
  if (s.secureJsonFields?.[key]) {
    return withSecretReset(s, key);
  }
  if (s.secureJsonData?.[key] === undefined) {
    return s;
  }
  const { [key]: _dropped, ...rest } = s.secureJsonData;
  return { ...s, secureJsonData: rest };
}

/**
 * Changes a connection property that decides the default port. A port that
 * was the old default follows to the new default, so switching protocol or
 * TLS keeps a working address.
 */
export function withConnectionMode(s: Settings, mode: { protocol?: Protocol; secure?: boolean }): Settings {
  const { protocol, secure, port } = s.jsonData;
  const next = { protocol: mode.protocol ?? protocol, secure: mode.secure ?? secure };
  const patch: Partial<FlamehouseOptions> = { ...mode };
  if (port !== undefined && port === defaultPort(protocol, secure)) {
    patch.port = defaultPort(next.protocol, next.secure);
  }
  return withJsonData(s, patch);
}

// HTTP headers. A secure header's value lives in secureJsonData under
// secureHttpHeaders.<name>; its jsonData row keeps an empty value.

function headers(s: Settings): HttpHeader[] {
  return s.jsonData.httpHeaders ?? [];
}

function withHeaders(s: Settings, rows: HttpHeader[]): Settings {
  return withJsonData(s, { httpHeaders: rows });
}

function replaceRow<T>(rows: T[], index: number, row: T): T[] {
  return rows.map((r, i) => (i === index ? row : r));
}

export function addHeader(s: Settings): Settings {
  return withHeaders(s, [...headers(s), { name: '', value: '', secure: false }]);
}

/**
 * Renames a header. A secure header's secret is keyed by name: one typed
 * since the last save moves along; a stored one cannot be read back, so it
 * is reset and must be typed again.
 */
export function renameHeader(s: Settings, index: number, name: string): Settings {
  const row = headers(s)[index];
  let next = withHeaders(s, replaceRow(headers(s), index, { ...row, name }));
  if (row.secure && row.name !== name) {
    const typed = s.secureJsonFields?.[secureHeaderKey(row.name)]
      ? undefined
      : s.secureJsonData?.[secureHeaderKey(row.name)];
    next = withSecretDropped(next, secureHeaderKey(row.name));
    if (typed) {
      next = withSecret(next, secureHeaderKey(name), typed);
    }
  }
  return next;
}

export function setHeaderValue(s: Settings, index: number, value: string): Settings {
  const row = headers(s)[index];
  if (row.secure) {
    return withSecret(s, secureHeaderKey(row.name), value);
  }
  return withHeaders(s, replaceRow(headers(s), index, { ...row, value }));
}

/** Makes a header secure (its value moves to secureJsonData) or plain (its secret is dropped). */
export function setHeaderSecure(s: Settings, index: number, secure: boolean): Settings {
  const row = headers(s)[index];
  if (row.secure === secure) {
    return s;
  }
  const next = withHeaders(s, replaceRow(headers(s), index, { ...row, secure, value: '' }));
  if (secure) {
    return row.value ? withSecret(next, secureHeaderKey(row.name), row.value) : next;
  }
  return withSecretDropped(next, secureHeaderKey(row.name));
}

export function resetHeaderSecret(s: Settings, index: number): Settings {
  return withSecretReset(s, secureHeaderKey(headers(s)[index].name));
}

export function removeHeader(s: Settings, index: number): Settings {
  const row = headers(s)[index];
  const next = withHeaders(
    s,
    headers(s).filter((_, i) => i !== index)
  );
  return row.secure ? withSecretDropped(next, secureHeaderKey(row.name)) : next;
}

// Custom ClickHouse settings.

function customSettings(s: Settings): CustomSetting[] {
  return s.jsonData.customSettings ?? [];
}

export function addCustomSetting(s: Settings): Settings {
  return withJsonData(s, { customSettings: [...customSettings(s), { setting: '', value: '' }] });
}

export function updateCustomSetting(s: Settings, index: number, patch: Partial<CustomSetting>): Settings {
  const rows = customSettings(s);
  return withJsonData(s, { customSettings: replaceRow(rows, index, { ...rows[index], ...patch }) });
}

export function removeCustomSetting(s: Settings, index: number): Settings {
  return withJsonData(s, { customSettings: customSettings(s).filter((_, i) => i !== index) });
}
