import React, { useMemo, useState } from 'react';
import { DataFrame, SelectableValue } from '@grafana/data';
import { Button, InlineField, Select, Stack, Text } from '@grafana/ui';

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
 * typed in, of the nodes whose label contains the text and the "other" rows under them (paste a name from the
 * panel's "Copy function name"); the chosen node's subtree comes back within a node budget of its own, the rest of
 * the graph as it was. Grafana's flame graph panel has no hook for a datasource on a node's click, so the choice is
 * made here. (Grafana's Combobox, the Select's successor, loops on re-render in this row in Grafana 12.4.)
 */
export function FocusPicker({ frame, focusPath, onChange }: Props) {
  const [search, setSearch] = useState('');
  const options = useMemo(
    (): Array<SelectableValue<string>> =>
      focusNodes(frame, search).map((n) => ({
        label: describeNode(n),
        value: JSON.stringify(n.path),
        description: `${(n.share * 100).toFixed(1)}% of the total`,
      })),
    [frame, search]
  );
  return (
    <Stack gap={1} alignItems="center" wrap="wrap">
      <InlineField
        label="Open in place"
        labelWidth={14}
        tooltip="Opens a node of the last flame graph in place: an 'other' row (what max nodes folded away), or any node whose name you type (e.g. from the panel's 'Copy function name'). Its subtree gets a node budget of its own; the rest of the graph stays."
      >
        <div data-testid={selectors.query.focusPicker}>
          {/* The replacement (Combobox) loops in Grafana 12.4 here; Select is what the rest of the editor uses. */}
          {/* eslint-disable-next-line @typescript-eslint/no-deprecated */}
          <Select<string>
            aria-label="Open in place"
            width={60}
            options={options}
            value={null}
            placeholder={frame ? '"other" nodes of the last answer, or type a function name' : 'Run the query first'}
            noOptionsMessage={
              search ? 'No node of the last answer has that name' : 'The last answer has no "other" node'
            }
            onInputChange={(text, meta) => {
              if (meta.action === 'input-change') {
                setSearch(text);
              }
              return text;
            }}
            filterOption={() => true}
            onChange={(o) => {
              setSearch('');
              if (o?.value) {
                onChange(JSON.parse(o.value));
              }
            }}
          />
        </div>
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
