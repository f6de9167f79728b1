import type { DataSourceApi, MetricFindValue, ScopedVars } from '@grafana/data';

import type { ResourceRange } from './resources';
import type { FlamehouseOptions, ProfileQuery, ProfileTypeInfo, VariableQuery } from './types';

/**
 * The lookups of the editors and template variables: the DataSource class (src/datasource.ts) answers them, and
 * owns every request. The editors' hooks and the variable support depend on this interface rather than on the
 * class, which imports them: no import cycle.
 */
export interface Lookups {
  /** The profile types with data in the range. */
  getProfileTypes(range?: ResourceRange): Promise<ProfileTypeInfo[]>;
  /** Selector label names with data in the range. */
  getLabelNames(range?: ResourceRange, profileTypeId?: string, labelSelector?: string): Promise<string[]>;
  /** A label's values in the range. */
  getLabelValues(
    label: string,
    range?: ResourceRange,
    profileTypeId?: string,
    labelSelector?: string
  ): Promise<string[]>;
  /** The values a template variable query lists. */
  findVariableValues(query: VariableQuery, range?: ResourceRange, scopedVars?: ScopedVars): Promise<MetricFindValue[]>;
}

/** A Flamehouse datasource as the variable editor and the variable support see it. */
export type LookupDataSource = DataSourceApi<ProfileQuery, FlamehouseOptions> & Lookups;
