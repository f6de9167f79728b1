package ebpfagent

import (
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// rawMessage is a protobuf message's bytes, passed through as they are.
type rawMessage []byte

// rawCodec is gRPC's "proto" codec for the proxy: a *rawMessage is passed
// through unchanged (the bytes the sender encoded go to the receivers,
// the receivers' answers back), other messages are protobuf-encoded.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *rawMessage:
		return mem.BufferSlice{mem.SliceBuffer(*m)}, nil
	case proto.Message:
		b, err := proto.Marshal(m)
		return mem.BufferSlice{mem.SliceBuffer(b)}, err
	}
	return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *rawMessage:
		*m = data.Materialize()
		return nil
	case proto.Message:
		return proto.Unmarshal(data.Materialize(), m)
	}
	return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
}
