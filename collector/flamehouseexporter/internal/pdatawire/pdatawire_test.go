package pdatawire

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/otlpwire"
)

var start = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// corpus is wire requests of every shape the tests know: profilegen's
// service report and node reports (the eBPF profiler's shape), and a
// request using every field and value kind.
func corpus(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	add := func(name string, req *collectorpb.ExportProfilesServiceRequest) {
		b, err := proto.Marshal(req)
		require.NoError(t, err)
		out[name] = b
	}
	g := profilegen.New(profilegen.DefaultConfig())
	add("service-report", g.Report(start))
	add("node-report", g.NodeReports(start, 10)[0])
	for name, req := range small() {
		add(name, req)
	}
	b, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(everything())
	require.NoError(t, err)
	out["every-field"] = b
	return out
}

// small is profilegen's reports at a few kilobytes, for the fuzzer to
// mutate quickly.
func small() map[string]*collectorpb.ExportProfilesServiceRequest {
	cfg := profilegen.DefaultConfig()
	cfg.SamplesPerSecond, cfg.Pods, cfg.Stacks, cfg.Locations, cfg.Functions, cfg.ReportInterval = 2, 2, 8, 16, 8, 5*time.Second
	g := profilegen.New(cfg)
	return map[string]*collectorpb.ExportProfilesServiceRequest{"small-report": g.Report(start), "small-node-report": g.NodeReports(start, 1)[0]}
}

// everything is a request with every field set and every value kind among
// its attributes, including an out-of-range index (for the conversion to
// reject in the same way on either path).
func everything() pprofile.Profiles {
	pd := pprofile.NewProfiles()
	d := pd.Dictionary()
	d.StringTable().Append("", "cpu", "nanoseconds", "main", "main.go", "libc.so", "thread.name", "worker", "bytes")
	// Index 0 of every table is its zero-value sentinel.
	d.MappingTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	d.LinkTable().AppendEmpty()
	d.AttributeTable().AppendEmpty()

	m := d.MappingTable().AppendEmpty()
	m.SetMemoryStart(0x1000)
	m.SetMemoryLimit(0x2000)
	m.SetFileOffset(0x10)
	m.SetFilenameStrindex(5)
	m.AttributeIndices().Append(1)
	f := d.FunctionTable().AppendEmpty()
	f.SetNameStrindex(3)
	f.SetSystemNameStrindex(3)
	f.SetFilenameStrindex(4)
	f.SetStartLine(7)
	loc := d.LocationTable().AppendEmpty()
	loc.SetMappingIndex(1)
	loc.SetAddress(0x1234)
	ln := loc.Lines().AppendEmpty()
	ln.SetFunctionIndex(1)
	ln.SetLine(12)
	ln.SetColumn(3)
	loc.AttributeIndices().Append(2)
	d.StackTable().AppendEmpty().LocationIndices().Append(1, 1)
	link := d.LinkTable().AppendEmpty()
	link.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	link.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	a := d.AttributeTable().AppendEmpty() // 1
	a.SetKeyStrindex(6)
	a.Value().SetStr("worker")
	a = d.AttributeTable().AppendEmpty() // 2
	a.SetKeyStrindex(8)
	a.SetUnitStrindex(8)
	a.Value().SetInt(42)
	a = d.AttributeTable().AppendEmpty() // 3
	a.SetKeyStrindex(7)
	nested := a.Value().SetEmptyMap()
	nested.PutDouble("d", 1.5)
	nested.PutBool("b", true)
	nested.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 2})
	nested.PutEmpty("empty")
	s := nested.PutEmptySlice("list")
	s.AppendEmpty().SetStr("x")
	s.AppendEmpty().SetEmptyMap().PutInt("deep", 1)
	d.AttributeTable().AppendEmpty().SetKeyStrindex(1) // 4: an empty value

	rp := pd.ResourceProfiles().AppendEmpty()
	rp.SetSchemaUrl("https://opentelemetry.io/schemas/1.30.0")
	res := rp.Resource()
	res.Attributes().PutStr("service.name", "checkout")
	res.Attributes().PutStr("k8s.pod.name", "checkout-1")
	res.Attributes().PutEmpty("no.value")
	res.SetDroppedAttributesCount(2)
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.SetSchemaUrl("scope-schema")
	sp.Scope().SetName("ebpf")
	sp.Scope().SetVersion("1.0")
	sp.Scope().Attributes().PutInt("n", 1)
	sp.Scope().SetDroppedAttributesCount(1)
	for i := range 2 {
		p := sp.Profiles().AppendEmpty()
		p.SampleType().SetTypeStrindex(1)
		p.SampleType().SetUnitStrindex(2)
		p.PeriodType().SetTypeStrindex(1)
		p.PeriodType().SetUnitStrindex(2)
		p.SetPeriod(10_000_000)
		p.SetTime(pcommon.NewTimestampFromTime(start))
		p.SetDurationNano(uint64(time.Minute))
		p.SetProfileID(pprofile.ProfileID{byte(i + 1), 2, 3})
		p.SetDroppedAttributesCount(3)
		p.SetOriginalPayloadFormat("pprof")
		p.OriginalPayload().FromRaw([]byte("payload"))
		p.AttributeIndices().Append(1)
		sm := p.Samples().AppendEmpty()
		sm.SetStackIndex(1)
		sm.SetLinkIndex(1)
		sm.AttributeIndices().Append(1, 3, 4)
		sm.Values().Append(10_000_000, 20_000_000)
		sm.TimestampsUnixNano().Append(uint64(start.UnixNano()), uint64(start.Add(time.Second).UnixNano()))
		bad := p.Samples().AppendEmpty()
		bad.SetStackIndex(int32(7 * i)) // the second profile's is out of range
		bad.Values().Append(1)
	}
	return pd
}

