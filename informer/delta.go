package informer

// DeltaType says what kind of change a [Delta] records.
type DeltaType uint8

// The delta types, in the order their constants are declared.
const (
	// Added: the object was created (a watch ADDED event).
	Added DeltaType = iota + 1
	// Updated: the object changed (a watch MODIFIED event).
	Updated
	// Deleted: the object was removed. Delta.Object is its last known state.
	Deleted
	// Replaced: the object was part of a full relist ([DeltaFIFO.Replace]).
	// It may or may not differ from what the consumer holds.
	Replaced
	// Sync: a periodic resync re-delivered an unchanged, known object
	// ([DeltaFIFO.Resync]).
	Sync
)

// String returns the type's name ("Added", "Updated", ...), or
// "DeltaType(n)" for a value that is not one of the constants.
func (t DeltaType) String() string { return enumString(deltaTypeNames[:], "DeltaType", uint8(t)) }

var deltaTypeNames = [...]string{Added: "Added", Updated: "Updated", Deleted: "Deleted", Replaced: "Replaced", Sync: "Sync"}

// Delta is one change to one object, as queued by a [DeltaFIFO].
type Delta[T any] struct {
	// Type is the kind of change.
	Type DeltaType
	// Object is the object's new state; for a Deleted delta, its last known
	// state.
	Object T
	// FinalStateUnknown is true on a Deleted delta the queue inferred (the
	// object was known but absent from a Replace): its deletion was never
	// observed and Object is the last state known, possibly stale. It is
	// always false on other types.
	FinalStateUnknown bool
}

// Deltas is the list of changes queued for one key, oldest first. A
// [DeltaFIFO] never hands out an empty Deltas, and never two consecutive
// Deleted deltas.
type Deltas[T any] []Delta[T]

// Oldest returns the first (oldest) delta, or the zero Delta and false when
// d is empty.
func (d Deltas[T]) Oldest() (Delta[T], bool) {
	if len(d) == 0 {
		return Delta[T]{}, false
	}
	return d[0], true
}

// Newest returns the last (most recent) delta, or the zero Delta and false
// when d is empty.
func (d Deltas[T]) Newest() (Delta[T], bool) {
	if len(d) == 0 {
		return Delta[T]{}, false
	}
	return d[len(d)-1], true
}
