SELECT toInt64(toUnixTimestamp(toStartOfInterval(u.Timestamp, toIntervalSecond({p12:Int64})))) AS t, r.r0 AS g0, toFloat64(sum(if(u.StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p4:String} AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p2:String} AND multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p3:String})))), u.Value, 0))) AS v, toFloat64(sum(u.Value)) AS d FROM (SELECT Timestamp, Value, ServiceName, SeriesId, StackId FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND Timestamp >= toDateTime({p5:Int64}) AND Timestamp < toDateTime({p6:Int64}) AND (Timestamp < toDateTime({p7:Int64}) OR Timestamp >= toDateTime({p8:Int64}) OR InMinuteRollups = false)
UNION ALL SELECT Timestamp, Value, ServiceName, SeriesId, StackId FROM `otel`.`otel_profile_samples_1m` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND Timestamp >= toDateTime({p9:Int64}) AND Timestamp < toDateTime({p10:Int64})) AS u LEFT JOIN (SELECT SeriesId, any(K8sPodName) AS r0 FROM `otel`.`otel_profile_series` WHERE TenantId = {p11:String} GROUP BY SeriesId) AS r ON u.SeriesId = r.SeriesId GROUP BY t, g0 ORDER BY t
-- parameters
-- p0 = "acme"
-- p1 = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
-- p2 = "acme"
-- p3 = "regexp.Compile"
-- p4 = "acme"
-- p5 = "1795168740"
-- p6 = "1795179570"
-- p7 = "1795168740"
-- p8 = "1795179540"
-- p9 = "1795168740"
-- p10 = "1795179540"
-- p11 = "acme"
-- p12 = "60"
