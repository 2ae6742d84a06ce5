package informer

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// watchHandlers reports handler calls that run longer than the informer's
// StuckHandlerThreshold, once per call, until ctx is done. It looks every
// quarter of the threshold (at most every 5 s), so a call is reported
// between 1× and 1.25× the threshold after it started.
func (inf *SharedInformer[K, T]) watchHandlers(ctx context.Context) {
	period := min(inf.stuckAt/4, 5*time.Second)
	every(ctx, max(period, time.Millisecond), inf.reportStuckHandlers)
}

// reportStuckHandlers reports each handler call that has been running for
// the threshold or longer and was not reported yet.
func (inf *SharedInformer[K, T]) reportStuckHandlers() {
	inf.mu.Lock()
	ls := slices.Concat(inf.listeners, inf.waiting)
	inf.mu.Unlock()
	now := monoNow()
	for _, l := range ls {
		l.callMu.Lock()
		running := time.Duration(now - l.started)
		stuck := l.started != 0 && running >= inf.stuckAt && l.stuckCall != l.calls
		key := l.curKey
		if stuck {
			l.stuckCall = l.calls
			l.stuck++
		}
		l.callMu.Unlock()
		if stuck {
			inf.report(ErrorClassHandlerStuck, fmt.Errorf("informer %q: handler %q has been running for %v on key %v (threshold %v): %w",
				inf.name, l.name, running.Round(time.Millisecond), key, inf.stuckAt, ErrHandlerStuck))
		}
	}
}
