import React, { useState } from 'react';
import { TimeRange } from '@grafana/data';
import { Button, Text } from '@grafana/ui';

import { selectors } from '../../selectors';

interface Props {
  /** Downloads the query's answer over the range (DataSource.downloadPprof, then a save). */
  download: (range: TimeRange) => Promise<void>;
  range?: TimeRange;
}

/**
 * "Download pprof": the current query's answer — selection, range, span and trace filters, frame options — as a
 * gzipped pprof file for `go tool pprof`. A failure (an invalid query, ClickHouse down) shows the backend's message.
 */
export function PprofButton({ download, range }: Props) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const click = async () => {
    if (!range) {
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await download(range);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button
        data-testid={selectors.query.downloadPprof}
        size="sm"
        variant="secondary"
        fill="outline"
        icon={busy ? 'spinner' : 'download-alt'}
        disabled={busy || !range}
        tooltip="Download this query's answer over the time range as a pprof file (gzipped protobuf), for go tool pprof"
        onClick={click}
      >
        pprof
      </Button>
      {error && (
        <span data-testid={selectors.query.downloadPprofError}>
          <Text color="error" variant="bodySmall">
            pprof: {error}
          </Text>
        </span>
      )}
    </>
  );
}