func TestRequestIsWhatDecodeGives(t *testing.T) {
	for name, wire := range corpus(t) {
		t.Run(name, func(t *testing.T) {
			res := requireSameAsDecode(t, wire)
			require.NotNil(t, res, "taken natively")
			assert.NotEmpty(t, res.Batch.Samples)
			if name == "every-field" {
				require.Len(t, res.Rejected, 1, "the out-of-range stack index")
			}
		})
	}
}

// requireSameAsDecode requires Request of pdata's decoding of wire to equal
// Decode of Encode's encoding once adjusted, and both to convert to the
// same rows and rejections, the wire way as the pipeline takes it
// (convert.Protobuf with the adjustment); the result outlives the
// Request's release. It returns the conversion's result when Request took
// the request natively, nil when pdata refuses wire or Request declines it
// (the wire way must then still answer without failing).
func requireSameAsDecode(t *testing.T, wire []byte) *convert.Result {
	t.Helper()
	pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(wire)
	if err != nil {
		return nil
	}
	opts := convert.DefaultOptions("t")
	opts.Now = func() time.Time { return start.Add(time.Minute) }
	native, ok := Request(pd)
	if !ok {
		encoded, adjust := Encode(pd)
		opts.AdjustDecoded = adjust
		res, _ := convert.Protobuf(encoded, opts)
		if res != nil {
			res.Release()
		}
		return nil
	}
	// Back to the pool once compared, so that the next cases and fuzz
	// inputs are built in tables that held other requests.
	defer Release(native)
	got, gotErr := convert.Decoded(native, opts)
	// Encode rewrites pd's attributes: after the native conversion, as
	// the exporter does it only when Request declined.
	encoded, adjust := Encode(pd)
	decoded, err := otlpwire.Decode(encoded)
	require.NoError(t, err, "Request took a request that Decode refuses")
	adjust(decoded)
	require.Equal(t, expand(decoded), expand(native))

	opts.AdjustDecoded = adjust
	wantRes, wantErr := convert.Protobuf(encoded, opts)
	require.Equal(t, wantErr, gotErr)
	for _, res := range []*convert.Result{wantRes, got} {
		if res != nil {
			res.Batch.ReleaseSymbols = nil // functions never compare equal
		}
	}
	require.Equal(t, wantRes, got)
	return got
}

