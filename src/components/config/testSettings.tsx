import React, { useState } from 'react';
import { render } from '@testing-library/react';

import { FlamehouseOptions, FlamehouseSecureJsonData } from '../../options';
import { EditorProps, Settings } from './update';

/** Datasource settings as Grafana passes them to the config editor. */
export function settings(
  jsonData: FlamehouseOptions = {},
  secure: { fields?: Record<string, boolean>; data?: FlamehouseSecureJsonData } = {}
): Settings {
  // Without the deprecated `database` property, which the editor never reads.
  const partial: Omit<Settings, 'database'> = {
    id: 1,
    uid: 'fh',
    orgId: 1,
    name: 'Flamehouse',
    type: 'flamehouse-profiles-datasource',
    typeName: 'Flamehouse Profiles',
    typeLogoUrl: '',
    access: 'proxy',
    url: '',
    user: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    readOnly: false,
    withCredentials: false,
    jsonData,
    secureJsonFields: secure.fields ?? {},
    secureJsonData: secure.data,
  };
  return partial as Settings;
}

/**
 * Renders an editor the way Grafana does: every change is fed back as the
 * new options. latest() returns the settings after the last change.
 */
export function renderStateful(Editor: (p: EditorProps) => React.ReactElement, initial: Settings) {
  const changes: Settings[] = [];
  function Host() {
    const [options, setOptions] = useState(initial);
    return (
      <Editor
        options={options}
        onOptionsChange={(next) => {
          changes.push(next);
          setOptions(next);
        }}
      />
    );
  }
  const view = render(<Host />);
  return {
    ...view,
    changes,
    latest: (): Settings => {
      if (changes.length === 0) {
        throw new Error('the editor reported no change');
      }
      return changes[changes.length - 1];
    },
  };
}
