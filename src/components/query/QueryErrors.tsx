import React from 'react';
import { DataQueryError, PanelData } from '@grafana/data';
import { Alert } from '@grafana/ui';

import { selectors } from '../../selectors';

interface Props {
  data?: PanelData;
  refId: string;
  /** Errors of the editor's own lookups (profile types, labels). */
  lookupErrors?: string[];
}

/** The messages of the errors of one query: data.errors (and the older data.error) with its refId or none. */
export function queryErrors(data: PanelData | undefined, refId: string): string[] {
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- Grafana before 10 sets only data.error.
  const legacy = data?.error;
  const errors: DataQueryError[] = [...(data?.errors ?? []), ...(legacy ? [legacy] : [])];
  const messages = errors
    .filter((e) => !e.refId || e.refId === refId)
    .map((e) => e.message || e.data?.message || e.statusText || 'The query failed');
  return [...new Set(messages)];
}

/** The query's errors from the backend, and failed lookups, under the editor where the user looks. */
export function QueryErrors({ data, refId, lookupErrors = [] }: Props) {
  const messages = queryErrors(data, refId);
  if (messages.length === 0 && lookupErrors.length === 0) {
    return null;
  }
  return (
    <div data-testid={selectors.query.errors}>
      {messages.length > 0 && (
        <Alert severity="error" title="Query error" bottomSpacing={0} topSpacing={1}>
          {messages.map((m) => (
            <div key={m} style={{ whiteSpace: 'pre-wrap' }}>
              {m}
            </div>
          ))}
        </Alert>
      )}
      {lookupErrors.length > 0 && (
        <Alert severity="warning" title="Suggestions unavailable" bottomSpacing={0} topSpacing={1}>
          {lookupErrors.map((m) => (
            <div key={m}>{m}</div>
          ))}
        </Alert>
      )}
    </div>
  );
}
