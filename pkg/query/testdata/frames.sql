SELECT FrameId, any(FunctionName), any(SystemName), any(FileName), any(Line), any(MappingFile), any(Address) FROM `otel`.`otel_profile_frames` WHERE TenantId = {p0:String} AND ServiceName IN ({p1:String}) AND FrameId IN {p2:Array(UInt64)} GROUP BY FrameId
-- parameters
-- p0 = ""
-- p1 = "checkout"
-- p2 = "[3,1,2]"
