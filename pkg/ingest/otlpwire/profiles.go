package otlpwire

import "slices"

// Nesting depths of the fixed part of the schema; only AnyValue nests
// without bound.
const (
	depthResource = 3 // request > resource_profiles > resource
	depthScope    = 4 // request > resource_profiles > scope_profiles > scope
)

// resourceProfiles decodes a ResourceProfiles message.
func (d *decoder) resourceProfiles(b []byte, rp *ResourceProfiles) error {
	scopes := rp.Scopes // kept in a local while it grows: no write barriers
	defer func() { rp.Scopes = scopes }()
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // resource: occurrences merge
			if err := d.resource(v, &rp.Resource); err != nil {
				return within("resource", -1, err)
			}
		case 2<<3 | wireBytes: // scope_profiles
			scopes = extend(&d.scopes, scopes)
			i := len(scopes) - 1
			if err := d.scopeProfiles(v, &scopes[i]); err != nil {
				return within("scope_profiles", i, err)
			}
		case 3<<3 | wireBytes: // schema_url
			if rp.SchemaURL, err = utf8Str(v); err != nil {
				return within("schema_url", -1, err)
			}
		default:
			rp.Unknown = true
		}
	}
	return nil
}

// resource decodes an opentelemetry.proto.resource.v1.Resource message.
func (d *decoder) resource(b []byte, res *Resource) error {
	refs := 0
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // attributes
			res.Attributes = extend(&d.resAttrs, res.Attributes)
			i := len(res.Attributes) - 1
			if err := d.keyValue(v, &res.Attributes[i], depthResource+1); err != nil {
				return within("attributes", i, err)
			}
		case 2<<3 | wireVarint: // dropped_attributes_count
			res.DroppedAttributesCount = low32(x)
		case 3<<3 | wireBytes: // entity_refs: validated, then dropped
			if err := entityRef(v); err != nil {
				return within("entity_refs", refs, err)
			}
			refs++
		default:
			res.Unknown = true
		}
	}
	return nil
}

// entityRef validates an opentelemetry.proto.common.v1.EntityRef message as
// proto.Unmarshal would: its fields are all strings (schema_url=1, type=2,
// repeated id_keys=3 and description_keys=4) that must be valid UTF-8.
func entityRef(b []byte) error {
	names := [...]string{1: "schema_url", 2: "type", 3: "id_keys", 4: "description_keys"}
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return err
		}
		if num := tag >> 3; num <= 4 && tag&7 == wireBytes {
			if _, err := utf8Str(v); err != nil {
				return within(names[num], -1, err)
			}
		}
	}
	return nil
}

// scopeProfiles decodes a ScopeProfiles message.
func (d *decoder) scopeProfiles(b []byte, sp *ScopeProfiles) error {
	profiles := sp.Profiles // kept in a local while it grows: no write barriers
	defer func() { sp.Profiles = profiles }()
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // scope: occurrences merge
			if err := d.scope(v, &sp.Scope); err != nil {
				return within("scope", -1, err)
			}
		case 2<<3 | wireBytes: // profiles
			profiles = extend(&d.profiles, profiles)
			i := len(profiles) - 1
			if err := d.profile(v, &profiles[i]); err != nil {
				return within("profiles", i, err)
			}
		case 3<<3 | wireBytes: // schema_url
			if sp.SchemaURL, err = utf8Str(v); err != nil {
				return within("schema_url", -1, err)
			}
		default:
			sp.Unknown = true
		}
	}
	return nil
}

// scope decodes an opentelemetry.proto.common.v1.InstrumentationScope
// message.
func (d *decoder) scope(b []byte, s *InstrumentationScope) error {
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // name
			if s.Name, err = utf8Str(v); err != nil {
				return within("name", -1, err)
			}
		case 2<<3 | wireBytes: // version
			if s.Version, err = utf8Str(v); err != nil {
				return within("version", -1, err)
			}
		case 3<<3 | wireBytes: // attributes
			s.Attributes = extend(&d.scopeAttrs, s.Attributes)
			i := len(s.Attributes) - 1
			if err := d.keyValue(v, &s.Attributes[i], depthScope+1); err != nil {
				return within("attributes", i, err)
			}
		case 4<<3 | wireVarint: // dropped_attributes_count
			s.DroppedAttributesCount = low32(x)
		default:
			s.Unknown = true
		}
	}
	return nil
}

// profile decodes a Profile message.
func (d *decoder) profile(b []byte, p *Profile) error {
	d.pending = d.pending[:0]
	if err := d.profileFields(b, p); err != nil {
		return err
	}
	if len(d.pending) > 0 {
		r := &d.r
		p.AttributeIndices = Span{Off: u32(len(r.Int32s)), Len: u32(len(d.pending))}
		r.Int32s = append(r.Int32s, d.pending...)
	}
	return nil
}

