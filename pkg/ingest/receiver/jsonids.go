package receiver

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// hexIDsToBase64 rewrites the id fields that OTLP/JSON encodes as hex
// (dictionary link trace and span ids, profile ids) to the base64 that
// protojson decodes. Both lowerCamelCase and snake_case keys are accepted,
// as protojson accepts both.
func hexIDsToBase64(body []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // keep 64-bit integers exact
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %w", errNotObject, err)
	}
	if err := rewriteLinkIDs(doc); err != nil {
		return nil, err
	}
	if err := rewriteProfileIDs(doc); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// rewriteLinkIDs rewrites the trace and span ids of the dictionary's link
// table.
func rewriteLinkIDs(doc map[string]any) error {
	dict, ok := field(doc, "dictionary").(map[string]any)
	if !ok {
		return nil
	}
	for i, l := range list(field(dict, "linkTable", "link_table")) {
		link, ok := l.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range []string{"traceId", "trace_id", "spanId", "span_id"} {
			if err := rewriteHex(link, k); err != nil {
				return fmt.Errorf("dictionary.linkTable[%d]: %w", i, err)
			}
		}
	}
	return nil
}

// rewriteProfileIDs rewrites the profile ids of every profile.
func rewriteProfileIDs(doc map[string]any) error {
	for _, rp := range list(field(doc, "resourceProfiles", "resource_profiles")) {
		rpm, _ := rp.(map[string]any)
		for _, sp := range list(field(rpm, "scopeProfiles", "scope_profiles")) {
			spm, _ := sp.(map[string]any)
			for _, p := range list(field(spm, "profiles")) {
				pm, ok := p.(map[string]any)
				if !ok {
					continue
				}
				for _, k := range []string{"profileId", "profile_id"} {
					if err := rewriteHex(pm, k); err != nil {
						return fmt.Errorf("profile: %w", err)
					}
				}
			}
		}
	}
	return nil
}

func field(m map[string]any, names ...string) any {
	for _, n := range names {
		if v, ok := m[n]; ok {
			return v
		}
	}
	return nil
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func rewriteHex(m map[string]any, key string) error {
	v, ok := m[key].(string)
	if !ok || v == "" {
		return nil
	}
	raw, err := hex.DecodeString(v)
	if err != nil {
		return fmt.Errorf("%s %q is not hex (OTLP/JSON encodes ids as hex): %w", key, v, err)
	}
	m[key] = base64.StdEncoding.EncodeToString(raw)
	return nil
}
