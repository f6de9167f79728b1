package symbols

// VA turns a frame's address into the executable's virtual address, the
// address space of the stored ranges, from its mapping's start and file
// offset and the executable's PT_LOAD segments:
//
//	file offset f = address - mappingStart + mappingOffset
//	va = f - seg.Offset + seg.Vaddr, for the segment with seg.Offset <= f < seg.Offset + seg.Filesz
//
// This holds for pprof-style runtime addresses and for the OpenTelemetry
// eBPF profiler, whose mapping starts are already virtual addresses (then
// va = address). With an unknown placement (mappingStart and mappingOffset
// both 0) the address is taken as it is. No one is subtracted: the eBPF
// profiler already points return addresses into the call. ok is false
// when the address lies outside the mapping's file (below the mapping, or
// in no segment).
func VA(address, mappingStart, mappingOffset uint64, segments []Segment) (va uint64, ok bool) {
	if mappingStart == 0 && mappingOffset == 0 {
		return address, true
	}
	if address < mappingStart {
		return 0, false
	}
	f := address - mappingStart + mappingOffset
	if f < mappingOffset { // wrapped
		return 0, false
	}
	for _, s := range segments {
		if s.Offset <= f && f-s.Offset < s.Filesz {
			return f - s.Offset + s.Vaddr, true
		}
	}
	return 0, false
}
