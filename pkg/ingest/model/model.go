// Package model holds the rows the ingest path produces, one type per
// Flamehouse table, and the ids that tie them together.
package model

import (
	"encoding/binary"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Labels are the resource attributes that every sample row carries as
// LowCardinality columns, for filtering without a join.
type Labels struct {
	ServiceNamespace  string
	ServiceInstanceID string
	K8sClusterName    string
	K8sNamespaceName  string
	K8sPodName        string
	K8sNodeName       string
	K8sContainerName  string
}

// LabelsFrom picks the promoted attributes out of a resource attribute map.
func LabelsFrom(attrs map[string]string) Labels {
	return Labels{
		ServiceNamespace:  attrs["service.namespace"],
		ServiceInstanceID: attrs["service.instance.id"],
		K8sClusterName:    attrs["k8s.cluster.name"],
		K8sNamespaceName:  attrs["k8s.namespace.name"],
		K8sPodName:        attrs["k8s.pod.name"],
		K8sNodeName:       attrs["k8s.node.name"],
		K8sContainerName:  attrs["k8s.container.name"],
	}
}

// Series is one resource: the attributes all its samples share.
type Series struct {
	Tenant     string
	Service    string
	ID         uint64
	Attributes map[string]string
	Labels     Labels
}

// NewSeries builds a series and its id from tenant, service and attributes.
func NewSeries(tenant, service string, attrs map[string]string) *Series {
	return &Series{Tenant: tenant, Service: service, ID: SeriesID(tenant, service, attrs), Attributes: attrs, Labels: LabelsFrom(attrs)}
}

// SeriesID hashes tenant, service and the sorted attributes.
func SeriesID(tenant, service string, attrs map[string]string) uint64 {
	h := xxhash.New()
	writeField(h, tenant)
	writeField(h, service)
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		writeField(h, k)
		writeField(h, attrs[k])
	}
	return h.Sum64()
}

// Frame is one frame of a stack: a function at a source line, or an
// unsymbolized address in a mapped file.
type Frame struct {
	ID           uint64
	FunctionName string
	SystemName   string
	FileName     string
	Line         uint32
	Column       uint32
	// Inlined is set for frames that were inlined into their caller.
	Inlined     bool
	MappingFile string
	BuildID     string
	// Address is kept for unsymbolized frames only (no function, file or line).
	Address   uint64
	FrameType string
}

// Symbolized reports whether the frame names a function or a file.
func (f *Frame) Symbolized() bool {
	return f.FunctionName != "" || f.SystemName != "" || f.FileName != ""
}

// Label is the name a flame graph shows for the frame: the function name,
// else its system name, else "file:line", else, for an unsymbolized frame,
// "mapping+0xaddress" (or "0xaddress" without a mapping).
func (f *Frame) Label() string {
	switch {
	case f.FunctionName != "":
		return f.FunctionName
	case f.SystemName != "":
		return f.SystemName
	case f.FileName != "":
		return f.FileName + ":" + strconv.FormatUint(uint64(f.Line), 10)
	case f.MappingFile != "":
		return path.Base(f.MappingFile) + "+0x" + strconv.FormatUint(f.Address, 16)
	}
	return "0x" + strconv.FormatUint(f.Address, 16)
}

// ComputeID sets the frame's id from every field that identifies it.
func (f *Frame) ComputeID() {
	h := xxhash.New()
	writeField(h, f.FunctionName)
	writeField(h, f.SystemName)
	writeField(h, f.FileName)
	writeField(h, f.MappingFile)
	writeField(h, f.BuildID)
	writeField(h, f.FrameType)
	var b [21]byte
	binary.LittleEndian.PutUint32(b[0:], f.Line)
	binary.LittleEndian.PutUint32(b[4:], f.Column)
	binary.LittleEndian.PutUint64(b[8:], f.Address)
	if f.Inlined {
		b[16] = 1
	}
	_, _ = h.Write(b[:])
	f.ID = h.Sum64()
}

// StackID hashes frame ids, root first.
func StackID(frameIDs []uint64) uint64 {
	h := xxhash.New()
	var b [8]byte
	for _, id := range frameIDs {
		binary.LittleEndian.PutUint64(b[:], id)
		_, _ = h.Write(b[:])
	}
	return h.Sum64()
}

// Stack is a deduplicated stack: frame ids, root first.
type Stack struct {
	ID       uint64
	FrameIDs []uint64
}

// Sample is one row of the samples table: the value of every event of one
// second that shares series, stack, trace link and sample attributes.
type Sample struct {
	// Timestamp is in Unix seconds.
	Timestamp   int64
	ProfileType string
	StackID     uint64
	Series      *Series
	Value       int64
	TraceID     string
	SpanID      string
	Attributes  map[string]string
}

// Batch is what one export request contributes to each table. Stacks,
// frames and series are deduplicated within the batch.
type Batch struct {
	Samples []Sample
	Series  []*Series
	Stacks  map[StackKey]*Stack
	Frames  map[FrameKey]*Frame
	// Events counts the profiling events (sample timestamps or values)
	// behind the sample rows.
	Events int64
}

// StackKey identifies a stack within a tenant and service.
type StackKey struct {
	Tenant, Service string
	ID              uint64
}

// FrameKey identifies a frame within a tenant and service.
type FrameKey struct {
	Tenant, Service string
	ID              uint64
}

// NewBatch returns an empty batch.
func NewBatch() *Batch {
	return &Batch{Stacks: map[StackKey]*Stack{}, Frames: map[FrameKey]*Frame{}}
}

// Merge appends other's rows to b (ids are content hashes, so maps merge).
func (b *Batch) Merge(other *Batch) {
	b.Samples = append(b.Samples, other.Samples...)
	b.Series = append(b.Series, other.Series...)
	for k, v := range other.Stacks {
		b.Stacks[k] = v
	}
	for k, v := range other.Frames {
		b.Frames[k] = v
	}
	b.Events += other.Events
}

// writeField writes a length-prefixed string, so that field boundaries
// cannot shift between hashes.
func writeField(h *xxhash.Digest, s string) {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(s))) //nolint:gosec // G115: strings are far below 4 GiB
	_, _ = h.Write(n[:])
	_, _ = h.WriteString(s)
}

// AttributesKey renders attributes canonically (sorted), for grouping.
func AttributesKey(attrs map[string]string) string {
	if len(attrs) == 0 {
		return ""
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(attrs[k])
		b.WriteByte(0)
	}
	return b.String()
}
