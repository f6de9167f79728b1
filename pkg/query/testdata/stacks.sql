SELECT StackId, arrayStringConcat(arrayMap(x -> rightPad(reinterpretAsString(x), 8, char(0)), FrameIds)) FROM `otel`.`otel_profile_stacks` WHERE TenantId = {p0:String} AND ServiceName IN ({p1:String}) AND StackId IN {p2:Array(UInt64)}
-- parameters
-- p0 = ""
-- p1 = "checkout"
-- p2 = "[3,1,2]"
