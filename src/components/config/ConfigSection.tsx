import React, { ReactNode } from 'react';
import { CollapsableSection, Stack, Text } from '@grafana/ui';

interface Props {
  title: string;
  description?: ReactNode;
  /** Test id of the section's container. */
  testId: string;
  /** Collapsible sections start closed unless initiallyOpen. */
  collapsible?: boolean;
  initiallyOpen?: boolean;
  children: ReactNode;
}

/** A titled group of settings, like the sections of Grafana's own datasource pages. */
export function ConfigSection({ title, description, testId, collapsible, initiallyOpen, children }: Props) {
  const body = (
    <Stack direction="column" gap={0}>
      {description && (
        <Text element="p" color="secondary" variant="bodySmall">
          {description}
        </Text>
      )}
      {children}
    </Stack>
  );
  if (collapsible) {
    return (
      <div data-testid={testId}>
        <CollapsableSection
          label={<Text element="h3">{title}</Text>}
          isOpen={!!initiallyOpen}
          headerDataTestId={`${testId}-header`}
        >
          {body}
        </CollapsableSection>
      </div>
    );
  }
  return (
    <section data-testid={testId}>
      <Text element="h3">{title}</Text>
      {body}
    </section>
  );
}
