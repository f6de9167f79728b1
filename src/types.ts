import { DataSourceJsonData } from '@grafana/data';
import { DataQuery } from '@grafana/schema';

/** What a query asks for; a superset of the Pyroscope datasource's model. */
export type QueryType = 'profile' | 'metrics' | 'both' | 'table';

export interface ProfileQuery extends DataQuery {
  queryType?: QueryType;
  /** name:sampleType:sampleUnit:periodType:periodUnit, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds */
  profileTypeId?: string;
  /** Prometheus-style matchers, e.g. {service_name="checkout"} */
  labelSelector?: string;
}

export const DEFAULT_QUERY: Partial<ProfileQuery> = {
  queryType: 'profile',
  labelSelector: '{}',
};

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
