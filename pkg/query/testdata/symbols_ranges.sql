SELECT BuildId, Start, End, arrayStringConcat(Functions, char(0)), arrayStringConcat(Files, char(0)), arrayStringConcat(arrayMap(x -> rightPad(reinterpretAsString(x), 4, char(0)), Lines)) FROM `otel`.`otel_profile_symbols` WHERE TenantId = {p1:String} AND BuildId IN {p0:Array(String)} AND Version = {p2:Array(UInt64)}[indexOf({p0:Array(String)}, BuildId)] ORDER BY BuildId, Start
-- parameters
-- p0 = "['3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8','ffee']"
-- p1 = "acme"
-- p2 = "[1764063263123,1764063264000]"
