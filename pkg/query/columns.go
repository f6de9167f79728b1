package query

import "github.com/flamehouse/flamehouse/pkg/schema"

// RequiredColumns are the columns the queries read, per table: what a
// health check verifies.
var RequiredColumns = map[string][]string{
	schema.Samples:       {"Timestamp", "TenantId", "ServiceName", "ProfileType", "StackId", "SeriesId", "Value", "TraceId", "SpanId", "SampleAttributes"},
	schema.SamplesMinute: {"Timestamp", "TenantId", "ServiceName", "ProfileType", "StackId", "SeriesId", "Value"},
	schema.SamplesHour:   {"Timestamp", "TenantId", "ServiceName", "ProfileType", "StackId", "SeriesId", "Value"},
	schema.ServiceMinute: {"Timestamp", "TenantId", "ServiceName", "ProfileType", "StackId", "Value"},
	schema.ServiceHour:   {"Timestamp", "TenantId", "ServiceName", "ProfileType", "StackId", "Value"},
	schema.Stacks:        {"TenantId", "ServiceName", "StackId", "FrameIds"},
	schema.Frames:        {"TenantId", "ServiceName", "FrameId", "FunctionName", "SystemName", "FileName", "MappingFile", "Address", "FrameType"},
	schema.Series: {
		"TenantId", "SeriesId", "ResourceAttributes", "ServiceNamespace", "ServiceInstanceId",
		"K8sClusterName", "K8sNamespaceName", "K8sPodName", "K8sNodeName", "K8sContainerName",
	},
	schema.Catalog:      {"Hour", "TenantId", "ProfileType", "ServiceName", "SeriesId"},
	schema.SampleLabels: {"Hour", "TenantId", "ProfileType", "ServiceName", "Key", "Value"},
}
