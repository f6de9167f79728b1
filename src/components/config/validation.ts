import { PATTERNS } from '../../generated/backend';
import { SELECTION_LABELS, templatePlaceholders } from '../../links';
import { DEFAULTS, HttpHeader } from '../../options';

/**
 * Checks of single fields, the same as the backend's LoadSettings makes
 * (pkg/plugin/settings.go, pkg/schema/config.go), so that a mistake shows
 * next to the field before "Save & test". Each returns an error message, or
 * undefined when the value is fine; an empty value means the default.
 */

const number = /^\d+(\.\d*)?$|^\.\d+$/;

/** A number of seconds, as dialTimeout, queryTimeout, spanWindowPadding and minStep. */
export function secondsError(v: string | undefined): string | undefined {
  if (!v || number.test(v.trim())) {
    return undefined;
  }
  return 'Must be a number of seconds, e.g. 10';
}

export function portError(port: number | undefined): string | undefined {
  if (port === undefined || (Number.isInteger(port) && port >= 0 && port <= 65535)) {
    return undefined;
  }
  return 'Must be a port number between 1 and 65535';
}

function identifierError(v: string | undefined): string | undefined {
  if (!v || PATTERNS.identifier.test(v)) {
    return undefined;
  }
  return 'Must be a plain identifier: letters, digits and underscores, not starting with a digit';
}

export function databaseError(v: string | undefined): string | undefined {
  return identifierError(v);
}

/** The exporter's profiles table (profiles.otelTable), a plain identifier like the database. */
export function otelTableError(v: string | undefined): string | undefined {
  return identifierError(v);
}

/** The exporter's traces table (profiles.tracesTable), a plain identifier. */
export function tracesTableError(v: string | undefined): string | undefined {
  return identifierError(v);
}

/** The metrics query template: `${…}` references other than the placeholders (and Grafana's `${__…}`) are refused. */
export function metricsQueryError(v: string | undefined): string | undefined {
  if (!v) {
    return undefined;
  }
  const { unknown } = templatePlaceholders(v);
  if (unknown.length === 0) {
    return undefined;
  }
  const known = SELECTION_LABELS.map((l) => '${' + l + '}').join(', ');
  return `Unknown placeholder ${unknown.map((u) => '${' + u + '}').join(', ')}; the placeholders are ${known}`;
}

export function tablePrefixError(v: string | undefined): string | undefined {
  if (!v || PATTERNS.tablePrefix.test(v)) {
    return undefined;
  }
  return 'Must consist of letters, digits and underscores';
}

export function profileTypeError(v: string | undefined): string | undefined {
  if (!v) {
    return undefined;
  }
  const parts = v.split(':');
  if (parts.length === 5 && parts[0] !== '' && parts[1] !== '') {
    return undefined;
  }
  return `Must be name:sampleType:sampleUnit:periodType:periodUnit, e.g. ${DEFAULTS.profileType}`;
}

/** Flame graph nodes; 0 means the default, as in the backend. */
export function maxNodesError(n: number | undefined): string | undefined {
  if (n === undefined || (Number.isInteger(n) && n >= 0 && n <= DEFAULTS.maxMaxNodes)) {
    return undefined;
  }
  return `Must be a whole number between 1 and ${DEFAULTS.maxMaxNodes}`;
}

/** A ClickHouse setting name. */
export function settingNameError(v: string): string | undefined {
  if (PATTERNS.settingName.test(v)) {
    return undefined;
  }
  return v === '' ? 'Name the setting, e.g. max_threads' : 'Not a ClickHouse setting name';
}

/** An HTTP header name: present, without spaces, colons or line breaks, and used once. */
export function headerNameError(headers: HttpHeader[], index: number): string | undefined {
  const name = headers[index].name;
  if (name === '') {
    return 'Name the header';
  }
  if ([...PATTERNS.httpHeaderNameForbidden].some((c) => name.includes(c))) {
    return 'A header name has no spaces or colons';
  }
  if (headers.findIndex((h) => h.name.toLowerCase() === name.toLowerCase()) !== index) {
    return 'This header is already set above';
  }
  return undefined;
}
