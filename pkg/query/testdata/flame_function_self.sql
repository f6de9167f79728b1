SELECT StackId, sum(Value) FROM (SELECT StackId, Value FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p6:String} AND ServiceName IN ({p7:String}) AND FrameIds[-1] IN (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p3:String} AND ServiceName IN ({p4:String}) AND multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p5:String})) AND Timestamp >= toDateTime({p8:Int64}) AND Timestamp < toDateTime({p9:Int64}) AND (Timestamp < toDateTime({p10:Int64}) OR Timestamp >= toDateTime({p11:Int64}) OR InMinuteRollups = false)
UNION ALL SELECT StackId, Value FROM `otel`.`otel_profile_service_samples_1m` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p6:String} AND ServiceName IN ({p7:String}) AND FrameIds[-1] IN (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p3:String} AND ServiceName IN ({p4:String}) AND multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p5:String})) AND Timestamp >= toDateTime({p12:Int64}) AND Timestamp < toDateTime({p13:Int64})) GROUP BY StackId
-- parameters
-- p0 = "acme"
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "checkout"
-- p3 = "acme"
-- p4 = "checkout"
-- p5 = "regexp.Compile"
-- p6 = "acme"
-- p7 = "checkout"
-- p8 = "1795168770"
-- p9 = "1795172370"
-- p10 = "1795168800"
-- p11 = "1795172340"
-- p12 = "1795168800"
-- p13 = "1795172340"
