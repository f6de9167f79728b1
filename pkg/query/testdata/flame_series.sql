SELECT StackId, sum(Value) FROM (SELECT StackId, Value FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND SeriesId = {p3:UInt64} AND Timestamp >= toDateTime({p4:Int64}) AND Timestamp < toDateTime({p5:Int64}) AND (Timestamp < toDateTime({p6:Int64}) OR Timestamp >= toDateTime({p7:Int64}) OR InMinuteRollups = false)
UNION ALL SELECT StackId, Value FROM `otel`.`otel_profile_samples_1m` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND SeriesId = {p3:UInt64} AND Timestamp >= toDateTime({p8:Int64}) AND Timestamp < toDateTime({p9:Int64})) GROUP BY StackId
-- parameters
-- p0 = "acme"
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "checkout"
-- p3 = "42"
-- p4 = "1795168770"
-- p5 = "1795172370"
-- p6 = "1795168800"
-- p7 = "1795172340"
-- p8 = "1795168800"
-- p9 = "1795172340"
