package etcd

import "time"

// liveness schedules a watch's progress probes: after interval without news
// from etcd, probe; a probe unanswered for timeout is a dead stream. Used by
// one goroutine; not safe for concurrent use.
type liveness struct {
	interval, timeout time.Duration
	disabled          bool
	idleT, deadT      *time.Timer
	probing           bool
}

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
	l.deadT.Reset(l.timeout)
	send()
}

// heard records news from etcd: no probe pending, next one after interval.
func (l *liveness) heard() {
	if l.disabled {
		return
	}
	l.probing = false
	l.deadT.Stop()
	l.idleT.Reset(l.interval)
}

func (l *liveness) stop() {
	if !l.disabled {
		l.idleT.Stop()
		l.deadT.Stop()
	}
}
