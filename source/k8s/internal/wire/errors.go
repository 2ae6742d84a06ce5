package wire

import "errors"

// ErrMalformed is wrapped by the errors of bytes that are not what they
// should be: a protobuf message that does not parse, an envelope without
// its object, a JSON list that is not one, an object that is not JSON.
var ErrMalformed = errors.New("malformed input")

// ErrSharedMerge is wrapped by the error of [Plan.Decode] for a shared
// pointer to a message (see the package doc) that occurs twice in one
// message (a shared map or repeated field goes into a copy instead): the
// generated Unmarshal merges the two, the plan does not write into a shared
// value. Decode such an object with its generated Unmarshal.
var ErrSharedMerge = errors.New("a shared field occurs again")
