SELECT FrameId, toString(MappingFile), toString(BuildId), NOT (FunctionName = '' AND SystemName = '' AND FileName = ''), Address, MappingStart, MappingOffset FROM `otel`.`otel_profile_frames` WHERE TenantId = {p0:String} AND ServiceName IN ({p1:String}) AND (MappingFile != '' OR BuildId != '') AND FrameId IN {p2:Array(UInt64)}
-- parameters
-- p0 = "acme"
-- p1 = "checkout"
-- p2 = "[3,1,2]"
