SELECT StackId, sum(Value) FROM (SELECT StackId, Value FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p5:String} AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p2:String} AND (multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p3:String} OR FrameType = {p4:String}))))) AND Timestamp >= toDateTime({p6:Int64}) AND Timestamp < toDateTime({p7:Int64}) AND (Timestamp < toDateTime({p8:Int64}) OR Timestamp >= toDateTime({p9:Int64}) OR InMinuteRollups = false)
UNION ALL SELECT StackId, Value FROM `otel`.`otel_profile_service_samples_1m` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p5:String} AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p2:String} AND (multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p3:String} OR FrameType = {p4:String}))))) AND Timestamp >= toDateTime({p10:Int64}) AND Timestamp < toDateTime({p11:Int64})) GROUP BY StackId
-- parameters
-- p0 = "acme"
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "acme"
-- p3 = "[native]"
-- p4 = "native"
-- p5 = "acme"
-- p6 = "1795168770"
-- p7 = "1795172370"
-- p8 = "1795168800"
-- p9 = "1795172340"
-- p10 = "1795168800"
-- p11 = "1795172340"
