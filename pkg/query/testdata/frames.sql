SELECT FrameId, multiIf(FunctionName != '', FunctionName, SystemName != '', SystemName, MappingFile != '', concat('[', basename(MappingFile), ']'), FileName != '', FileName, concat('0x', replaceRegexpOne(lower(hex(Address)), '^0(.)', '\\1'))), if(FunctionName = '' AND SystemName = '' AND FileName = '' AND BuildId != '' AS n, toString(BuildId), ''), if(n, Address, 0), if(n, MappingStart, 0), if(n, MappingOffset, 0), toString(FrameType) FROM `otel`.`otel_profile_frames` WHERE TenantId = {p0:String} AND ServiceName IN ({p1:String}) AND FrameId IN {p2:Array(UInt64)}
-- parameters
-- p0 = ""
-- p1 = "checkout"
-- p2 = "[3,1,2]"
