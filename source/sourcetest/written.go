package sourcetest

import (
	"fmt"

	"github.com/ginformer/ginformer/informer"
)

// The bookmark rule, applied to every stream of every check: a Bookmark at
// version B promises that the stream has delivered every change to the
// collection up to B. A reflector resumes from B, so a write at a version
// after the stream's start and at or before B that did not come before the
// bookmark is lost for good.
//
// The kit knows the writes it made (their versions are what the harness
// returned), so it checks the rule at the two moments one side of it becomes
// known, whichever comes last, and never depends on timing:
//
//   - when a bookmark arrives, against every write completed so far: each
//     one due on the stream must already have been received (the events
//     before the bookmark have all been read by then);
//   - when a write completes, against the newest bookmark of every stream:
//     had it been delivered before that bookmark, the kit would have read it.
//
// So a bookmark ahead is caught whether the change it skips was still on its
// way (BookmarkNotAhead) or not yet written when the bookmark came (a
// bookmark at the next version on an idle stream). A bookmark past the last
// change of the collection is legitimate when no write of the collection
// lies in between: etcd's progress notifications carry the revision of the
// whole store.
//
// Versions are compared with Harness.CompareVersions. Without it, the kit
// checks only what equality shows: a bookmark at the version of a write that
// completed after the stream started (opened, or ended its initial events),
// and that the stream did not deliver before the bookmark.

// write is a write the check made: its kind ("create", "update",
// "delete"), the object's name and the version the harness returned.
type write struct{ op, name, version string }

func (w write) String() string {
	return fmt.Sprintf("the %s of %s at version %q", w.op, w.name, w.version)
}

// writeOf returns the write that makes the change c.
func writeOf(c change) write {
	op := map[informer.EventType]string{
		informer.EventAdded: "create", informer.EventModified: "update", informer.EventDeleted: "delete",
	}[c.typ]
	return write{op, c.name, c.version}
}

// delivery identifies a change a stream delivered: the object's name and the
// version of the event.
type delivery struct{ name, version string }

// record adds a completed write to the check's writes, and fails the check
// if a stream has already sent a bookmark promising it without delivering
// it. Writes the kit makes through create, update and del are recorded
// there; a check writing from another goroutine records each write when it
// learns of it, on the check's goroutine.
func (k *kit[T]) record(w write) {
	k.t.Helper()
	k.writes = append(k.writes, w)
	i := len(k.writes) - 1
	for _, s := range k.streams {
		if s.bookmark != "" && s.due(i, s.bookmark) {
			k.t.Fatalf("%s: %s completed at a version not after that of the Bookmark at %q the stream had already "+
				"sent, and was not delivered before it; a bookmark promises every change up to its version was "+
				"delivered: a reflector resuming from it would lose %s", s.desc, w, s.bookmark, w)
		}
	}
}

// due reports whether the i-th write of the check is one the stream must
// deliver before a bookmark at version b, and has not: a change after the
// stream's start, at or before b.
func (s *stream[T]) due(i int, b string) bool {
	if !s.started || s.future {
		return false
	}
	w := s.k.writes[i]
	if _, ok := s.delivered[delivery{w.name, w.version}]; ok {
		return false
	}
	if c := s.k.h.CompareVersions; c != nil {
		return c(w.version, s.from) > 0 && c(w.version, b) <= 0
	}
	return i >= s.startWrites && w.version == b
}

// checkBookmark applies the bookmark rule to a bookmark at version b just
// received, and makes it the stream's newest.
func (s *stream[T]) checkBookmark(b, desc string) {
	s.k.t.Helper()
	var missed []write
	for i := range s.k.writes {
		if s.due(i, b) {
			missed = append(missed, s.k.writes[i])
		}
	}
	if len(missed) > 0 {
		more := ""
		if len(missed) > 1 {
			more = fmt.Sprintf(" (and %d more writes)", len(missed)-1)
		}
		s.k.t.Fatalf("%s: %s arrived before %s%s was delivered; a bookmark promises every change up to its version "+
			"was delivered: a reflector resuming from it would lose %s", s.desc, desc, missed[0], more, missed[0])
	}
	s.bookmark = b
}

// start records that the stream delivers every change after version from,
// and the writes completed by then.
func (s *stream[T]) start(from string) {
	s.started, s.from, s.startWrites = true, from, len(s.k.writes)
}
