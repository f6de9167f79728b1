package otlpwire

import "slices"

// depthAttribute is the depth of a dictionary attribute:
// request > dictionary > attribute_table.
const depthAttribute = 3

// dictionary decodes a ProfilesDictionary message; a repeated dictionary
// field merges into the same tables.
func (d *decoder) dictionary(b []byte, dict *Dictionary) error {
	t := *dict // the tables grow in a local copy: no write barriers
	defer func() { *dict = t }()
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // mapping_table
			t.Mappings = append(t.Mappings, Mapping{})
			if err := d.mapping(v, &t.Mappings[len(t.Mappings)-1]); err != nil {
				return within("mapping_table", len(t.Mappings)-1, err)
			}
		case 2<<3 | wireBytes: // location_table
			t.Locations = append(t.Locations, Location{})
			if err := d.location(v, &t.Locations[len(t.Locations)-1]); err != nil {
				return within("location_table", len(t.Locations)-1, err)
			}
		case 3<<3 | wireBytes: // function_table
			t.Functions = append(t.Functions, Function{})
			if err := function(v, &t.Functions[len(t.Functions)-1]); err != nil {
				return within("function_table", len(t.Functions)-1, err)
			}
		case 4<<3 | wireBytes: // link_table
			t.Links = append(t.Links, Link{})
			if err := link(v, &t.Links[len(t.Links)-1]); err != nil {
				return within("link_table", len(t.Links)-1, err)
			}
		case 5<<3 | wireBytes: // string_table
			s, err := utf8Str(v)
			if err != nil {
				return within("string_table", len(t.Strings), err)
			}
			t.Strings = append(t.Strings, s)
		case 6<<3 | wireBytes: // attribute_table
			t.Attributes = append(t.Attributes, KeyValueAndUnit{})
			if err := d.keyValueAndUnit(v, &t.Attributes[len(t.Attributes)-1]); err != nil {
				return within("attribute_table", len(t.Attributes)-1, err)
			}
		case 7<<3 | wireBytes: // stack_table
			t.Stacks = append(t.Stacks, Stack{})
			if err := d.stack(v, &t.Stacks[len(t.Stacks)-1]); err != nil {
				return within("stack_table", len(t.Stacks)-1, err)
			}
		default:
			t.Unknown = true
		}
	}
	return nil
}

// mapping decodes a Mapping message.
func (d *decoder) mapping(b []byte, m *Mapping) error {
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireVarint: // memory_start
			m.MemoryStart = x
		case 2<<3 | wireVarint: // memory_limit
			m.MemoryLimit = x
		case 3<<3 | wireVarint: // file_offset
			m.FileOffset = x
		case 4<<3 | wireVarint: // filename_strindex
			m.FilenameStrindex = i32(x)
		case 5<<3 | wireBytes: // attribute_indices, packed
			if err := d.packedInt32s(&m.AttributeIndices, v); err != nil {
				return within("attribute_indices", -1, err)
			}
		case 5<<3 | wireVarint: // attribute_indices, one element
			d.appendInt32(&m.AttributeIndices, x)
		default:
			m.Unknown = true
		}
	}
	return nil
}

// location decodes a Location message.
func (d *decoder) location(b []byte, l *Location) error {
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireVarint: // mapping_index
			l.MappingIndex = i32(x)
		case 2<<3 | wireVarint: // address
			l.Address = x
		case 3<<3 | wireBytes: // lines
			r := &d.r
			r.Lines = append(toTail(r.Lines, &l.Lines), Line{})
			l.Lines.Len++
			if err := line(v, &r.Lines[len(r.Lines)-1]); err != nil {
				return within("lines", int(l.Lines.Len)-1, err)
			}
		case 4<<3 | wireBytes: // attribute_indices, packed
			if err := d.packedInt32s(&l.AttributeIndices, v); err != nil {
				return within("attribute_indices", -1, err)
			}
		case 4<<3 | wireVarint: // attribute_indices, one element
			d.appendInt32(&l.AttributeIndices, x)
		default:
			l.Unknown = true
		}
	}
	return nil
}

// line decodes a Line message.
func line(b []byte, l *Line) error {
	for rd := (reader{b: b}); rd.more(); {
		tag, x, _, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireVarint: // function_index
			l.FunctionIndex = i32(x)
		case 2<<3 | wireVarint: // line
			l.Line = i64(x)
		case 3<<3 | wireVarint: // column
			l.Column = i64(x)
		default:
			l.Unknown = true
		}
	}
	return nil
}

// function decodes a Function message.
func function(b []byte, f *Function) error {
	for rd := (reader{b: b}); rd.more(); {
		tag, x, _, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireVarint: // name_strindex
			f.NameStrindex = i32(x)
		case 2<<3 | wireVarint: // system_name_strindex
			f.SystemNameStrindex = i32(x)
		case 3<<3 | wireVarint: // filename_strindex
			f.FilenameStrindex = i32(x)
		case 4<<3 | wireVarint: // start_line
			f.StartLine = i64(x)
		default:
			f.Unknown = true
		}
	}
	return nil
}

// link decodes a Link message.
func link(b []byte, l *Link) error {
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // trace_id
			l.TraceID = slices.Clip(v)
		case 2<<3 | wireBytes: // span_id
			l.SpanID = slices.Clip(v)
		default:
			l.Unknown = true
		}
	}
	return nil
}

// keyValueAndUnit decodes a KeyValueAndUnit message.
func (d *decoder) keyValueAndUnit(b []byte, kv *KeyValueAndUnit) error {
	var st anyState // the value's, across occurrences that merge
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireVarint: // key_strindex
			kv.KeyStrindex = i32(x)
		case 2<<3 | wireBytes: // value: occurrences merge
			if st, err = d.anyValue(v, &kv.Value, st, depthAttribute+1); err != nil {
				return within("value", -1, err)
			}
		case 3<<3 | wireVarint: // unit_strindex
			kv.UnitStrindex = i32(x)
		default:
			kv.Unknown = true
		}
	}
	return nil
}

// stack decodes a Stack message.
func (d *decoder) stack(b []byte, s *Stack) error {
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // location_indices, packed
			if err := d.packedInt32s(&s.LocationIndices, v); err != nil {
				return within("location_indices", -1, err)
			}
		case 1<<3 | wireVarint: // location_indices, one element
			d.appendInt32(&s.LocationIndices, x)
		default:
			s.Unknown = true
		}
	}
	return nil
}
