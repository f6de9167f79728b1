// Package profiletype names profiles Pyroscope-style,
// name:sampleType:sampleUnit:periodType:periodUnit, from an OTLP profile's
// sample and period types. The ingest stores the id; the datasource
// derives the same id from the Collector exporter's table, so that both
// schemas answer the same queries.
package profiletype

import "strings"

// CPUTime is the id of CPU time profiles, in nanoseconds.
const CPUTime = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

// IsCPUCount reports whether a profile counts samples on a CPU-time period
// (the eBPF profiler's shape), which ID can turn into CPU time.
func IsCPUCount(sampleType, sampleUnit, periodType, periodUnit string) bool {
	return sampleType == "samples" && sampleUnit == "count" && periodType == "cpu" && periodUnit == "nanoseconds"
}

// IsCPUTime reports whether a profile sends CPU time itself: cpu
// nanoseconds on a cpu/nanoseconds period (a pprof-style sender).
func IsCPUTime(sampleType, sampleUnit, periodType, periodUnit string) bool {
	return sampleType == "cpu" && sampleUnit == "nanoseconds" && periodType == "cpu" && periodUnit == "nanoseconds"
}

// IsGauge reports whether a profile's values are an amount at the
// profile's time, a snapshot, rather than events counted over its
// duration: memory in use (inuse_space, inuse_objects) and the goroutines
// alive (goroutine, goroutines). Over a time interval a gauge is the
// average of its snapshots; the other profiles add up (a rate per second).
// sampleType is the second part of a profile type id.
func IsGauge(sampleType string) bool {
	switch sampleType {
	case "inuse_space", "inuse_objects", "goroutine", "goroutines":
		return true
	}
	return false
}

// ID names a profile and returns the factor that turns its values into the
// named unit. With cpuAsTime, samples/count on a cpu/nanoseconds period
// of a known length count CPU time (count × period) under CPUTime.
func ID(sampleType, sampleUnit, periodType, periodUnit string, period int64, cpuAsTime bool) (string, int64) {
	if cpuAsTime && IsCPUCount(sampleType, sampleUnit, periodType, periodUnit) && period > 0 {
		return CPUTime, period
	}
	if periodType == "" {
		periodType, periodUnit = sampleType, sampleUnit
	}
	parts := []string{name(sampleType, periodType), sampleType, sampleUnit, periodType, periodUnit}
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, ":", "_")
	}
	return strings.Join(parts, ":"), 1
}

// name is the first part of a profile type id.
func name(sampleType, periodType string) string {
	switch {
	case periodType == "cpu":
		return "process_cpu"
	case periodType == "space", strings.HasPrefix(sampleType, "alloc_"), strings.HasPrefix(sampleType, "inuse_"):
		return "memory"
	case sampleType == "goroutine", sampleType == "goroutines":
		return "goroutines"
	case periodType != "":
		return periodType
	case sampleType != "":
		return sampleType
	}
	return "unknown"
}
