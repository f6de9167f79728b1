SELECT StackId, sum(Value) FROM (SELECT StackId, Value FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND SpanId IN ({p2:String}) AND TraceId = {p3:String} AND Timestamp >= toDateTime({p4:Int64}) AND Timestamp < toDateTime({p5:Int64})) GROUP BY StackId
-- parameters
-- p0 = ""
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "00f067aa0ba902b7"
-- p3 = "4bf92f3577b34da6a3ce929d0e0e4736"
-- p4 = "1795168710"
-- p5 = "1795255230"
