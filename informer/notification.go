package informer

// noteKind is the kind of a queued handler notification.
type noteKind uint8

const (
	noteNone     noteKind = iota // cancelled while queued (coalescing): deliver nothing
	noteAdd                      // OnAdd(obj, initial)
	noteUpdate                   // OnUpdate(old, obj)
	noteDelete                   // OnDelete{key, obj, unknown}
	noteReplaced                 // coalesced delete then add: OnDelete{key, old, unknown}, then OnAdd(obj, initial)
	noteSynced                   // marker: everything before it was the handler's initial state
)

// notification is one change queued for one handler.
type notification[K comparable, T any] struct {
	kind    noteKind
	initial bool // OnAdd's isInInitialList
	unknown bool // the deletion's FinalStateUnknown
	key     K
	old     T // noteUpdate: the previous state; noteReplaced: the deleted state
	obj     T // the new state, or the deleted state for noteDelete
}

// merge folds the newer notification n into p, the pending one for the same
// key that the handler has not received yet, so that delivering p alone
// takes the handler from the state it last saw to the latest one. The rules:
//
//   - add, then update           → add of the newest state
//   - add, then delete           → nothing (the handler never saw the object)
//   - update, then update        → update from the state the handler saw to the newest
//   - update, then delete        → delete (carrying the last known state)
//   - delete, then add           → delete of the old object, then add of the new one
//   - delete-then-add, then update → delete, then add of the newest state
//   - delete-then-add, then delete → delete
//   - nothing, then anything     → that thing
//
// A deletion is therefore never lost: whenever the handler saw the object,
// a delete stays pending until delivered.
func (p *notification[K, T]) merge(n notification[K, T]) {
	switch p.kind {
	case noteNone:
		*p = n
	case noteAdd:
		switch n.kind {
		case noteDelete:
			var zero T
			p.kind, p.obj = noteNone, zero
		default:
			p.obj = n.obj
		}
	case noteUpdate, noteReplaced:
		// Either way a delete replaces what is pending (the handler saw
		// the old state, or will see the replacement) and a change moves
		// obj to the newest state.
		switch n.kind {
		case noteDelete:
			var zero T
			p.kind, p.old, p.obj, p.unknown = noteDelete, zero, n.obj, n.unknown
		default:
			p.obj = n.obj
		}
	case noteDelete:
		switch n.kind {
		case noteDelete:
			// Two deletions in a row: keep the one that knows more.
			if p.unknown || !n.unknown {
				p.obj, p.unknown = n.obj, n.unknown
			}
		default:
			p.kind, p.old, p.obj, p.initial = noteReplaced, p.obj, n.obj, n.initial
		}
	}
}
