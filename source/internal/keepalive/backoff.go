package keepalive

import "time"

// Backoff is the pause between attempts that keep failing (to register, to
// read the members): it doubles from Min up to Max, and starts again from
// Min after [Backoff.Reset]. The zero value never pauses. Not safe for
// concurrent use: one loop owns it.
type Backoff struct {
	// Min is the first pause.
	Min time.Duration
	// Max bounds every pause.
	Max time.Duration

	last time.Duration // the previous pause; 0 after Reset
}

// Next returns the pause before the next attempt: twice the previous one,
// at least Min and at most Max.
func (b *Backoff) Next() time.Duration {
	b.last = min(max(2*b.last, b.Min), b.Max)
	return b.last
}

// Reset is called after a success: the next pause is Min.
func (b *Backoff) Reset() { b.last = 0 }
