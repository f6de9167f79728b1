// Package secret holds a string type for passwords and tokens that never
// shows its value when printed, logged or marshalled.
package secret

// String is a secret value. Its String, GoString and marshalled forms are
// redacted; Value returns the secret itself.
type String string

const redacted = "[redacted]"

// Value returns the secret.
func (s String) Value() string { return string(s) }

// String implements fmt.Stringer with a redacted form.
func (s String) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer with a redacted form, so %#v does not leak.
func (s String) GoString() string { return s.String() }

// MarshalText redacts the secret in JSON, YAML and other text encodings.
func (s String) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the secret from configuration.
func (s *String) UnmarshalText(text []byte) error {
	*s = String(text)
	return nil
}
