import React from 'react';
import { Field, Input, RadioButtonGroup, Text } from '@grafana/ui';

import { CacheMode, DEFAULTS, ProfilesOptions, ProfilesSchema } from '../../options';
import { selectors } from '../../selectors';
import { ConfigSection } from './ConfigSection';
import { numberOrUndefined, textValue } from './inputs';
import { EditorProps, withProfiles } from './update';
import {
  databaseError,
  maxNodesError,
  otelTableError,
  profileTypeError,
  secondsError,
  tablePrefixError,
} from './validation';

const schemas: Array<{ label: string; value: ProfilesSchema; description: string }> = [
  {
    label: 'Flamehouse tables',
    value: 'flamehouse',
    description: "Flamehouse's own tables, written by its ingest",
  },
  {
    label: 'OpenTelemetry Collector exporter table',
    value: 'otel',
    description: "The profiles table of the OpenTelemetry Collector's ClickHouse exporter, one row per sample",
  },
];

const cacheModes: Array<{ label: string; value: CacheMode; description: string }> = [
  {
    label: 'Auto',
    value: 'auto',
    description: "ClickHouse's query cache when the server has one this user may use, else the plugin's",
  },
  { label: 'ClickHouse', value: 'clickhouse', description: 'use_query_cache on the server' },
  { label: 'Plugin', value: 'plugin', description: "The plugin's own memory, bounded" },
  { label: 'Off', value: 'off', description: 'Read every query from the tables' },
];

/**
 * Where the profile tables are (Flamehouse's own or the Collector exporter's)
 * and query defaults (jsonData.profiles). The linked datasources are in LinksSection.
 */
