import React from 'react';
import { LinkButton, Stack, Text } from '@grafana/ui';

import type { RelatedLink } from '../../links';
import { selectors } from '../../selectors';

interface Props {
  links: RelatedLink[];
}

/**
 * The "Related" row under the query editor in Explore: the query's logs, metrics and trace in the datasources the
 * settings link to, each opening Explore in a new tab over the same range. Nothing when no link applies.
 */
export function RelatedLinks({ links }: Props) {
  if (links.length === 0) {
    return null;
  }
  return (
    <div data-testid={selectors.query.related}>
      <Stack gap={1} alignItems="center" wrap="wrap">
        <Text variant="bodySmall" color="secondary">
          Related
        </Text>
        {links.map((l) => (
          <LinkButton
            key={l.title}
            data-testid={selectors.query.relatedLink}
            size="sm"
            variant="secondary"
            fill="outline"
            icon="external-link-alt"
            href={l.href}
            target="_blank"
            tooltip={`Opens ${l.datasourceName} in Explore, in a new tab`}
          >
            {l.title}
          </LinkButton>
        ))}
      </Stack>
    </div>
  );
}
