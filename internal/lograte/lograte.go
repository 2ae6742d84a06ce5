// Package lograte bounds how often errors of one kind are logged, so that a
// stream of bad input cannot flood a program's logs. It imports nothing of
// ginformer's.
package lograte

import (
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Burst and Every set the limit: each kind may log a burst of Burst
// messages, then one per Every.
const (
	Burst = 5
	Every = 10 * time.Second
)

// Limiter decides which error messages get logged: per kind, a token bucket
// of Burst tokens refilled at one per Every. The number of messages
// suppressed in between is logged with the next one that gets through. The
// zero value is ready to use; safe for concurrent use.
type Limiter struct {
	mu    sync.Mutex
	kinds map[string]*bucket
}

type bucket struct {
	tokens     float64
	last       time.Time
	suppressed int
}

// Allow reports whether a message of kind may be logged now and, if so, how
// many were suppressed since the last one that was.
func (r *Limiter) Allow(kind string) (ok bool, suppressed int) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kinds == nil {
		r.kinds = make(map[string]*bucket)
	}
	b := r.kinds[kind]
	if b == nil {
		b = &bucket{tokens: Burst, last: now}
		r.kinds[kind] = b
	}
	b.tokens = min(Burst, b.tokens+now.Sub(b.last).Seconds()/Every.Seconds())
	b.last = now
	if b.tokens < 1 {
		b.suppressed++
		return false, 0
	}
	b.tokens--
	suppressed, b.suppressed = b.suppressed, 0
	return true, suppressed
}

// Error logs err at error level on log if the limit of kind allows it,
// adding "suppressed"=N when messages were left out before it.
func (r *Limiter) Error(log logr.Logger, kind string, err error, msg string, kv ...any) {
	ok, suppressed := r.Allow(kind)
	if !ok {
		return
	}
	if suppressed > 0 {
		kv = append(kv, "suppressed", suppressed)
	}
	log.Error(err, msg, kv...)
}

// OrDefault returns l, or, if l is the zero Logger, one that writes to
// [slog.Default] as it is now: errors are printed by default, and verbose
// levels (V(1) and above, slog levels below Info) are hidden unless the
// program's slog handler enables them.
func OrDefault(l logr.Logger) logr.Logger {
	if l.GetSink() != nil {
		return l
	}
	return logr.FromSlogHandler(slog.Default().Handler())
}