export function ProfilesSection({ options, onOptionsChange }: EditorProps) {
  const profiles: ProfilesOptions = options.jsonData.profiles ?? {};
  const set = (patch: Partial<ProfilesOptions>) => onOptionsChange(withProfiles(options, patch));
  const schema = profiles.schema ?? DEFAULTS.schema;
  const otel = schema === 'otel';
  const errors = {
    database: databaseError(profiles.database),
    tablePrefix: tablePrefixError(profiles.tablePrefix),
    otelTable: otelTableError(profiles.otelTable),
    profileType: profileTypeError(profiles.defaultProfileType),
    maxNodes: maxNodesError(profiles.defaultMaxNodes),
    padding: secondsError(profiles.spanWindowPadding),
    minStep: secondsError(profiles.minStep),
    cacheTtl: secondsError(profiles.cacheTtl),
    cacheClosedAfter: secondsError(profiles.cacheClosedAfter),
  };
  return (
    <ConfigSection
      title="Profiles"
      testId={selectors.config.sections.profiles}
      description="Which tables hold the profiles, and defaults for queries."
    >
      <Field
        label="Schema"
        description="Flamehouse's own tables, or the profiles table the OpenTelemetry Collector's ClickHouse exporter writes (one row per sample, no tenant)"
      >
        <RadioButtonGroup<ProfilesSchema>
          data-testid={selectors.config.schema}
          options={schemas}
          value={schema}
          onChange={(v) => set({ schema: v })}
        />
      </Field>
      <Field
        label="Database"
        description={`Database of the ${otel ? "exporter's table" : 'Flamehouse tables'}; default ${DEFAULTS.database}`}
        invalid={!!errors.database}
        error={errors.database}
      >
        <Input
          data-testid={selectors.config.database}
          value={profiles.database ?? ''}
          placeholder={DEFAULTS.database}
          width={40}
          onChange={textValue((database) => set({ database }))}
        />
      </Field>
      {otel ? (
        <>
          <Field
            label="Exporter table"
            description={`The exporter's profiles table in the database above; default ${DEFAULTS.otelTable}`}
            invalid={!!errors.otelTable}
            error={errors.otelTable}
          >
            <Input
              data-testid={selectors.config.otelTable}
              value={profiles.otelTable ?? ''}
              placeholder={DEFAULTS.otelTable}
              width={40}
              onChange={textValue((otelTable) => set({ otelTable }))}
            />
          </Field>
          <div data-testid={selectors.config.otelNote}>
            <Text element="p" color="secondary" variant="bodySmall">
              Table prefix and tenant apply to the Flamehouse tables only: the exporter&apos;s table has no tenant
              column, so this datasource reads all of its rows.
            </Text>
          </div>
        </>
      ) : (
        <>
          <Field
            label="Table prefix"
            description={`Prefix of the table names (${DEFAULTS.tablePrefix}profile_samples, …); default ${DEFAULTS.tablePrefix}`}
            invalid={!!errors.tablePrefix}
            error={errors.tablePrefix}
          >
            <Input
              data-testid={selectors.config.tablePrefix}
              value={profiles.tablePrefix ?? ''}
              placeholder={DEFAULTS.tablePrefix}
              width={40}
              onChange={textValue((tablePrefix) => set({ tablePrefix }))}
            />
          </Field>
          <Field
            label="Tenant"
            description="Tenant whose profiles this datasource reads; empty when ingest auth is off"
          >
            <Input
              data-testid={selectors.config.tenant}
              value={profiles.tenant ?? ''}
              placeholder="(none)"
              width={40}
              onChange={textValue((tenant) => set({ tenant }))}
            />
          </Field>
        </>
      )}
      <Field
        label="Default profile type"
        description="Used by queries that name none, such as links from other datasources"
        invalid={!!errors.profileType}
        error={errors.profileType}
      >
        <Input
          data-testid={selectors.config.defaultProfileType}
          value={profiles.defaultProfileType ?? ''}
          placeholder={DEFAULTS.profileType}
          width={60}
          onChange={textValue((defaultProfileType) => set({ defaultProfileType }))}
        />
      </Field>
      <Field
        label="Default max nodes"
        description={`Flame graph nodes when a query sets none; the rest is folded into "other". Default ${DEFAULTS.defaultMaxNodes}`}
        invalid={!!errors.maxNodes}
        error={errors.maxNodes}
      >
        <Input
          data-testid={selectors.config.defaultMaxNodes}
          type="number"
          value={profiles.defaultMaxNodes ?? ''}
          placeholder={String(DEFAULTS.defaultMaxNodes)}
          width={20}
          onChange={textValue((v) => set({ defaultMaxNodes: numberOrUndefined(v) }))}
        />
      </Field>
      <Field
        label="Span window padding (seconds)"
        description={`Added on both sides of span and trace queries' time range; default ${DEFAULTS.spanWindowPadding}`}
        invalid={!!errors.padding}
        error={errors.padding}
      >
        <Input
          data-testid={selectors.config.spanWindowPadding}
          value={profiles.spanWindowPadding ?? ''}
          placeholder={DEFAULTS.spanWindowPadding}
          width={20}
          onChange={textValue((spanWindowPadding) => set({ spanWindowPadding }))}
        />
      </Field>
      <Field
        label="Minimal step (seconds)"
        description={`Shortest interval of time series; default ${DEFAULTS.minStep}`}
        invalid={!!errors.minStep}
        error={errors.minStep}
      >
        <Input
          data-testid={selectors.config.minStep}
          value={profiles.minStep ?? ''}
          placeholder={DEFAULTS.minStep}
          width={20}
          onChange={textValue((minStep) => set({ minStep }))}
        />
      </Field>
      <Field
        label="Cache closed ranges"
        description="Queries whose range ended a while ago are answered from a cache; a range that touches now is always read"
      >
        <RadioButtonGroup<CacheMode>
          data-testid={selectors.config.cache}
          options={cacheModes}
          value={profiles.cache ?? DEFAULTS.cache}
          onChange={(cache) => set({ cache })}
        />
      </Field>
      <Field
        label="Cache TTL (seconds)"
        description={`How long a cached answer is served; late rows show after it. 0 turns the cache off. Default ${DEFAULTS.cacheTtl}`}
        invalid={!!errors.cacheTtl}
        error={errors.cacheTtl}
      >
        <Input
          data-testid={selectors.config.cacheTtl}
          value={profiles.cacheTtl ?? ''}
          placeholder={DEFAULTS.cacheTtl}
          width={20}
          onChange={textValue((cacheTtl) => set({ cacheTtl }))}
        />
      </Field>
      <Field
        label="Closed after (seconds)"
        description={`How long ago a range must end to be cached: profiles still arriving stay visible. Default ${DEFAULTS.cacheClosedAfter}`}
        invalid={!!errors.cacheClosedAfter}
        error={errors.cacheClosedAfter}
      >
        <Input
          data-testid={selectors.config.cacheClosedAfter}
          value={profiles.cacheClosedAfter ?? ''}
          placeholder={DEFAULTS.cacheClosedAfter}
          width={20}
          onChange={textValue((cacheClosedAfter) => set({ cacheClosedAfter }))}
        />
      </Field>
    </ConfigSection>
  );
}
