package flame

// Unit maps a profile type's sample unit (the third part of a profile type
// id such as process_cpu:cpu:nanoseconds:cpu:nanoseconds) to a Grafana unit.
// Units Grafana does not know under the same name pass through unchanged.
func Unit(sampleUnit string) string {
	switch sampleUnit {
	case "nanoseconds":
		return "ns"
	case "count":
		return "short"
	case "bytes":
		return "bytes"
	default:
		return sampleUnit
	}
}
