package convert

import (
	"errors"
	"fmt"
)

// Reason classifies a rejection; it is the "reason" label of the
// rejected-profiles metric.
type Reason string

// Rejection reasons.
const (
	ReasonUnknownFields      Reason = "unknown_fields"
	ReasonInvalidSentinel    Reason = "invalid_sentinel"
	ReasonIndexOutOfRange    Reason = "index_out_of_range"
	ReasonDuplicateAttribute Reason = "duplicate_attribute_key"
	ReasonInvalidAttribute   Reason = "invalid_attribute"
	ReasonInvalidLink        Reason = "invalid_link"
	ReasonInvalidSampleShape Reason = "invalid_sample_shape"
	ReasonTimestampRange     Reason = "timestamp_out_of_range"
	ReasonInvalidMapping     Reason = "invalid_mapping"
	ReasonInvalidLine        Reason = "invalid_line"
	ReasonInvalidFunction    Reason = "invalid_function"
	ReasonInvalidProfileID   Reason = "invalid_profile_id"
	ReasonInvalidValueType   Reason = "invalid_value_type"
	ReasonMalformed          Reason = "malformed_payload"
)

// Rejection says why one profile was not stored.
type Rejection struct {
	// Path locates the profile: resource_profiles[i].scope_profiles[j].profiles[k].
	Path    string
	Reason  Reason
	Message string
}

func (r Rejection) String() string { return r.Path + ": " + r.Message }

// RequestError rejects a whole request: its shared dictionary is invalid,
// or it carries fields of another schema version.
type RequestError struct {
	Reason  Reason
	Message string
	// Profiles counts the request's profiles (0 when it could not be
	// decoded).
	Profiles int
}

func (e *RequestError) Error() string { return e.Message }

// invalidError is a validation failure inside a profile or the dictionary.
type invalidError struct {
	reason Reason
	msg    string
}

func (e *invalidError) Error() string { return e.msg }

func invalid(reason Reason, format string, args ...any) error {
	return &invalidError{reason: reason, msg: fmt.Sprintf(format, args...)}
}

// wrap prefixes a validation error with where it happened, keeping its reason.
func wrap(err error, where string) error {
	var ie *invalidError
	if errors.As(err, &ie) {
		return &invalidError{reason: ie.reason, msg: where + ": " + ie.msg}
	}
	return fmt.Errorf("%s: %w", where, err)
}

func rejection(path string, err error) Rejection {
	var ie *invalidError
	if errors.As(err, &ie) {
		return Rejection{Path: path, Reason: ie.reason, Message: ie.msg}
	}
	return Rejection{Path: path, Reason: ReasonInvalidAttribute, Message: err.Error()}
}

// staleSchemaHint explains unknown fields to the sender's operator.
const staleSchemaHint = "it carries fields unknown to OTLP profiles v1development as of proto v1.10/v1.11 " +
	"(OTLP-Profiles-Development-Version 1); this is the mark of an older, renumbered schema version " +
	"(Collector before v0.148, or an old profiler): upgrade the sender"

func unknownFields(where string) error {
	return invalid(ReasonUnknownFields, "%s: %s", where, staleSchemaHint)
}

func unknownFieldsError(where string) *RequestError {
	return &RequestError{Reason: ReasonUnknownFields, Message: "rejected " + where + ": " + staleSchemaHint}
}