func TestRequestLeavesToTheWireWhatPdataHides(t *testing.T) {
	cases := map[string]func(pprofile.Profiles){
		"an attribute's string_value_strindex (reads as empty)": onTheWire(func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.AttributeTable[4].Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: 7}}
		}),
		"string_value_strindex in the attribute sentinel (refused by the wire way)": onTheWire(func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.AttributeTable[0].Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: 7}}
		}),
		"a nested string_value_strindex": onTheWire(func(r *collectorpb.ExportProfilesServiceRequest) {
			kv := r.Dictionary.AttributeTable[3].Value.GetKvlistValue().Values
			kv[0].Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: 7}}
		}),
		"a resource attribute's key_strindex out of range (pdata leaves it)": onTheWire(func(r *collectorpb.ExportProfilesServiceRequest) {
			r.ResourceProfiles[0].Resource.Attributes[0] = &commonpb.KeyValue{KeyStrindex: 9999}
		}),
		"a resource attribute's string_value_strindex out of range (pdata leaves it)": onTheWire(func(r *collectorpb.ExportProfilesServiceRequest) {
			r.ResourceProfiles[0].Resource.Attributes[0].Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: 9999}}
		}),
		"empty resource attribute key (key_strindex reads as empty)": func(pd pprofile.Profiles) {
			pd.ResourceProfiles().At(0).Resource().Attributes().PutStr("", "v")
		},
		"invalid UTF-8 in the string table": func(pd pprofile.Profiles) {
			pd.Dictionary().StringTable().Append("bad\xff")
		},
		"invalid UTF-8 in a nested value": func(pd pprofile.Profiles) {
			pd.Dictionary().AttributeTable().At(3).Value().Map().PutStr("s", "\xc3")
		},
		"entity references": func(pd pprofile.Profiles) {
			entity.ResourceEntityRefs(pd.ResourceProfiles().At(0).Resource()).AppendEmpty().SetType("service")
		},
		"nesting deeper than the native bound": func(pd pprofile.Profiles) {
			m := pd.Dictionary().AttributeTable().At(3).Value().Map()
			for range maxNesting {
				m = m.PutEmptyMap("m")
			}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			pd := everything()
			_, ok := Request(pd)
			require.True(t, ok, "unchanged")
			change(pd)
			_, ok = Request(pd)
			assert.False(t, ok)
		})
	}
}

// onTheWire changes a request where only its wire form can: it encodes pd,
// changes the generated message and decodes the result into pd.
func onTheWire(change func(*collectorpb.ExportProfilesServiceRequest)) func(pprofile.Profiles) {
	return func(pd pprofile.Profiles) {
		wire, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(pd)
		if err != nil {
			panic(err)
		}
		var r collectorpb.ExportProfilesServiceRequest
		if err := proto.Unmarshal(wire, &r); err != nil {
			panic(err)
		}
		change(&r)
		if wire, err = proto.Marshal(&r); err != nil {
			panic(err)
		}
		changed, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(wire)
		if err != nil {
			panic(err)
		}
		changed.CopyTo(pd)
	}
}

// FuzzRequest: for any bytes pdata decodes, Request either declines or
// gives exactly what Decode gives for pdata's encoding, and the same rows.
func FuzzRequest(f *testing.F) {
	for _, req := range small() {
		wire, err := proto.Marshal(req)
		require.NoError(f, err)
		f.Add(wire)
	}
	wire, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(everything())
	require.NoError(f, err)
	f.Add(wire)
	f.Fuzz(func(t *testing.T, wire []byte) {
		requireSameAsDecode(t, wire)
	})
}

// expand is a Request as nested values, with every Span replaced by the
// elements it refers to, byte slices compared by content and references
// into the string table resolved, so that two Requests compare equal
// whatever order their shared arrays were filled in.
func expand(r *otlpwire.Request) any {
	return expandValue(r, reflect.ValueOf(*r))
}

var (
	keyValueType = reflect.TypeFor[otlpwire.KeyValue]()
	anyValueType = reflect.TypeFor[otlpwire.AnyValue]()
)

// resolved returns v with a KeyValue's key_strindex or an AnyValue's
// string_value_strindex replaced by the string it refers to, as the
// conversion reads them.
func resolved(r *otlpwire.Request, v reflect.Value) reflect.Value {
	str := func(i int32) (string, bool) {
		if i > 0 && int(i) < len(r.Dictionary.Strings) {
			return r.Dictionary.Strings[i], true
		}
		return "", false
	}
	switch v.Type() {
	case keyValueType:
		kv := v.Interface().(otlpwire.KeyValue) // checked by type
		if s, ok := str(kv.KeyStrindex); ok && kv.Key == "" {
			kv.Key, kv.KeyStrindex = s, 0
		}
		return reflect.ValueOf(kv)
	case anyValueType:
		av := v.Interface().(otlpwire.AnyValue) // checked by type
		if s, ok := str(av.Strindex); ok && av.Kind == otlpwire.KindStringStrindex {
			av.Kind, av.Str, av.Strindex = otlpwire.KindString, s, 0
		}
		return reflect.ValueOf(av)
	}
	return v
}

