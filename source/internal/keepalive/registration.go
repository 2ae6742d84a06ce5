package keepalive

import (
	"sync/atomic"
	"time"
)

// Registration holds a membership's current registration, for its
// ValidUntil (one atomic load) and its renewal loop. Info is what else the
// membership keeps with each registration. The zero value holds none. It
// is safe for concurrent use.
type Registration[Info any] struct {
	p atomic.Pointer[Reg[Info]]
}

// Reg is one registration, never modified once stored.
type Reg[Info any] struct {
	// Epoch identifies the registration ([shard.View.Epoch]); never zero.
	Epoch int64
	// Until is the end of its validity on the local clock.
	Until time.Time
	// Info is what else the membership keeps with it.
	Info Info
}

// Load returns the current registration; nil before the first.
func (r *Registration[Info]) Load() *Reg[Info] { return r.p.Load() }

// Store makes a new registration current.
func (r *Registration[Info]) Store(epoch int64, until time.Time, info Info) *Reg[Info] {
	reg := &Reg[Info]{Epoch: epoch, Until: until, Info: info}
	r.p.Store(reg)
	return reg
}

// Renewed extends the current registration's validity to until. Only the
// renewal loop calls it, after [Registration.Store].
func (r *Registration[Info]) Renewed(until time.Time) {
	cur := r.p.Load()
	r.p.Store(&Reg[Info]{Epoch: cur.Epoch, Until: until, Info: cur.Info})
}

// Until returns the end of the current registration's validity, for
// [Renew]; the zero time before the first.
func (r *Registration[Info]) Until() time.Time {
	if cur := r.p.Load(); cur != nil {
		return cur.Until
	}
	return time.Time{}
}

// End ends the current registration's validity now, unless it ended
// before.
func (r *Registration[Info]) End() {
	cur := r.p.Load()
	if now := time.Now(); cur != nil && now.Before(cur.Until) {
		r.p.Store(&Reg[Info]{Epoch: cur.Epoch, Until: now, Info: cur.Info})
	}
}

// ValidUntil is a membership's ValidUntil: the end of the validity of
// registration epoch, or the zero time if epoch is not the current
// registration.
func (r *Registration[Info]) ValidUntil(epoch int64) time.Time {
	cur := r.p.Load()
	if cur == nil || cur.Epoch != epoch || epoch == 0 {
		return time.Time{}
	}
	return cur.Until
}
