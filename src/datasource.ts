import { CoreApp, DataSourceInstanceSettings, ScopedVars } from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';

import { DEFAULT_QUERY, FlamehouseOptions, ProfileQuery } from './types';

/** The Flamehouse datasource: every request goes through the Go backend. */
export class DataSource extends DataSourceWithBackend<ProfileQuery, FlamehouseOptions> {
  constructor(instanceSettings: DataSourceInstanceSettings<FlamehouseOptions>) {
    super(instanceSettings);
  }

  getDefaultQuery(_: CoreApp): Partial<ProfileQuery> {
    return DEFAULT_QUERY;
  }

  applyTemplateVariables(query: ProfileQuery, scopedVars: ScopedVars): ProfileQuery {
    return {
      ...query,
      labelSelector: getTemplateSrv().replace(query.labelSelector ?? '', scopedVars),
    };
  }

  /** A query without a profile type has nothing to show. */
  filterQuery(query: ProfileQuery): boolean {
    return !!query.profileTypeId;
  }
}
