SELECT BuildId, argMax(FileName, UpdatedAt), argMax(Source, UpdatedAt), toInt64(toUnixTimestamp64Milli(max(UpdatedAt))), argMax(SegmentOffsets, UpdatedAt), argMax(SegmentVaddrs, UpdatedAt), argMax(SegmentSizes, UpdatedAt) FROM `otel`.`otel_profile_executables` WHERE TenantId = {p0:String} AND BuildId IN {p1:Array(String)} GROUP BY BuildId
-- parameters
-- p0 = "acme"
-- p1 = "['3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8','abc/def']"
