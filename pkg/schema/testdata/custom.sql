CREATE DATABASE IF NOT EXISTS `profiles`;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_schema_migrations`
(
    `Version` UInt32,
    `Name` String,
    `AppliedAt` DateTime64(3)
)
ENGINE = ReplacingMergeTree(AppliedAt)
ORDER BY Version;

CREATE DATABASE IF NOT EXISTS `profiles`;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_samples`
(
    `Timestamp` DateTime CODEC(Delta(4), ZSTD(1)),
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `ProfileType` LowCardinality(String) CODEC(ZSTD(1)),
    `StackId` UInt64 CODEC(ZSTD(1)),
    `SeriesId` UInt64 CODEC(ZSTD(1)),
    `Value` Int64 CODEC(ZSTD(1)),
    `TraceId` String CODEC(ZSTD(1)),
    `SpanId` String CODEC(ZSTD(1)),
    `SampleAttributes` Map(LowCardinality(String), LowCardinality(String)) CODEC(ZSTD(1)),
    `ServiceNamespace` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceInstanceId` LowCardinality(String) CODEC(ZSTD(1)),
    `K8sClusterName` LowCardinality(String) CODEC(ZSTD(1)),
    `K8sNamespaceName` LowCardinality(String) CODEC(ZSTD(1)),
    `K8sPodName` LowCardinality(String) CODEC(ZSTD(1)),
    `K8sNodeName` LowCardinality(String) CODEC(ZSTD(1)),
    `K8sContainerName` LowCardinality(String) CODEC(ZSTD(1)),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_span_id SpanId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_series_id SeriesId TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_sample_attr_keys mapKeys(SampleAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_sample_attr_values mapValues(SampleAttributes) TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = MergeTree
PARTITION BY toDate(Timestamp)
ORDER BY (TenantId, ServiceName, ProfileType, toStartOfMinute(Timestamp), StackId, Timestamp)
TTL Timestamp + toIntervalSecond(259200)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1, non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_samples_1m`
(
    `Timestamp` DateTime CODEC(Delta(4), ZSTD(1)),
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `ProfileType` LowCardinality(String) CODEC(ZSTD(1)),
    `StackId` UInt64 CODEC(ZSTD(1)),
    `SeriesId` UInt64 CODEC(ZSTD(1)),
    `Value` SimpleAggregateFunction(sum, Int64) CODEC(ZSTD(1)),
    INDEX idx_series_id SeriesId TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = AggregatingMergeTree()
PARTITION BY toDate(Timestamp)
ORDER BY (TenantId, ServiceName, ProfileType, Timestamp, StackId, SeriesId)
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS `profiles`.`fh_profile_samples_1m_mv` TO `profiles`.`fh_profile_samples_1m`
AS SELECT
    toStartOfMinute(Timestamp) AS Timestamp,
    TenantId,
    ServiceName,
    ProfileType,
    StackId,
    SeriesId,
    sum(Value) AS Value
FROM `profiles`.`fh_profile_samples`
GROUP BY Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_samples_1h`
(
    `Timestamp` DateTime CODEC(Delta(4), ZSTD(1)),
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `ProfileType` LowCardinality(String) CODEC(ZSTD(1)),
    `StackId` UInt64 CODEC(ZSTD(1)),
    `SeriesId` UInt64 CODEC(ZSTD(1)),
    `Value` SimpleAggregateFunction(sum, Int64) CODEC(ZSTD(1)),
    INDEX idx_series_id SeriesId TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = AggregatingMergeTree()
PARTITION BY toMonday(Timestamp)
ORDER BY (TenantId, ServiceName, ProfileType, Timestamp, StackId, SeriesId)
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS `profiles`.`fh_profile_samples_1h_mv` TO `profiles`.`fh_profile_samples_1h`
AS SELECT
    toStartOfHour(Timestamp) AS Timestamp,
    TenantId,
    ServiceName,
    ProfileType,
    StackId,
    SeriesId,
    sum(Value) AS Value
FROM `profiles`.`fh_profile_samples`
GROUP BY Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_service_samples_1m`
(
    `Timestamp` DateTime CODEC(Delta(4), ZSTD(1)),
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `ProfileType` LowCardinality(String) CODEC(ZSTD(1)),
    `StackId` UInt64 CODEC(ZSTD(1)),
    `Value` SimpleAggregateFunction(sum, Int64) CODEC(ZSTD(1))
)
ENGINE = AggregatingMergeTree()
PARTITION BY toDate(Timestamp)
ORDER BY (TenantId, ServiceName, ProfileType, Timestamp, StackId)
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS `profiles`.`fh_profile_service_samples_1m_mv` TO `profiles`.`fh_profile_service_samples_1m`
AS SELECT
    toStartOfMinute(Timestamp) AS Timestamp,
    TenantId,
    ServiceName,
    ProfileType,
    StackId,
    sum(Value) AS Value
FROM `profiles`.`fh_profile_samples`
GROUP BY Timestamp, TenantId, ServiceName, ProfileType, StackId;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_service_samples_1h`
(
    `Timestamp` DateTime CODEC(Delta(4), ZSTD(1)),
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `ProfileType` LowCardinality(String) CODEC(ZSTD(1)),
    `StackId` UInt64 CODEC(ZSTD(1)),
    `Value` SimpleAggregateFunction(sum, Int64) CODEC(ZSTD(1))
)
ENGINE = AggregatingMergeTree()
PARTITION BY toMonday(Timestamp)
ORDER BY (TenantId, ServiceName, ProfileType, Timestamp, StackId)
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS `profiles`.`fh_profile_service_samples_1h_mv` TO `profiles`.`fh_profile_service_samples_1h`
AS SELECT
    toStartOfHour(Timestamp) AS Timestamp,
    TenantId,
    ServiceName,
    ProfileType,
    StackId,
    sum(Value) AS Value
FROM `profiles`.`fh_profile_samples`
GROUP BY Timestamp, TenantId, ServiceName, ProfileType, StackId;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_stacks`
(
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `StackId` UInt64 CODEC(ZSTD(1)),
    `FrameIds` Array(UInt64) CODEC(ZSTD(1)),
    `LastSeen` Date CODEC(ZSTD(1))
)
ENGINE = ReplacingMergeTree(LastSeen)
PARTITION BY LastSeen
ORDER BY (TenantId, ServiceName, StackId)
SETTINGS ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_frames`
(
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `FrameId` UInt64 CODEC(ZSTD(1)),
    `FunctionName` String CODEC(ZSTD(1)),
    `SystemName` String CODEC(ZSTD(1)),
    `FileName` String CODEC(ZSTD(1)),
    `Line` UInt32 CODEC(ZSTD(1)),
    `Column` UInt32 CODEC(ZSTD(1)),
    `Inlined` Bool CODEC(ZSTD(1)),
    `MappingFile` LowCardinality(String) CODEC(ZSTD(1)),
    `BuildId` LowCardinality(String) CODEC(ZSTD(1)),
    `Address` UInt64 CODEC(ZSTD(1)),
    `FrameType` LowCardinality(String) CODEC(ZSTD(1)),
    `LastSeen` Date CODEC(ZSTD(1))
)
ENGINE = ReplacingMergeTree(LastSeen)
PARTITION BY LastSeen
ORDER BY (TenantId, ServiceName, FrameId)
SETTINGS ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_series`
(
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `SeriesId` UInt64 CODEC(ZSTD(1)),
    `ResourceAttributes` Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    `ServiceNamespace` LowCardinality(String) MATERIALIZED ResourceAttributes['service.namespace'] CODEC(ZSTD(1)),
    `ServiceInstanceId` LowCardinality(String) MATERIALIZED ResourceAttributes['service.instance.id'] CODEC(ZSTD(1)),
    `K8sClusterName` LowCardinality(String) MATERIALIZED ResourceAttributes['k8s.cluster.name'] CODEC(ZSTD(1)),
    `K8sNamespaceName` LowCardinality(String) MATERIALIZED ResourceAttributes['k8s.namespace.name'] CODEC(ZSTD(1)),
    `K8sPodName` LowCardinality(String) MATERIALIZED ResourceAttributes['k8s.pod.name'] CODEC(ZSTD(1)),
    `K8sNodeName` LowCardinality(String) MATERIALIZED ResourceAttributes['k8s.node.name'] CODEC(ZSTD(1)),
    `K8sContainerName` LowCardinality(String) MATERIALIZED ResourceAttributes['k8s.container.name'] CODEC(ZSTD(1)),
    `LastSeen` Date CODEC(ZSTD(1)),
    INDEX idx_res_attr_keys mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_res_attr_values mapValues(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(LastSeen)
PARTITION BY LastSeen
ORDER BY (TenantId, ServiceName, SeriesId)
SETTINGS ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_catalog`
(
    `Hour` DateTime CODEC(Delta(4), ZSTD(1)),
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ProfileType` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `SeriesId` UInt64 CODEC(ZSTD(1))
)
ENGINE = ReplacingMergeTree()
PARTITION BY toDate(Hour)
ORDER BY (TenantId, ProfileType, ServiceName, Hour, SeriesId)
SETTINGS ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_sample_labels`
(
    `Hour` DateTime CODEC(Delta(4), ZSTD(1)),
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `ProfileType` LowCardinality(String) CODEC(ZSTD(1)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(1)),
    `Key` LowCardinality(String) CODEC(ZSTD(1)),
    `Value` String CODEC(ZSTD(1))
)
ENGINE = ReplacingMergeTree()
PARTITION BY toDate(Hour)
ORDER BY (TenantId, ProfileType, Key, Value, ServiceName, Hour)
SETTINGS ttl_only_drop_parts = 1;

ALTER TABLE `profiles`.`fh_profile_samples_1m` MODIFY SETTING non_replicated_deduplication_window = 1000;

ALTER TABLE `profiles`.`fh_profile_samples_1h` MODIFY SETTING non_replicated_deduplication_window = 1000;

ALTER TABLE `profiles`.`fh_profile_service_samples_1m` MODIFY SETTING non_replicated_deduplication_window = 1000;

ALTER TABLE `profiles`.`fh_profile_service_samples_1h` MODIFY SETTING non_replicated_deduplication_window = 1000;

ALTER TABLE `profiles`.`fh_profile_frames`
    ADD COLUMN IF NOT EXISTS `MappingStart` UInt64 DEFAULT 0 CODEC(ZSTD(1)),
    ADD COLUMN IF NOT EXISTS `MappingOffset` UInt64 DEFAULT 0 CODEC(ZSTD(1));

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_symbols`
(
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `BuildId` String CODEC(ZSTD(1)),
    `Start` UInt64 CODEC(Delta(8), ZSTD(1)),
    `End` UInt64 CODEC(Delta(8), ZSTD(1)),
    `Functions` Array(String) CODEC(ZSTD(1)),
    `Files` Array(String) CODEC(ZSTD(1)),
    `Lines` Array(UInt32) CODEC(ZSTD(1)),
    `Version` UInt64 CODEC(ZSTD(1))
)
ENGINE = ReplacingMergeTree(Version)
ORDER BY (TenantId, BuildId, Start)
SETTINGS index_granularity = 8192;

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_executables`
(
    `TenantId` LowCardinality(String) CODEC(ZSTD(1)),
    `BuildId` String CODEC(ZSTD(1)),
    `FileName` String CODEC(ZSTD(1)),
    `Size` UInt64 CODEC(ZSTD(1)),
    `Source` LowCardinality(String) CODEC(ZSTD(1)),
    `HasSymtab` Bool CODEC(ZSTD(1)),
    `HasDynsym` Bool CODEC(ZSTD(1)),
    `HasDwarf` Bool CODEC(ZSTD(1)),
    `HasGoPclntab` Bool CODEC(ZSTD(1)),
    `Ranges` UInt64 CODEC(ZSTD(1)),
    `SegmentOffsets` Array(UInt64) CODEC(ZSTD(1)),
    `SegmentVaddrs` Array(UInt64) CODEC(ZSTD(1)),
    `SegmentSizes` Array(UInt64) CODEC(ZSTD(1)),
    `UpdatedAt` DateTime64(3) CODEC(ZSTD(1))
)
ENGINE = ReplacingMergeTree(UpdatedAt)
ORDER BY (TenantId, BuildId)
SETTINGS index_granularity = 8192;

ALTER TABLE `profiles`.`fh_profile_samples`
    DROP COLUMN IF EXISTS `ServiceNamespace`,
    DROP COLUMN IF EXISTS `ServiceInstanceId`,
    DROP COLUMN IF EXISTS `K8sClusterName`,
    DROP COLUMN IF EXISTS `K8sNamespaceName`,
    DROP COLUMN IF EXISTS `K8sPodName`,
    DROP COLUMN IF EXISTS `K8sNodeName`,
    DROP COLUMN IF EXISTS `K8sContainerName`,
    MODIFY COLUMN `Timestamp` DateTime CODEC(DoubleDelta, ZSTD(3)),
    MODIFY COLUMN `StackId` UInt64 CODEC(ZSTD(3)),
    MODIFY COLUMN `SeriesId` LowCardinality(UInt64) CODEC(ZSTD(3)),
    MODIFY COLUMN `Value` Int64 CODEC(ZSTD(3)),
    MODIFY COLUMN `TraceId` String CODEC(ZSTD(3)),
    MODIFY COLUMN `SpanId` String CODEC(ZSTD(3)),
    MODIFY COLUMN `SampleAttributes` Map(LowCardinality(String), LowCardinality(String)) CODEC(ZSTD(3));

ALTER TABLE `profiles`.`fh_profile_samples_1m`
    MODIFY COLUMN `Timestamp` DateTime CODEC(Delta(4), ZSTD(3)),
    MODIFY COLUMN `StackId` UInt64 CODEC(ZSTD(3)),
    MODIFY COLUMN `SeriesId` LowCardinality(UInt64) CODEC(ZSTD(3)),
    MODIFY COLUMN `Value` SimpleAggregateFunction(sum, Int64) CODEC(ZSTD(3));

ALTER TABLE `profiles`.`fh_profile_samples_1h`
    MODIFY COLUMN `Timestamp` DateTime CODEC(Delta(4), ZSTD(3)),
    MODIFY COLUMN `StackId` UInt64 CODEC(ZSTD(3)),
    MODIFY COLUMN `SeriesId` LowCardinality(UInt64) CODEC(ZSTD(3)),
    MODIFY COLUMN `Value` SimpleAggregateFunction(sum, Int64) CODEC(ZSTD(3));

ALTER TABLE `profiles`.`fh_profile_service_samples_1m`
    MODIFY COLUMN `Timestamp` DateTime CODEC(Delta(4), ZSTD(3)),
    MODIFY COLUMN `StackId` UInt64 CODEC(ZSTD(3)),
    MODIFY COLUMN `Value` SimpleAggregateFunction(sum, Int64) CODEC(ZSTD(3));

ALTER TABLE `profiles`.`fh_profile_service_samples_1h`
    MODIFY COLUMN `Timestamp` DateTime CODEC(Delta(4), ZSTD(3)),
    MODIFY COLUMN `StackId` UInt64 CODEC(ZSTD(3)),
    MODIFY COLUMN `Value` SimpleAggregateFunction(sum, Int64) CODEC(ZSTD(3));

ALTER TABLE `profiles`.`fh_profile_stacks`
    MODIFY COLUMN `StackId` UInt64 CODEC(ZSTD(3)),
    MODIFY COLUMN `FrameIds` Array(LowCardinality(UInt64)) CODEC(ZSTD(3));

CREATE TABLE IF NOT EXISTS `profiles`.`fh_profile_profiles`
(
    `Timestamp` DateTime64(9) CODEC(Delta(8), ZSTD(3)),
    `TenantId` LowCardinality(String) CODEC(ZSTD(3)),
    `ServiceName` LowCardinality(String) CODEC(ZSTD(3)),
    `ProfileType` LowCardinality(String) CODEC(ZSTD(3)),
    `SeriesId` UInt64 CODEC(ZSTD(3)),
    `ProfileId` String CODEC(ZSTD(3)),
    `DurationNanos` UInt64 CODEC(ZSTD(3)),
    `Period` Int64 CODEC(ZSTD(3)),
    `FirstSample` DateTime CODEC(Delta(4), ZSTD(3)),
    `LastSample` DateTime CODEC(Delta(4), ZSTD(3)),
    `Events` UInt64 CODEC(ZSTD(3)),
    `Total` Int64 CODEC(ZSTD(3))
)
ENGINE = ReplacingMergeTree()
PARTITION BY toDate(FirstSample)
ORDER BY (TenantId, ProfileType, ServiceName, Timestamp, SeriesId, ProfileId)
TTL FirstSample + toIntervalSecond(259200)
SETTINGS ttl_only_drop_parts = 1;

ALTER TABLE `profiles`.`fh_profile_samples_1m`
    MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';

ALTER TABLE `profiles`.`fh_profile_samples_1m`
    ADD PROJECTION IF NOT EXISTS by_series
    (SELECT * ORDER BY (TenantId, ServiceName, ProfileType, SeriesId, Timestamp, StackId));

ALTER TABLE `profiles`.`fh_profile_samples_1m`
    MATERIALIZE PROJECTION by_series;

ALTER TABLE `profiles`.`fh_profile_samples_1h`
    MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';

ALTER TABLE `profiles`.`fh_profile_samples_1h`
    ADD PROJECTION IF NOT EXISTS by_series
    (SELECT * ORDER BY (TenantId, ServiceName, ProfileType, SeriesId, Timestamp, StackId));

ALTER TABLE `profiles`.`fh_profile_samples_1h`
    MATERIALIZE PROJECTION by_series;

ALTER TABLE `profiles`.`fh_profile_samples`
    ADD COLUMN IF NOT EXISTS `InMinuteRollups` Bool DEFAULT true CODEC(ZSTD(3)),
    ADD INDEX IF NOT EXISTS idx_in_minute_rollups (Timestamp, InMinuteRollups) TYPE minmax GRANULARITY 1;

ALTER TABLE `profiles`.`fh_profile_samples`
    MATERIALIZE INDEX idx_in_minute_rollups;

ALTER TABLE `profiles`.`fh_profile_samples_1m_mv`
    MODIFY QUERY SELECT
    toStartOfMinute(Timestamp) AS Timestamp,
    TenantId,
    ServiceName,
    ProfileType,
    StackId,
    SeriesId,
    sum(Value) AS Value
FROM `profiles`.`fh_profile_samples`
WHERE `InMinuteRollups`
GROUP BY Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId;

ALTER TABLE `profiles`.`fh_profile_service_samples_1m_mv`
    MODIFY QUERY SELECT
    toStartOfMinute(Timestamp) AS Timestamp,
    TenantId,
    ServiceName,
    ProfileType,
    StackId,
    sum(Value) AS Value
FROM `profiles`.`fh_profile_samples`
WHERE `InMinuteRollups`
GROUP BY Timestamp, TenantId, ServiceName, ProfileType, StackId;
