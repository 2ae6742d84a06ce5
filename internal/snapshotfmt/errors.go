package snapshotfmt

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrCorrupt is wrapped by the error for data that is not a whole
	// snapshot: truncated, damaged (a checksum, a count or a length
	// disagrees) or not a snapshot at all. The message says what is wrong.
	ErrCorrupt = errors.New("not a whole snapshot (truncated or damaged)")

	// ErrLayoutVersion is wrapped by the error for a snapshot written in
	// another layout version than [Version].
	ErrLayoutVersion = errors.New("another layout version")

	// ErrIdentity is wrapped by the error for a whole snapshot of
	// something else than the reader asked for: an [*IdentityError].
	ErrIdentity = errors.New("identity differs")
)

// corrupt returns an error wrapping ErrCorrupt that says what is wrong.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// layoutVersionError is a snapshot of layout version got.
type layoutVersionError struct{ got uint32 }

func (e *layoutVersionError) Error() string {
	return fmt.Sprintf("written in layout version %d, this release reads %d", e.got, Version)
}

func (e *layoutVersionError) Is(target error) bool { return target == ErrLayoutVersion }

// IdentityError is the error for a snapshot whose identity, Got, is not the
// one the reader asked for, Want. It wraps [ErrIdentity].
type IdentityError struct {
	Got, Want string
}

// Error names the first line of the identities that differs.
func (e *IdentityError) Error() string {
	g, w, ok := FirstDiff(e.Got, e.Want)
	if !ok {
		return ErrIdentity.Error()
	}
	return fmt.Sprintf("it is a snapshot of something else: it has %q where the reader has %q", g, w)
}

// Is reports whether target is [ErrIdentity].
func (e *IdentityError) Is(target error) bool { return target == ErrIdentity }

// FirstDiff returns the first line (separated by "\n") in which the
// identities got and want differ; false if no line does (they are equal,
// or differ only in a trailing empty line).
func FirstDiff(got, want string) (gotLine, wantLine string, ok bool) {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return g, w, true
		}
	}
	return "", "", false
}
