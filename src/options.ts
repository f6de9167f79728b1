import { DataSourceJsonData } from '@grafana/data';

/** Flamehouse table location, inside jsonData.profiles. */
export interface ProfilesOptions {
  database?: string;
  tablePrefix?: string;
}

/** jsonData, with connection keys named as in the official ClickHouse datasource. */
export interface FlamehouseOptions extends DataSourceJsonData {
  host?: string;
  port?: number;
  protocol?: 'native' | 'http';
  secure?: boolean;
  tlsSkipVerify?: boolean;
  username?: string;
  dialTimeout?: string;
  queryTimeout?: string;
  profiles?: ProfilesOptions;
}

/** secureJsonData: sent to the backend only. */
export interface FlamehouseSecureJsonData {
  password?: string;
}
