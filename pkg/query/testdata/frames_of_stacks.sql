SELECT FrameId, FunctionName, SystemName, MappingFile, FileName, Line, Address, toString(BuildId), MappingStart, MappingOffset, toString(FrameType) FROM `otel`.`otel_profile_frames` WHERE TenantId = {p0:String} AND ServiceName IN ({p1:String}) AND FrameId IN (SELECT arrayJoin(FrameIds) FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p2:String} AND ServiceName IN ({p3:String}) AND StackId IN {p4:Array(UInt64)})
-- parameters
-- p0 = "acme"
-- p1 = "checkout"
-- p2 = "acme"
-- p3 = "checkout"
-- p4 = "[3,1,2]"
