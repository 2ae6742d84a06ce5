// Package safecall calls user code (key, index and transform functions,
// codecs) and turns a panic in it into an error, so that a bad object or a
// buggy callback is reported and skipped instead of crashing the program.
package safecall

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic recovered by [Call].
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine, as [debug.Stack] formats
	// it, taken where the panic happened.
	Stack []byte
}

// Error returns "panic: " followed by the value and, on the next lines, the
// stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error (a runtime.Error, say),
// nil otherwise.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Call returns f(arg). If f panics, Call recovers and returns a
// [*PanicError] (and whatever R f had not returned: the zero R); f's own
// error is returned as it is, so a caller wraps both alike. A call that does
// not panic allocates nothing more than f does. A runtime.Goexit in f is not
// a panic: it goes on unwinding the goroutine.
//
// To call a function of several arguments, pass a func literal that calls
// it; a literal that does not escape costs no allocation either.
func Call[A, R any](f func(A) (R, error), arg A) (r R, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return f(arg)
}
