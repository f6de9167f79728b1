SELECT t, sum(a) AS v, sum(b) AS d FROM (SELECT t, v / n AS a, d / n AS b FROM (SELECT *, length(groupUniqArrayArray(ts) OVER (PARTITION BY t, s)) AS n FROM (SELECT toInt64(toUnixTimestamp(toStartOfInterval(u.Timestamp, toIntervalSecond({p7:Int64})))) AS t, u.SeriesId AS s, sum(if(u.StackId IN (SELECT StackId FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p4:String} AND hasAny(FrameIds, (SELECT groupUniqArray(FrameId) FROM (SELECT FrameId FROM `otel`.`otel_profile_frames` WHERE TenantId = {p2:String} AND multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))) = {p3:String})))), u.Value, 0)) AS v, sum(u.Value) AS d, groupUniqArray(u.Timestamp) AS ts FROM (SELECT Timestamp, Value, ServiceName, SeriesId, StackId FROM `otel`.`otel_profile_samples` WHERE TenantId = {p0:String} AND ProfileType = {p1:String} AND Timestamp >= toDateTime({p5:Int64}) AND Timestamp < toDateTime({p6:Int64})) AS u GROUP BY t, s))) GROUP BY t ORDER BY t
-- parameters
-- p0 = ""
-- p1 = "memory:inuse_space:bytes:space:bytes"
-- p2 = ""
-- p3 = "bytes.growSlice"
-- p4 = ""
-- p5 = "1795168740"
-- p6 = "1795179570"
-- p7 = "60"
