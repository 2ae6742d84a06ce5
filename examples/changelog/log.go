// Package changelog is the worked example of docs/sources.md ("writing a
// source"): an append-only change log with compaction, and the
// [informer.Source] over it. It passes the conformance
// kit (source/sourcetest) and feeds a [informer.SharedInformer] (see the
// package example).
//
// The log numbers its changes 1, 2, 3, ...: the version of the collection
// after change n is "n" ("0" for the empty log). It keeps every change after
// the compacted version, plus the state at that version (the base), so it
// can rebuild the state at any version from the compacted one on: lists at
// older versions, continue tokens of such lists, and watches from them
// fail with [informer.ErrExpired].
package changelog

import (
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/ginformer/ginformer/informer"
)

// Entry is the object the log holds: a value under a key.
type Entry struct {
	Key, Value string
}

// change is one record of the log: the write that made version rev.
type change struct {
	rev     int64
	typ     informer.EventType // Added, Modified or Deleted
	entry   Entry              // the new state; for Deleted, the last one
	deleted bool
}

// Log is an append-only change log of entries with compaction. Use [New];
// every method is safe for concurrent use.
type Log struct {
	mu sync.Mutex // guards every field below
	// rev is the current version; compacted the oldest version still
	// served. base is the state at compacted; changes holds the changes
	// compacted+1 .. rev, in order.
	rev, compacted int64
	base           map[string]Entry
	changes        []change
	// state is the current state (base plus every change).
	state map[string]Entry
	// wake is closed (and replaced) by every write and compaction, waking
	// the watchers waiting for one.
	wake chan struct{}
	// progress holds, per open watch, a channel that asks it for a bookmark.
	progress map[chan struct{}]struct{}
}

// New returns an empty log at version "0".
func New() *Log {
	return &Log{
		base:     map[string]Entry{},
		state:    map[string]Entry{},
		wake:     make(chan struct{}),
		progress: map[chan struct{}]struct{}{},
	}
}

// Put sets key to value and returns the version of the write.
func (l *Log) Put(key, value string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	typ := informer.EventAdded
	if _, ok := l.state[key]; ok {
		typ = informer.EventModified
	}
	e := Entry{Key: key, Value: value}
	l.state[key] = e
	return l.appendLocked(change{typ: typ, entry: e})
}

// Delete removes key. It returns the version of the write and true, or
// false when key was absent (nothing is written then).
func (l *Log) Delete(key string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.state[key]
	if !ok {
		return "", false
	}
	delete(l.state, key)
	return l.appendLocked(change{typ: informer.EventDeleted, entry: e, deleted: true}), true
}

// appendLocked records c as the next change and wakes the watchers.
func (l *Log) appendLocked(c change) string {
	l.rev++
	c.rev = l.rev
	l.changes = append(l.changes, c)
	l.wakeLocked()
	return format(l.rev)
}

func (l *Log) wakeLocked() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// Version returns the current version.
func (l *Log) Version() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return format(l.rev)
}

// Compact folds every change up to version into the base: versions older
// than it are no longer served. Watchers still reading those changes end
// with an Error event wrapping [informer.ErrExpired].
//
// Possible errors: [informer.ErrInvalidOptions] (not a version),
// [informer.ErrVersionTooLarge] (newer than the log).
func (l *Log) Compact(version string) error {
	v, err := parse(version)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if v > l.rev {
		return fmt.Errorf("changelog: compact to %d, the log is at %d: %w", v, l.rev, informer.ErrVersionTooLarge)
	}
	for len(l.changes) > 0 && l.changes[0].rev <= v {
		apply(l.base, l.changes[0])
		l.changes[0] = change{}
		l.changes = l.changes[1:]
	}
	l.compacted = max(l.compacted, v)
	l.wakeLocked()
	return nil
}

// RequestProgress asks every open watch for a Bookmark carrying the version
// it has delivered, as etcd's progress requests do.
func (l *Log) RequestProgress() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range l.progress {
		select {
		case p <- struct{}{}:
		default: // one is already pending
		}
	}
}

// stateAtLocked rebuilds the state at version v, compacted <= v <= rev.
func (l *Log) stateAtLocked(v int64) map[string]Entry {
	if v == l.rev {
		return maps.Clone(l.state)
	}
	s := maps.Clone(l.base)
	for _, c := range l.changes {
		if c.rev > v {
			break
		}
		apply(s, c)
	}
	return s
}

// apply applies c to state s.
func apply(s map[string]Entry, c change) {
	if c.deleted {
		delete(s, c.entry.Key)
	} else {
		s[c.entry.Key] = c.entry
	}
}

func format(v int64) string { return strconv.FormatInt(v, 10) }

// parse reads a version of the log.
//
// Possible errors: [informer.ErrInvalidOptions].
func parse(version string) (int64, error) {
	v, err := strconv.ParseInt(version, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("changelog: %q is not a version: %w", version, informer.ErrInvalidOptions)
	}
	return v, nil
}
