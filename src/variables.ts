import { CustomVariableSupport, DataQueryRequest, DataQueryResponse } from '@grafana/data';
import { from, Observable } from 'rxjs';

import { VariableQueryEditor } from './components/query/VariableQueryEditor';
import type { LookupDataSource, Lookups } from './lookups';
import { normalizeVariableQuery, VariableQuery } from './types';

/**
 * Template variables from the editor's lookups: profile types (text: label, value: id), services, label names or a
 * label's values, in the dashboard's time range.
 */
export class FlamehouseVariableSupport extends CustomVariableSupport<LookupDataSource, VariableQuery> {
  editor = VariableQueryEditor;

  constructor(private readonly datasource: Lookups) {
    super();
  }

  query(request: DataQueryRequest<VariableQuery>): Observable<DataQueryResponse> {
    const query = normalizeVariableQuery(request.targets[0]);
    const values = this.datasource.findVariableValues(query, request.range, request.scopedVars);
    return from(values.then((data) => ({ data })));
  }
}
