SELECT t, g0, sum(a) AS v FROM (SELECT t, g0, v / length(groupUniqArrayArray(ts) OVER (PARTITION BY t, s)) AS a FROM (SELECT toInt64(toUnixTimestamp(toStartOfInterval(u.Timestamp, toIntervalSecond({p5:Int64})))) AS t, r.r0 AS g0, u.SeriesId AS s, sum(u.Value) AS v, groupUniqArray(u.Timestamp) AS ts FROM (SELECT Timestamp, Value, ServiceName, SeriesId FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND Timestamp >= toDateTime({p2:Int64}) AND Timestamp < toDateTime({p3:Int64})) AS u LEFT JOIN (SELECT SeriesId, any(K8sPodName) AS r0 FROM `otel`.`otel_profile_series` WHERE TenantId = {p4:String} GROUP BY SeriesId) AS r ON u.SeriesId = r.SeriesId GROUP BY t, g0, s)) GROUP BY t, g0 ORDER BY t
-- parameters
-- p0 = ""
-- p1 = "memory:inuse_space:bytes:space:bytes"
-- p2 = "1795168740"
-- p3 = "1795179570"
-- p4 = ""
-- p5 = "60"
