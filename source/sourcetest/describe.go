package sourcetest

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/ginformer/ginformer/informer"
)

// objectOf reads the name and generation of obj through the harness. It
// reports, instead of panicking, an object that is the zero T or on which
// Harness.Name or Harness.Generation panics.
func (k *kit[T]) objectOf(obj T) (name string, gen int, problem string) {
	if reflect.ValueOf(&obj).Elem().IsZero() {
		return "", 0, "carries no object (the zero value)"
	}
	defer func() {
		if r := recover(); r != nil {
			problem = fmt.Sprintf("carries an object the harness cannot read (Harness.Name or Generation panicked: %v)", r)
		}
	}()
	return k.h.Name(obj), k.h.Generation(obj), ""
}

// describeObject returns the name and generation of obj, the where-th thing
// the source returned, and fails the check with a message when it is not a
// readable object.
func (k *kit[T]) describeObject(obj T, where string) (string, int) {
	k.t.Helper()
	name, gen, problem := k.objectOf(obj)
	if problem != "" {
		k.t.Fatalf("%s %s; the contract requires an object there", where, problem)
	}
	return name, gen
}

// describeEvent renders an event for messages, never panicking: "Added a
// gen 1 at version 7", "Bookmark at version 9", "Error: ...".
func (k *kit[T]) describeEvent(ev informer.Event[T]) string {
	switch ev.Type {
	case informer.EventError:
		return fmt.Sprintf("Error event (%v)", ev.Err)
	case informer.EventBookmark:
		s := "Bookmark at version " + strconv.Quote(ev.Version)
		if ev.InitialEventsEnd {
			s += " (InitialEventsEnd)"
		}
		return s
	}
	name, gen, problem := k.objectOf(ev.Object)
	if problem != "" {
		return fmt.Sprintf("%v event at version %q that %s", ev.Type, ev.Version, problem)
	}
	return fmt.Sprintf("%v %s gen %d at version %q", ev.Type, name, gen, ev.Version)
}

// change is an expected watch event; an empty version is not checked.
type change struct {
	typ     informer.EventType
	name    string
	gen     int
	version string
}

func (c change) String() string {
	if c.version == "" {
		return fmt.Sprintf("%v %s gen %d", c.typ, c.name, c.gen)
	}
	return fmt.Sprintf("%v %s gen %d at version %q", c.typ, c.name, c.gen, c.version)
}

// isChange reports whether t is an object event (Added, Modified, Deleted).
func isChange(t informer.EventType) bool {
	return t == informer.EventAdded || t == informer.EventModified || t == informer.EventDeleted
}
