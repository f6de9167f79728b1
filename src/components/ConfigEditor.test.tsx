import React from 'react';
import { fireEvent, render, screen } from '@testing-library/react';
import { DataSourceSettings } from '@grafana/data';

import { selectors } from '../selectors';
import { FlamehouseOptions, FlamehouseSecureJsonData } from '../types';
import { ConfigEditor } from './ConfigEditor';

type Settings = DataSourceSettings<FlamehouseOptions, FlamehouseSecureJsonData>;

function settings(jsonData: FlamehouseOptions = {}): Settings {
  const partial: Omit<Settings, 'database' | 'id'> = {
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
    secureJsonFields: {},
  };
  return partial as Settings;
}

describe('ConfigEditor', () => {
  it('shows the stored connection settings', () => {
    render(
      <ConfigEditor
        options={settings({ host: 'ch.local', port: 8123, profiles: { database: 'prof' } })}
        onOptionsChange={jest.fn()}
      />
    );
    expect(screen.getByTestId(selectors.config.host)).toHaveValue('ch.local');
    expect(screen.getByTestId(selectors.config.port)).toHaveValue(8123);
    expect(screen.getByTestId(selectors.config.database)).toHaveValue('prof');
  });

  it('writes edits into jsonData and keeps the other keys', () => {
    const onChange = jest.fn();
    render(
      <ConfigEditor options={settings({ host: 'a', profiles: { tablePrefix: 'x_' } })} onOptionsChange={onChange} />
    );
    fireEvent.change(screen.getByTestId(selectors.config.database), { target: { value: 'profiles' } });
    expect(onChange).toHaveBeenLastCalledWith(
      expect.objectContaining({ jsonData: { host: 'a', profiles: { tablePrefix: 'x_', database: 'profiles' } } })
    );
    fireEvent.change(screen.getByTestId(selectors.config.port), { target: { value: '9440' } });
    expect(onChange.mock.lastCall[0].jsonData.port).toBe(9440);
  });

  it('keeps the password in secureJsonData only', () => {
    const onChange = jest.fn();
    render(<ConfigEditor options={settings()} onOptionsChange={onChange} />);
    fireEvent.change(screen.getByTestId(selectors.config.password), { target: { value: 's3cret' } });
    const next = onChange.mock.lastCall[0] as Settings;
    expect(next.secureJsonData).toEqual({ password: 's3cret' });
    expect(JSON.stringify(next.jsonData)).not.toContain('s3cret');
  });
});
