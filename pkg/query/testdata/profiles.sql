SELECT Timestamp, ServiceName, SeriesId, ProfileId, DurationNanos, Period, toInt64(FirstSample), toInt64(LastSample), Events, Total FROM `otel`.`otel_profile_profiles` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND ServiceName = {p2:String} AND SeriesId IN (SELECT SeriesId FROM `otel`.`otel_profile_series` WHERE TenantId = {p4:String} AND match(K8sPodName, {p3:String})) AND Timestamp >= fromUnixTimestamp64Nano({p5:Int64}) AND Timestamp < fromUnixTimestamp64Nano({p6:Int64}) ORDER BY Timestamp DESC, ServiceName, SeriesId, ProfileId LIMIT 1 BY Timestamp, ServiceName, SeriesId, ProfileId LIMIT {p7:Int64}
-- parameters
-- p0 = "acme"
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "checkout"
-- p3 = "^(?s:api-.*)$"
-- p4 = "acme"
-- p5 = "1795168770000000000"
-- p6 = "1795172370000000000"
-- p7 = "20"
