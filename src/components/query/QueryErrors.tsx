import React from 'react';
import { Alert } from '@grafana/ui';

import { selectors } from '../../selectors';

interface Props {
  /** Errors of the editor's own lookups (profile types, labels). */
  lookupErrors?: string[];
}

/**
 * The editor's failed lookups, under the editor. The query's own errors (data.errors with its refId) are not
 * repeated here: Grafana's query row already shows them under the editor, in Explore and in panel edit.
 */
export function QueryErrors({ lookupErrors = [] }: Props) {
  if (lookupErrors.length === 0) {
    return null;
  }
  return (
    <div data-testid={selectors.query.errors}>
      <Alert severity="warning" title="Suggestions unavailable" bottomSpacing={0} topSpacing={1}>
        {lookupErrors.map((m) => (
          <div key={m}>{m}</div>
        ))}
      </Alert>
    </div>
  );
}
