SELECT FrameId, FunctionName, SystemName, MappingFile, FileName, Line, Address, toString(BuildId), toUInt64(0), toUInt64(0), toString(FrameType) FROM `otel`.`otel_profile_frames` WHERE TenantId = {p0:String} AND ServiceName IN ({p1:String}) AND FrameId IN {p2:Array(UInt64)}
-- parameters
-- p0 = ""
-- p1 = "checkout"
-- p2 = "[3,1,2]"
