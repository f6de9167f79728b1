package pyroscopeapi

import "strconv"

func strconvFormat(v int64) string { return strconv.FormatInt(v, 10) }