// profileFields decodes the fields of a Profile message, collecting its
// attribute_indices in d.pending.
func (d *decoder) profileFields(b []byte, p *Profile) error {
	samples := p.Samples // kept in a local while it grows: no write barriers
	defer func() { p.Samples = samples }()
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // sample_type: occurrences merge
			if err := valueType(v, &p.SampleType); err != nil {
				return within("sample_type", -1, err)
			}
		case 2<<3 | wireBytes: // samples
			samples = extend(&d.samples, samples)
			i := len(samples) - 1
			if err := d.sample(v, &samples[i]); err != nil {
				return within("samples", i, err)
			}
		case 3<<3 | wireFixed64: // time_unix_nano
			p.TimeUnixNano = x
		case 4<<3 | wireVarint: // duration_nano
			p.DurationNano = x
		case 5<<3 | wireBytes: // period_type: occurrences merge
			if err := valueType(v, &p.PeriodType); err != nil {
				return within("period_type", -1, err)
			}
		case 6<<3 | wireVarint: // period
			p.Period = i64(x)
		case 7<<3 | wireBytes: // profile_id
			p.ProfileID = slices.Clip(v)
		case 8<<3 | wireVarint: // dropped_attributes_count
			p.DroppedAttributesCount = low32(x)
		case 9<<3 | wireBytes: // original_payload_format
			if p.OriginalPayloadFormat, err = utf8Str(v); err != nil {
				return within("original_payload_format", -1, err)
			}
		case 10<<3 | wireBytes: // original_payload
			p.OriginalPayload = slices.Clip(v)
		case 11<<3 | wireBytes: // attribute_indices, packed
			if d.pending, err = appendVarints(d.pending, v); err != nil {
				return within("attribute_indices", -1, err)
			}
		case 11<<3 | wireVarint: // attribute_indices, one element
			d.pending = append(d.pending, i32(x))
		default:
			p.Unknown = true
		}
	}
	return nil
}

// valueType decodes a ValueType message.
func valueType(b []byte, vt *ValueType) error {
	for rd := (reader{b: b}); rd.more(); {
		tag, x, _, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireVarint: // type_strindex
			vt.TypeStrindex = i32(x)
		case 2<<3 | wireVarint: // unit_strindex
			vt.UnitStrindex = i32(x)
		default:
			vt.Unknown = true
		}
	}
	return nil
}

// sample decodes a Sample message.
func (d *decoder) sample(b []byte, s *Sample) error {
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireVarint: // stack_index
			s.StackIndex = i32(x)
		case 2<<3 | wireBytes: // attribute_indices, packed
			if err := d.packedInt32s(&s.AttributeIndices, v); err != nil {
				return within("attribute_indices", -1, err)
			}
		case 2<<3 | wireVarint: // attribute_indices, one element
			d.appendInt32(&s.AttributeIndices, x)
		case 3<<3 | wireVarint: // link_index
			s.LinkIndex = i32(x)
		case 4<<3 | wireBytes: // values, packed
			r := &d.r
			r.Int64s = toTail(r.Int64s, &s.Values)
			r.Int64s, err = appendVarints(r.Int64s, v)
			s.Values.Len = u32(len(r.Int64s)) - s.Values.Off
			if err != nil {
				return within("values", -1, err)
			}
		case 4<<3 | wireVarint: // values, one element
			r := &d.r
			r.Int64s = append(toTail(r.Int64s, &s.Values), i64(x))
			s.Values.Len++
		case 5<<3 | wireBytes: // timestamps_unix_nano, packed
			r := &d.r
			r.Uint64s = toTail(r.Uint64s, &s.TimestampsUnixNano)
			r.Uint64s, err = appendFixed64s(r.Uint64s, v)
			s.TimestampsUnixNano.Len = u32(len(r.Uint64s)) - s.TimestampsUnixNano.Off
			if err != nil {
				return within("timestamps_unix_nano", -1, err)
			}
		case 5<<3 | wireFixed64: // timestamps_unix_nano, one element
			r := &d.r
			r.Uint64s = append(toTail(r.Uint64s, &s.TimestampsUnixNano), x)
			s.TimestampsUnixNano.Len++
		default:
			s.Unknown = true
		}
	}
	return nil
}

// packedInt32s appends packed int32 values to span s of Int32s.
func (d *decoder) packedInt32s(s *Span, v []byte) error {
	r := &d.r
	var err error
	r.Int32s = toTail(r.Int32s, s)
	r.Int32s, err = appendVarints(r.Int32s, v)
	s.Len = u32(len(r.Int32s)) - s.Off
	return err
}

// appendInt32 appends one unpacked int32 value to span s of Int32s.
func (d *decoder) appendInt32(s *Span, x uint64) {
	r := &d.r
	r.Int32s = append(toTail(r.Int32s, s), i32(x))
	s.Len++
}
