package informer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/internal/ctxtime"
)

// StartOutcome is how an informer's start used its snapshot
// ([Options.Snapshot]), kept in [Health.Start] for as long as the informer
// lives, and counted by [Metrics.WarmStart] once decided.
type StartOutcome uint8

const (
	// StartNone: snapshots are off, or Run has not reached its snapshot yet.
	StartNone StartOutcome = iota
	// StartCold: there was no snapshot to restore; the informer listed.
	StartCold
	// StartRefused: a snapshot was there but refused (damaged, of another
	// collection or release, or the source could not be asked):
	// [Health.StartReason] says why. The informer started cold.
	StartRefused
	// StartVerifying: the snapshot is restored and served to readers, not
	// synced, but the source has not yet confirmed that it is the
	// snapshot's collection (it has not answered since Run started). Once it
	// does, the informer resumes; if it does not match, the restored cache
	// is dropped and the informer lists (StartRefused).
	StartVerifying
	// StartCatchingUp: restored and confirmed; the informer is catching up
	// with the changes made while it was down.
	StartCatchingUp
	// StartResumed: restored and caught up through a watch, without a list.
	StartResumed
	// StartRelisted: restored, then listed once before it synced: the
	// version had expired, the source could not resume or mark the
	// catch-up, or the objects did not decode. [Health.StartReason] says
	// why. The list kept what had not changed.
	StartRelisted
)

var startOutcomeNames = []string{"none", "cold", "refused", "verifying", "catching-up", "resumed", "relisted"}

// String returns the outcome's name as the metrics and the debug page show
// it: "none", "cold", "refused", "verifying", "catching-up", "resumed" or
// "relisted".
func (o StartOutcome) String() string { return enumString(startOutcomeNames, "StartOutcome", uint8(o)) }

// Final reports whether o is an outcome the start ends with (cold, refused,
// resumed, relisted), rather than a step on the way.
func (o StartOutcome) Final() bool {
	switch o {
	case StartCold, StartRefused, StartResumed, StartRelisted:
		return true
	}
	return false
}

// setStart records the start's outcome (and why, for refused and
// relisted); a final outcome is also reported to Metrics, once. Only the
// first final outcome counts.
func (inf *SharedInformer[K, T]) setStart(o StartOutcome, reason error) {
	s := inf.snap
	now := time.Now()
	s.mu.Lock()
	if s.start.Final() {
		s.mu.Unlock()
		return
	}
	s.start, s.startAt = o, now
	if reason != nil {
		s.startReason = reason.Error()
	}
	took := time.Duration(0)
	if !s.restoredAt.IsZero() {
		took = s.restoredAt.Sub(s.loadStart)
	}
	s.mu.Unlock()
	if o.Final() {
		inf.metrics.WarmStart(inf.name, o, took)
	}
}

// identityPatience is how long a warm start waits for the source to
// confirm the snapshot's identity before it says, at the default log level,
// that it serves the restored cache unconfirmed.
const identityPatience = 5 * time.Second

// confirmIdentity asks the source for its identity until it answers, and
// returns nil if it is want (the source part of the snapshot's identity).
// A source that is down (an error wrapping [ErrTransient], or no answer
// within identityPatience) is logged at the default level once, counted,
// and asked again with backoff: meanwhile the restored cache is served,
// unconfirmed ([StartVerifying]). It returns ctx.Err() once ctx is done:
// stopping then is no failure and is not reported.
//
// Possible errors: [ErrSnapshot] (wrapped): another collection, or the
// source cannot tell (an error other than a transient one); ctx.Err().
func (inf *SharedInformer[K, T]) confirmIdentity(ctx context.Context, want string) error {
	s := inf.snap
	if s.cfg.source == nil {
		return nil // the identity is the source's type, checked with the header
	}
	backoff := newBackoffTimer(Backoff{})
	var warned atomic.Bool // set by the first warning, which the patience timer's goroutine may give
	warn := func(why string, err error) {
		if warned.CompareAndSwap(false, true) {
			inf.log.Info("the source has not confirmed the snapshot's identity: serving the restored cache, unconfirmed and not synced, until it answers",
				"why", why, "error", err)
		}
	}
	for {
		patience := time.AfterFunc(identityPatience, func() { warn("no answer yet", nil) })
		id, err := s.cfg.source.SnapshotIdentity(ctx)
		patience.Stop()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil && id == want:
			s.mu.Lock()
			s.identity = s.cfg.identityOf(id)
			s.mu.Unlock()
			if warned.Load() {
				inf.log.Info("the source confirmed the snapshot's identity")
			}
			return nil
		case err == nil:
			return identityMismatch(s.cfg.identityOf(want), s.cfg.identityOf(id))
		case !errors.Is(err, ErrTransient):
			return fmt.Errorf("%w: cannot check a snapshot against the source: %w", ErrSnapshot, err)
		}
		if !warned.Load() {
			inf.report(ErrorClassTransient, fmt.Errorf("informer %q: snapshot identity: %w", inf.name, err))
		}
		warn("the source is unreachable", err)
		if !ctxtime.Sleep(ctx, backoff.delay()) {
			return ctx.Err()
		}
	}
}
