SELECT Period FROM `otel`.`otel_profile_profiles` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND SeriesId = {p2:UInt64} AND FirstSample < toDateTime({p3:Int64}) AND LastSample >= toDateTime({p4:Int64}) GROUP BY Period ORDER BY count() DESC, Period LIMIT 1
-- parameters
-- p0 = "acme"
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "18446744073709551615"
-- p3 = "1795169375"
-- p4 = "1795169370"
