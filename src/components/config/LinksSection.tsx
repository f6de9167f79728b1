import React from 'react';
import { DataSourceInstanceSettings } from '@grafana/data';
import { DataSourcePicker } from '@grafana/runtime';
import { Field, Input, TextArea } from '@grafana/ui';

import { DEFAULTS, ProfilesOptions } from '../../options';
import { selectors } from '../../selectors';
import { ConfigSection } from './ConfigSection';
import { textValue } from './inputs';
import { EditorProps, withProfiles } from './update';
import { databaseError, metricsQueryError, tracesTableError } from './validation';

/**
 * Other signals (jsonData.profiles): where the traces query type reads the Collector exporter's traces table, and
 * the traces, logs and metrics datasources that profiles link to (docs/navigation.md).
 */
export function LinksSection({ options, onOptionsChange }: EditorProps) {
  const profiles: ProfilesOptions = options.jsonData.profiles ?? {};
  const set = (patch: Partial<ProfilesOptions>) => onOptionsChange(withProfiles(options, patch));
  const profilesDatabase = profiles.database?.trim() || DEFAULTS.database;
  const errors = {
    tracesDatabase: databaseError(profiles.tracesDatabase),
    tracesTable: tracesTableError(profiles.tracesTable),
    metricsQuery: metricsQueryError(profiles.metricsQuery),
  };
  return (
    <ConfigSection
      title="Traces, logs and metrics"
      testId={selectors.config.sections.links}
      description="The traces table the Trace query type reads, and the datasources that profiles link to: spans open their trace, flame graphs, tables and time series the logs and metrics of their selection."
    >
      <Field
        label="Traces datasource"
        description="Opens the trace ids of the Spans query: Tempo, the ClickHouse plugin, Jaeger or Zipkin. Empty: this datasource's Trace query type"
      >
        <div data-testid={selectors.config.tracesDatasource}>
          <DataSourcePicker
            tracing
            noDefault
            width={40}
            current={profiles.tracesDatasourceUid || undefined}
            placeholder="This datasource"
            onChange={(ds: DataSourceInstanceSettings) => set({ tracesDatasourceUid: ds.uid })}
            onClear={() => set({ tracesDatasourceUid: undefined })}
          />
        </div>
      </Field>
      <Field
        label="Traces database"
        description={`Database of the OpenTelemetry Collector exporter's traces table, for the Trace query type; default: the profiles database (${profilesDatabase})`}
        invalid={!!errors.tracesDatabase}
        error={errors.tracesDatabase}
      >
        <Input
          data-testid={selectors.config.tracesDatabase}
          value={profiles.tracesDatabase ?? ''}
          placeholder={profilesDatabase}
          width={40}
          onChange={textValue((tracesDatabase) => set({ tracesDatabase }))}
        />
      </Field>
      <Field
        label="Traces table"
        description={`The exporter's traces table in that database; default ${DEFAULTS.tracesTable}`}
        invalid={!!errors.tracesTable}
        error={errors.tracesTable}
      >
        <Input
          data-testid={selectors.config.tracesTable}
          value={profiles.tracesTable ?? ''}
          placeholder={DEFAULTS.tracesTable}
          width={40}
          onChange={textValue((tracesTable) => set({ tracesTable }))}
        />
      </Field>
      <Field
        label="Logs datasource"
        description={`"Logs for this selection": Loki (a LogQL stream selector) or the ClickHouse plugin (SQL on the exporter's logs table)`}
      >
        <div data-testid={selectors.config.logsDatasource}>
          <DataSourcePicker
            logs
            noDefault
            width={40}
            current={profiles.logsDatasourceUid || undefined}
            placeholder="Choose a logs datasource"
            onChange={(ds: DataSourceInstanceSettings) => set({ logsDatasourceUid: ds.uid })}
            onClear={() => set({ logsDatasourceUid: undefined })}
          />
        </div>
      </Field>
      <Field label="Metrics datasource" description='"Metrics for this selection": Prometheus, with the query below'>
        <div data-testid={selectors.config.metricsDatasource}>
          <DataSourcePicker
            metrics
            type="prometheus"
            noDefault
            width={40}
            current={profiles.metricsDatasourceUid || undefined}
            placeholder="Choose a Prometheus datasource"
            onChange={(ds: DataSourceInstanceSettings) => set({ metricsDatasourceUid: ds.uid })}
            onClear={() => set({ metricsDatasourceUid: undefined })}
          />
        </div>
      </Field>
      <Field
        label="Metrics query"
        description="PromQL of the metrics link. ${service_name}, ${k8s_namespace_name} and ${k8s_pod_name}, inside double quotes, take the values of the query's = matchers; a link whose placeholders have none is not shown"
        invalid={!!errors.metricsQuery}
        error={errors.metricsQuery}
      >
        <TextArea
          data-testid={selectors.config.metricsQuery}
          value={profiles.metricsQuery ?? ''}
          placeholder={DEFAULTS.metricsQuery}
          rows={2}
          cols={80}
          onChange={textValue((metricsQuery) => set({ metricsQuery }))}
        />
      </Field>
    </ConfigSection>
  );
}