var (
	spanType  = reflect.TypeFor[otlpwire.Span]()
	bytesType = reflect.TypeFor[[]byte]()
)

func expandValue(r *otlpwire.Request, v reflect.Value) any {
	switch {
	case v.Type() == bytesType:
		return string(v.Bytes())
	case v.Kind() == reflect.Slice:
		out := make([]any, v.Len())
		for i := range v.Len() {
			out[i] = expandValue(r, v.Index(i))
		}
		return out
	case v.Kind() != reflect.Struct:
		return v.Interface()
	}
	v = resolved(r, v)
	out := map[string]any{}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		switch fv := v.Field(i); {
		case v.Type() == reflect.TypeFor[otlpwire.Request]() && (name == "Int32s" || name == "Int64s" || name == "Uint64s" || name == "Lines"):
			// reached through the Spans
		case fv.Type() == spanType:
			out[name] = expandValue(r, reflect.ValueOf(spanElements(r, name, fv.Interface().(otlpwire.Span)))) // checked by type
		default:
			out[name] = expandValue(r, fv)
		}
	}
	return out
}

// spanElements resolves a Span field by its name.
func spanElements(r *otlpwire.Request, field string, s otlpwire.Span) any {
	switch field {
	case "Values":
		return r.Int64Slice(s)
	case "TimestampsUnixNano":
		return r.Uint64Slice(s)
	case "Lines":
		return r.LineSlice(s)
	default: // AttributeIndices, LocationIndices
		return r.Int32Slice(s)
	}
}

// TestEncodeAnswersAsPdataHoldsIt: an index just past the string table is
// out of range however the request goes, although pdata's encoder appends
// the resource attributes' strings there; and a hidden out-of-range key
// reference stays the sender's.
func TestEncodeAnswersAsPdataHoldsIt(t *testing.T) {
	pd := everything()
	strs := pd.Dictionary().StringTable().Len()
	pd.Dictionary().FunctionTable().At(1).SetFilenameStrindex(int32(strs))
	res := pd.ResourceProfiles().At(0).Resource().Attributes()
	res.PutStr("only.here", "a value no table holds")

	native, ok := Request(pd)
	require.True(t, ok)
	defer Release(native)
	opts := convert.DefaultOptions("t")
	opts.Now = func() time.Time { return start.Add(time.Minute) }
	rejected := func(res *convert.Result, err error) []convert.Rejection {
		require.NoError(t, err)
		defer res.Release()
		return res.Rejected
	}
	nativeRejected := rejected(convert.Decoded(native, opts))
	require.Len(t, nativeRejected, 2, "the function's filename and everything()'s out-of-range stack")
	assert.Contains(t, nativeRejected[0].Message, fmt.Sprintf("filename_strindex %d is out of range (string_table has %d entries)", strs, strs))

	encoded, adjust := Encode(pd)
	assert.NotEqual(t, nativeRejected, rejected(convert.Protobuf(encoded, opts)), "pdata's encoder put the index in range")
	opts.AdjustDecoded = adjust
	require.Equal(t, nativeRejected, rejected(convert.Protobuf(encoded, opts)))

	// A key reference just past the table, which pdata keeps hidden, and a
	// new attribute whose strings the encoder appends at that very index.
	hidden := everything()
	var past int32
	onTheWire(func(r *collectorpb.ExportProfilesServiceRequest) {
		past = int32(len(r.Dictionary.StringTable))
		r.ResourceProfiles[0].Resource.Attributes[0] = &commonpb.KeyValue{KeyStrindex: past}
	})(hidden)
	hidden.ResourceProfiles().At(0).Resource().Attributes().PutStr("only.here", "a value no table holds")
	_, ok = Request(hidden)
	require.False(t, ok, "a hidden key goes the wire way")
	encoded, adjust = Encode(hidden)
	decoded, err := otlpwire.Decode(encoded)
	require.NoError(t, err)
	require.Greater(t, len(decoded.Dictionary.Strings), int(past), "the encoder appended at the hidden index")
	adjust(decoded)
	require.Len(t, decoded.Dictionary.Strings, int(past))
	assert.Equal(t, past, decoded.Resources[0].Resource.Attributes[0].KeyStrindex, "the sender's reference, out of range again")
}
