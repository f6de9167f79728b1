SELECT StackId, sum(Value) FROM (SELECT StackId, Value FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p7:String} AND ServiceName IN ({p8:String}) AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p3:String} AND ServiceName IN ({p4:String}) AND BuildId = {p5:String} AND MappingFile = {p6:String})))) AND Timestamp >= toDateTime({p9:Int64}) AND Timestamp < toDateTime({p10:Int64}) AND (Timestamp < toDateTime({p11:Int64}) OR Timestamp >= toDateTime({p12:Int64}) OR InMinuteRollups = false)
UNION ALL SELECT StackId, Value FROM `otel`.`otel_profile_service_samples_1m` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p7:String} AND ServiceName IN ({p8:String}) AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p3:String} AND ServiceName IN ({p4:String}) AND BuildId = {p5:String} AND MappingFile = {p6:String})))) AND Timestamp >= toDateTime({p13:Int64}) AND Timestamp < toDateTime({p14:Int64})) GROUP BY StackId
-- parameters
-- p0 = "acme"
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "checkout"
-- p3 = "acme"
-- p4 = "checkout"
-- p5 = "3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8"
-- p6 = "/usr/lib/libc.so.6"
-- p7 = "acme"
-- p8 = "checkout"
-- p9 = "1795168770"
-- p10 = "1795172370"
-- p11 = "1795168800"
-- p12 = "1795172340"
-- p13 = "1795168800"
-- p14 = "1795172340"
