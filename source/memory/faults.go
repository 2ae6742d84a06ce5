package memory

import (
	"fmt"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// Test aids. These methods simulate a misbehaving server so tests can drive a
// client through failures; production code has no use for them. All are
// safe for concurrent use.

// FailNextList makes the next List (of the store or any filtered view) return
// err, unchanged, instead of reading. A nil err cancels a pending failure.
func (s *Store[K, T]) FailNextList(err error) {
	s.mu.Lock()
	s.failList = err
	s.mu.Unlock()
}

// FailNextWatch makes the next Watch (of the store or any filtered view)
// return err, unchanged, instead of opening a stream. A nil err cancels a
// pending failure.
func (s *Store[K, T]) FailNextWatch(err error) {
	s.mu.Lock()
	s.failWatch = err
	s.mu.Unlock()
}

// DropWatches ends every open watch normally, as a server closing its
// connections would: each channel is closed (after the events already
// buffered) without an Error event; a client should watch again from the last
// version it received. Watches opened later are not affected.
func (s *Store[K, T]) DropWatches() {
	s.mu.Lock()
	ws := s.watcherListLocked()
	s.mu.Unlock()
	for _, w := range ws {
		w.stream.Stop()
	}
}

// BreakWatches makes every open watch end with an Error event carrying err
// (nil: an error wrapping [informer.ErrTransient]), delivered after the
// changes the watcher has already taken from the history.
func (s *Store[K, T]) BreakWatches(err error) {
	if err == nil {
		err = fmt.Errorf("%w: %w", errBroken, informer.ErrTransient)
	}
	s.mu.Lock()
	for w := range s.watchers {
		w.brk = err
	}
	s.wakeLocked()
	s.mu.Unlock()
}

// RequestBookmarks makes every open watch send a Bookmark with the version it
// has caught up to, as a periodic bookmark would, soon after.
func (s *Store[K, T]) RequestBookmarks() {
	s.mu.Lock()
	for w := range s.watchers {
		w.bookmark = true
	}
	s.wakeLocked()
	s.mu.Unlock()
}

// SetDelay delays every later List and Watch by d before it does anything,
// honouring the call's context (a done context ends the wait with its
// error). Zero removes the delay.
func (s *Store[K, T]) SetDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}
