package keepalive

import (
	"fmt"
	"time"
)

// defaultClockDrift is the MaxClockDrift of a membership whose option is
// zero: 1%.
const defaultClockDrift = 0.01

// ClockDrift checks a membership's MaxClockDrift option and returns it with
// its default (defaultClockDrift for zero).
//
// Possible errors: a description of the bad value, for the caller to wrap
// with its own prefix and its invalid-options sentinel.
func ClockDrift(d float64) (float64, error) {
	switch {
	case d < 0 || d >= 0.5:
		return d, fmt.Errorf("MaxClockDrift %v not in [0, 0.5)", d)
	case d == 0:
		return defaultClockDrift, nil
	}
	return d, nil
}

// ValidFrom returns until when a registration renewed by a request sent at
// sent, granting ttl, is certainly alive on the local clock: sent +
// ttl·(1 − drift), so that a clock running up to drift faster than this
// one (the clock that expires the lease) cannot have expired it before.
func ValidFrom(sent time.Time, ttl time.Duration, drift float64) time.Time {
	return sent.Add(time.Duration(float64(ttl) * (1 - drift)))
}
