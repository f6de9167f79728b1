SELECT StackId, sum(Value) FROM (SELECT StackId, Value FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND Timestamp >= toDateTime({p3:Int64}) AND Timestamp < toDateTime({p4:Int64})
UNION ALL SELECT StackId, Value FROM `otel`.`otel_profile_service_samples_1h` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND Timestamp >= toDateTime({p5:Int64}) AND Timestamp < toDateTime({p6:Int64})
UNION ALL SELECT StackId, Value FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND Timestamp >= toDateTime({p7:Int64}) AND Timestamp < toDateTime({p8:Int64}) AND (Timestamp < toDateTime({p9:Int64}) OR Timestamp >= toDateTime({p10:Int64}) OR InMinuteRollups = false)
UNION ALL SELECT StackId, Value FROM `otel`.`otel_profile_service_samples_1m` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND Timestamp >= toDateTime({p11:Int64}) AND Timestamp < toDateTime({p12:Int64})) GROUP BY StackId
-- parameters
-- p0 = ""
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "checkout"
-- p3 = "1795168770"
-- p4 = "1795168800"
-- p5 = "1795168800"
-- p6 = "1795251600"
-- p7 = "1795251600"
-- p8 = "1795255170"
-- p9 = "1795251600"
-- p10 = "1795255140"
-- p11 = "1795251600"
-- p12 = "1795255140"
