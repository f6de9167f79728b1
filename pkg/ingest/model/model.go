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

// Series is one resource: the attributes all its samples share.
type Series struct {
	Tenant     string
	Service    string
	ID         uint64
	Attributes map[string]string
}

// NewSeries builds a series and its id from tenant, service and attributes.
func NewSeries(tenant, service string, attrs map[string]string) *Series {
	return &Series{Tenant: tenant, Service: service, ID: SeriesID(tenant, service, attrs), Attributes: attrs}
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
	Address uint64
	// MappingStart and MappingOffset are the placement of the frame's
	// mapping (its memory start and file offset), kept with Address for
	// unsymbolized frames so that the query can turn the address into the
	// executable's virtual address (see symbols.VA); 0 otherwise. They are
	// not part of the frame's id.
	MappingStart, MappingOffset uint64
	FrameType                   string
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
	var arr [256]byte
	b := arr[:0]
	for _, s := range [...]string{f.FunctionName, f.SystemName, f.FileName, f.MappingFile, f.BuildID, f.FrameType} {
		b = appendField(b, s)
	}
	b = binary.LittleEndian.AppendUint32(b, f.Line)
	b = binary.LittleEndian.AppendUint32(b, f.Column)
	b = binary.LittleEndian.AppendUint64(b, f.Address)
	if f.Inlined {
		b = append(b, 1)
	}
	f.ID = xxhash.Sum64(b)
}

// StackID hashes frame ids, root first.
func StackID(frameIDs []uint64) uint64 {
	var arr [512]byte
	b := arr[:0]
	for _, id := range frameIDs {
		b = binary.LittleEndian.AppendUint64(b, id)
	}
	return xxhash.Sum64(b)
}

// Stack is a deduplicated stack: frame ids, root first.
type Stack struct {
	ID       uint64
	FrameIDs []uint64
}

// Sample is one row of the samples table: the value of every event of one
// second that shares series, stack, trace link and sample attributes. What
// many rows share lives in a SampleMeta, so a row stays small.
type Sample struct {
	// Timestamp is in Unix seconds.
	Timestamp int64
	StackID   uint64
	Value     int64
	Meta      *SampleMeta
	// Attributes are the sample's attributes (profile attributes merged in),
	// sorted by key. Rows share the backing arrays: do not modify.
	Attributes []KV
}

// SampleMeta holds what many sample rows share: series, profile type and
// trace link.
type SampleMeta struct {
	Series      *Series
	ProfileType string
	// TraceID and SpanID are hex, as otel_traces stores them ("" unset).
	TraceID, SpanID string
}

// KV is one attribute.
type KV struct{ Key, Value string }

// SortedKVs turns a map into attributes sorted by key.
func SortedKVs(m map[string]string) []KV {
	if len(m) == 0 {
		return nil
	}
	out := make([]KV, 0, len(m))
	for k, v := range m {
		out = append(out, KV{k, v})
	}
	slices.SortFunc(out, func(a, b KV) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// KVMap turns attributes into a map.
func KVMap(kvs []KV) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// ServiceKey names a tenant's service; stacks and frames are stored per service.
type ServiceKey struct {
	Tenant, Service string
}

// Symbols are the stacks and frames of one service. An id may appear
// more than once (ids are content hashes: equal ids are equal rows).
type Symbols struct {
	Stacks []Stack
	Frames []*Frame
}

// ByID indexes the symbols by id.
func (s *Symbols) ByID() (stacks map[uint64]*Stack, frames map[uint64]*Frame) {
	stacks = make(map[uint64]*Stack, len(s.Stacks))
	for i := range s.Stacks {
		stacks[s.Stacks[i].ID] = &s.Stacks[i]
	}
	frames = make(map[uint64]*Frame, len(s.Frames))
	for _, f := range s.Frames {
		frames[f.ID] = f
	}
	return stacks, frames
}

// Profile is one profile as it came in (an OTLP Profile message of one
// sample type, of one resource and scope): a row of the profiles table,
// which lists the single profiles behind the sample rows.
type Profile struct {
	Series      *Series
	ProfileType string
	// TimeNanos and DurationNanos are the profile's time_unix_nano (the
	// ingest's clock when it had none) and duration_nano.
	TimeNanos     uint64
	DurationNanos uint64
	// Period is the profile's period, in its period type's unit.
	Period int64
	// ProfileID is the profile_id in hex ("" when it had none).
	ProfileID string
	// FirstSecond and LastSecond are the first and last second (Unix) of
	// its sample rows: where its flame graph reads.
	FirstSecond, LastSecond int64
	// Events counts its events (sample timestamps or values), Total sums
	// its values as stored (in the profile type's unit).
	Events, Total int64
}

// Batch is what one or more export requests contribute to each table.
type Batch struct {
	Samples []Sample
	// Profiles are the profiles the samples came in, one per profile
	// with sample rows.
	Profiles []Profile
	Series   []*Series
	Symbols  map[ServiceKey]*Symbols
	// Events counts the profiling events (sample timestamps or values)
	// behind the sample rows.
	Events int64
	// DedupToken, when set, identifies the request the batch came from
	// across deliveries (a hash of its content, say): the writer then
	// inserts the batch's samples in an insert of their own under this
	// insert_deduplication_token, so that a request delivered again after
	// its rows were committed (a Collector's persistent queue replaying
	// after a crash) is not stored twice. Empty: the samples share an
	// insert with other requests' under a token of the writer's.
	DedupToken string
	// ReleaseSymbols, when set, gives back the memory that Symbols'
	// stacks and frames point into (the converter's arrays, for the next
	// conversion). A writer calls it once it copied out the symbols it
	// keeps and will not read the original ones again; nothing may read
	// them after the call.
	ReleaseSymbols func()
}

// NewBatch returns an empty batch.
func NewBatch() *Batch {
	return &Batch{Symbols: map[ServiceKey]*Symbols{}}
}

// ServiceSymbols returns the symbols of a service, creating them.
func (b *Batch) ServiceSymbols(k ServiceKey) *Symbols {
	s, ok := b.Symbols[k]
	if !ok {
		s = &Symbols{}
		b.Symbols[k] = s
	}
	return s
}

// writeField writes a length-prefixed string, so that field boundaries
// cannot shift between hashes.
func writeField(h *xxhash.Digest, s string) {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(s)))
	_, _ = h.Write(n[:])
	_, _ = h.WriteString(s)
}

// appendField appends a length-prefixed string.
func appendField(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// Executable is a mapped file that committed frames left unsymbolized: its
// build id and the mapping's file name (pipeline.UnsymbolizedSink hands
// them to the symbol fetchers).
type Executable struct {
	BuildID, File string
}
