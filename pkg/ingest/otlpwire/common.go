package otlpwire

import (
	"math"
	"slices"
)

// anyState tracks where an AnyValue's unknown fields came from while it is
// decoded, possibly from several occurrences of its field that merge: the
// AnyValue message's own unknown fields stay, while those of an
// ArrayValue/KeyValueList wrapper go when another oneof member replaces it.
type anyState struct{ own, wrapper bool }

// keyValue decodes an opentelemetry.proto.common.v1.KeyValue message at the
// given nesting depth.
func (d *decoder) keyValue(b []byte, kv *KeyValue, depth int) error {
	if depth > maxDepth {
		return errDepth
	}
	var st anyState // the value's, across occurrences that merge
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return err
		}
		switch tag {
		case 1<<3 | wireBytes: // key
			if kv.Key, err = utf8Str(v); err != nil {
				return within("key", -1, err)
			}
		case 2<<3 | wireBytes: // value: occurrences merge
			if st, err = d.anyValue(v, &kv.Value, st, depth+1); err != nil {
				return within("value", -1, err)
			}
		case 3<<3 | wireVarint: // key_strindex
			kv.KeyStrindex = i32(x)
		default:
			kv.Unknown = true
		}
	}
	return nil
}

// anyValue decodes an opentelemetry.proto.common.v1.AnyValue message into
// av, whose earlier occurrences left st. A oneof member of another kind
// replaces what av held; array_value and kvlist_value merge with an earlier
// occurrence of the same member.
func (d *decoder) anyValue(b []byte, av *AnyValue, st anyState, depth int) (anyState, error) {
	if depth > maxDepth {
		return st, errDepth
	}
	for rd := (reader{b: b}); rd.more(); {
		tag, x, v, err := rd.next()
		if err != nil {
			return st, err
		}
		switch tag {
		case 1<<3 | wireBytes: // string_value
			s, err := utf8Str(v)
			if err != nil {
				return st, within("string_value", -1, err)
			}
			setKind(av, &st, KindString)
			av.Str = s
		case 2<<3 | wireVarint: // bool_value
			setKind(av, &st, KindBool)
			av.Bool = x != 0
		case 3<<3 | wireVarint: // int_value
			setKind(av, &st, KindInt)
			av.Int = i64(x)
		case 4<<3 | wireFixed64: // double_value
			setKind(av, &st, KindDouble)
			av.Double = math.Float64frombits(x)
		case 5<<3 | wireBytes: // array_value
			if av.Kind != KindArray {
				setKind(av, &st, KindArray)
			}
			if st, err = d.arrayValue(v, av, st, depth+1); err != nil {
				return st, within("array_value", -1, err)
			}
		case 6<<3 | wireBytes: // kvlist_value
			if av.Kind != KindKvlist {
				setKind(av, &st, KindKvlist)
			}
			if st, err = d.kvlistValue(v, av, st, depth+1); err != nil {
				return st, within("kvlist_value", -1, err)
			}
		case 7<<3 | wireBytes: // bytes_value
			setKind(av, &st, KindBytes)
			av.Bytes = slices.Clip(v)
		case 8<<3 | wireVarint: // string_value_strindex
			setKind(av, &st, KindStringStrindex)
			av.Strindex = i32(x)
		default:
			st.own = true
		}
	}
	av.Unknown = st.own || st.wrapper
	return st, nil
}

// setKind makes av hold only an empty member of kind k.
func setKind(av *AnyValue, st *anyState, k ValueKind) {
	*av = AnyValue{Kind: k}
	st.wrapper = false
}

// arrayValue decodes an ArrayValue message into av.Array.
func (d *decoder) arrayValue(b []byte, av *AnyValue, st anyState, depth int) (anyState, error) {
	return listWrapper(b, st, depth, &av.Array, func(v []byte, item *AnyValue) error {
		_, err := d.anyValue(v, item, anyState{}, depth+1)
		return err
	})
}

// kvlistValue decodes a KeyValueList message into av.Kvlist.
func (d *decoder) kvlistValue(b []byte, av *AnyValue, st anyState, depth int) (anyState, error) {
	return listWrapper(b, st, depth, &av.Kvlist, func(v []byte, item *KeyValue) error {
		return d.keyValue(v, item, depth+1)
	})
}

// listWrapper decodes the wrapper messages ArrayValue and KeyValueList,
// whose one field is the repeated field 1 ("values"), appending each item
// to list; any other field marks the wrapper as holding unknown fields.
func listWrapper[T any](b []byte, st anyState, depth int, list *[]T, decode func(v []byte, item *T) error) (anyState, error) {
	if depth > maxDepth {
		return st, errDepth
	}
	for rd := (reader{b: b}); rd.more(); {
		tag, _, v, err := rd.next()
		if err != nil {
			return st, err
		}
		if tag != 1<<3|wireBytes { // values
			st.wrapper = true
			continue
		}
		var zero T
		*list = append(*list, zero)
		i := len(*list) - 1
		if err := decode(v, &(*list)[i]); err != nil {
			return st, within("values", i, err)
		}
	}
	return st, nil
}
