SELECT StackId, sum(Value) FROM (SELECT StackId, Value FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p8:String} AND ServiceName IN ({p9:String}) AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p3:String} AND ServiceName IN ({p4:String}) AND (multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p5:String} OR (multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p6:String} AND FrameType = {p7:String})))))) AND Timestamp >= toDateTime({p10:Int64}) AND Timestamp < toDateTime({p11:Int64}) AND (Timestamp < toDateTime({p12:Int64}) OR Timestamp >= toDateTime({p13:Int64}) OR InMinuteRollups = false)
UNION ALL SELECT StackId, Value FROM `otel`.`otel_profile_service_samples_1m` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p8:String} AND ServiceName IN ({p9:String}) AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p3:String} AND ServiceName IN ({p4:String}) AND (multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p5:String} OR (multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p6:String} AND FrameType = {p7:String})))))) AND Timestamp >= toDateTime({p14:Int64}) AND Timestamp < toDateTime({p15:Int64})) GROUP BY StackId
-- parameters
-- p0 = "acme"
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "checkout"
-- p3 = "acme"
-- p4 = "checkout"
-- p5 = "do_syscall_64 [kernel]"
-- p6 = "do_syscall_64"
-- p7 = "kernel"
-- p8 = "acme"
-- p9 = "checkout"
-- p10 = "1795168770"
-- p11 = "1795172370"
-- p12 = "1795168800"
-- p13 = "1795172340"
-- p14 = "1795168800"
-- p15 = "1795172340"
