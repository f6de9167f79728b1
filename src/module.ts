import { DataSourcePlugin } from '@grafana/data';

import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { DataSource } from './datasource';
import { FlamehouseOptions, ProfileQuery } from './types';

export const plugin = new DataSourcePlugin<DataSource, ProfileQuery, FlamehouseOptions>(DataSource)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor);
