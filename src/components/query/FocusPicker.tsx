import React, { useCallback } from 'react';
import { DataFrame } from '@grafana/data';
import { Button, Combobox, ComboboxOption, InlineField, Stack, Text } from '@grafana/ui';

import { describeNode, describePath, focusNodes } from '../../focus';
import { selectors } from '../../selectors';

interface Props {
  /** The last flame graph answer of the query. */
  frame?: DataFrame;
  /** The node opened now (the query's focusPath). */
  focusPath?: string[];
  onChange: (focusPath: string[] | undefined) => void;
}

/**
 * Opens a flame graph node in place (focusPath): a picker of the last answer's "other" rows, largest first, or,
 * typed in, of the nodes whose label contains the text (paste a name from the panel's "Copy function name"); the
 * chosen node's subtree comes back in full within a node budget of its own, the rest of the graph as it was.
 * Grafana's flame graph panel has no hook for a datasource on a node's click, so the choice is made here.
 */
export function FocusPicker({ frame, focusPath, onChange }: Props) {
  const options = useCallback(
    async (search: string): Promise<Array<ComboboxOption<string>>> =>
      focusNodes(frame, search).map((n) => ({
        label: describeNode(n),
        value: JSON.stringify(n.path),
        description: `${(n.share * 100).toFixed(1)}% of the total`,
      })),
    [frame]
  );
  return (
    <Stack gap={1} alignItems="center" wrap="wrap">
      <InlineField
        label="Open in place"
        labelWidth={14}
        tooltip="Opens a node of the last flame graph in place: an 'other' row (what max nodes folded away), or any node whose name you type (e.g. from the panel's 'Copy function name'). Its subtree gets a node budget of its own; the rest of the graph stays."
      >
        <Combobox<string>
          data-testid={selectors.query.focusPicker}
          aria-label="Open in place"
          width={60}
          options={options}
          value={null}
          placeholder={frame ? '"other" nodes of the last answer, or type a function name' : 'Run the query first'}
          noOptionsMessage="No such node in the last answer"
          onChange={(o) => onChange(JSON.parse(o.value))}
        />
      </InlineField>
      {focusPath && focusPath.length > 0 && (
        <>
          <span data-testid={selectors.query.focusPath}>
            <Text variant="bodySmall" color="secondary">
              Opened: {describePath(focusPath)}
            </Text>
          </span>
          <Button
            data-testid={selectors.query.focusClear}
            size="sm"
            variant="secondary"
            fill="text"
            icon="times"
            onClick={() => onChange(undefined)}
          >
            Close
          </Button>
        </>
      )}
    </Stack>
  );
}
