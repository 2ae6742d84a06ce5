package etcd

import (
	"time"

	"github.com/ginformer/ginformer/informer"
)

var _ informer.LivenessBounder = (*Source[int])(nil)

// LivenessBound returns how long a dead watch of the source can go
// unnoticed (see [informer.LivenessBounder]): LivenessInterval plus
// LivenessTimeout, 5 s with the defaults. A watch that hears nothing from
// etcd for LivenessInterval sends a progress request, and counts its stream
// dead when no answer comes within LivenessTimeout (a busy stream sooner:
// see the package doc, Connections and liveness); it then moves to another
// member, reporting the failure to the informer as transient, or ends with
// an Error event wrapping [informer.ErrTransient]. 0 when the check is off
// (a negative LivenessTimeout).
func (s *Source[T]) LivenessBound() time.Duration {
	if s.opts.LivenessTimeout < 0 {
		return 0
	}
	return s.opts.LivenessInterval + s.opts.LivenessTimeout
}

// liveness schedules the progress probes of a watch stream, across the
// etcd watches that follow each other in it (see run), so that the pace
// of the stream outlives a failover: after a silence without
// news from etcd, probe; a probe unanswered for timeout is a dead stream.
// The silence that calls for a probe is interval on a quiet stream, shorter
// on a busy one: busyFactor times the last gap between two answers, at
// least busyIdle; the probe's deadline likewise, at least busyTimeout. A
// busy stream that goes silent (its connection cut without a close) is
// found dead within about 1.25 s instead of interval plus timeout, and a
// quiet one costs no more probes than before. Used by one goroutine; not
// safe for concurrent use.
type liveness struct {
	interval, timeout time.Duration
	disabled          bool
	idleT, deadT      *time.Timer
	probing           bool
	due               time.Time     // when the pending probe's answer is due
	last              time.Time     // when etcd was last heard from
	gap               time.Duration // between the last two answers; 0: none yet
}

const (
	busyFactor  = 8
	busyIdle    = 250 * time.Millisecond
	busyTimeout = time.Second
)

func newLiveness(interval, timeout time.Duration) *liveness {
	l := &liveness{interval: interval, timeout: timeout, disabled: timeout < 0}
	if !l.disabled {
		l.idleT = time.NewTimer(interval)
		l.deadT = time.NewTimer(timeout)
		l.deadT.Stop()
	}
	return l
}

// idle fires when it is time to probe; nil (never) when disabled.
func (l *liveness) idle() <-chan time.Time {
	if l.disabled || l.probing {
		return nil
	}
	return l.idleT.C
}

// deadline fires when a probe went unanswered.
func (l *liveness) deadline() <-chan time.Time {
	if l.disabled || !l.probing {
		return nil
	}
	return l.deadT.C
}

// probe sends a probe with send and starts the deadline.
func (l *liveness) probe(send func()) {
	l.probing = true
	l.due = time.Now().Add(l.probeTimeout())
	l.deadT.Reset(l.probeTimeout())
	send()
}

// probeTimeout is how long a probe sent now may go unanswered.
func (l *liveness) probeTimeout() time.Duration {
	if l.gap > 0 {
		return min(l.timeout, max(busyTimeout, busyFactor*l.gap))
	}
	return l.timeout
}

// budget bounds a progress request sent now: what is left before the pending
// probe's deadline, so that a request blocked on a dead stream cannot hold
// the watch past it; def when no probe is pending.
func (l *liveness) budget(def time.Duration) time.Duration {
	if !l.probing {
		return def
	}
	return max(time.Until(l.due), time.Millisecond)
}

// heard records an answer from etcd: no probe pending, the next one after
// the silence the stream's pace calls for.
func (l *liveness) heard() {
	now := time.Now()
	if !l.last.IsZero() {
		l.gap = now.Sub(l.last)
	}
	l.last = now
	l.rest()
}

// rest restarts the silence without an answer from etcd (the watch was
// busy with its consumer meanwhile).
func (l *liveness) rest() {
	if l.disabled {
		return
	}
	l.probing = false
	l.deadT.Stop()
	idle := l.interval
	if l.gap > 0 {
		idle = min(idle, max(busyIdle, busyFactor*l.gap))
	}
	l.idleT.Reset(idle)
}

func (l *liveness) stop() {
	if !l.disabled {
		l.idleT.Stop()
		l.deadT.Stop()
	}
}

// progressRetry resends a progress request (on demand or a liveness probe)
// until etcd answers it. etcd drops a progress request, silently, while a watch of the stream
// is unsynced: replaying history, held back behind a slow consumer, or just
// created (a watch starts at a revision the member has reached, see openEtcdWatch,
// and stays unsynced until etcd's next sync, every 100 ms). Used by one
// goroutine; not safe for concurrent use.
type progressRetry struct {
	t     *time.Timer
	delay time.Duration // the wait before the next resend; 0: none outstanding
	fast  int           // resends left at retryFast before the doubling starts
}

const (
	retryFirst = 100 * time.Millisecond // etcd's sync period
	retryMax   = 2 * time.Second
	// retryFast and retryFastN: a watch waiting for its caught-up marker
	// (a warm restart waits for it) resends every retryFast during the
	// first sync period and a half, so that it is answered within
	// retryFast of etcd's sync rather than at the next doubling.
	retryFast  = 20 * time.Millisecond
	retryFastN = 8
)

// hurry makes the next resends come every retryFast (see retryFastN).
func (r *progressRetry) hurry() { r.fast = retryFastN }

func newProgressRetry() *progressRetry {
	t := time.NewTimer(retryFirst)
	t.Stop()
	return &progressRetry{t: t}
}

// sent records that a request was sent: it is resent after retryFirst, then
// at doubling intervals (up to retryMax), until answered.
func (r *progressRetry) sent() {
	if r.delay == 0 {
		r.delay = retryFirst
		if r.fast > 0 {
			r.delay = retryFast
		}
		r.t.Reset(r.delay)
	}
}

// due fires when the outstanding request is to be resent; nil (never) when
// none is outstanding.
func (r *progressRetry) due() <-chan time.Time {
	if r.delay == 0 {
		return nil
	}
	return r.t.C
}

// resent records a resend and schedules the next one.
func (r *progressRetry) resent() {
	switch {
	case r.fast > 1:
		r.fast--
	case r.fast == 1:
		r.fast, r.delay = 0, retryFirst
	default:
		r.delay = min(2*r.delay, retryMax)
	}
	r.t.Reset(r.delay)
}

// answered records a progress notification: nothing is outstanding.
func (r *progressRetry) answered() {
	r.delay, r.fast = 0, 0
	r.t.Stop()
}
