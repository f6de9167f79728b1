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

export type { FlamehouseOptions, FlamehouseSecureJsonData, ProfilesOptions } from './options';
