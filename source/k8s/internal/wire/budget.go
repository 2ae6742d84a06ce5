package wire

import (
	"sync"
	"sync/atomic"
)

// DefaultBudget is the budget of the sharing tables when no [Lease] names
// one: 64 MiB.
const DefaultBudget = 64 << 20

// The sharing tables (the strings table and the subtree table of each
// shared field of each plan) are the process's, shared by every source:
// namespaces and node names repeat across resources, and the sources of one
// type share its plan. They have one memory budget between them, the
// largest of the live leases' (DefaultBudget without any): a table that
// would go over it forgets its older generation, and if that is not enough
// does not keep the new value (it is still decoded, just not shared). When
// the last lease is released every table is emptied.
var budget struct {
	mu     sync.Mutex // guards leases
	leases map[*Lease]int64
	limit  atomic.Int64 // the budget in bytes; 0: DefaultBudget
	used   atomic.Int64 // the bytes the tables hold (see Stats.Bytes)
}

// A Lease is one user's hold on the sharing tables (a source, for as long
// as it lives). The zero value is not usable; use [Acquire].
type Lease struct{ released atomic.Bool }

// Acquire registers a user of the sharing tables whose budget is bytes
// (zero or less: [DefaultBudget]); the tables' budget is the largest of the
// live leases'. Release it when the user is done.
func Acquire(bytes int64) *Lease {
	if bytes <= 0 {
		bytes = DefaultBudget
	}
	l := &Lease{}
	budget.mu.Lock()
	defer budget.mu.Unlock()
	if budget.leases == nil {
		budget.leases = make(map[*Lease]int64)
	}
	budget.leases[l] = bytes
	budget.limit.Store(largestLocked())
	return l
}

// Release ends the lease; releasing it again does nothing. When no lease
// is left, every sharing table is emptied: objects decoded before keep
// what they share, the tables no longer hold it.
func (l *Lease) Release() {
	if l.released.Swap(true) {
		return
	}
	budget.mu.Lock()
	delete(budget.leases, l)
	last := len(budget.leases) == 0
	budget.limit.Store(largestLocked())
	budget.mu.Unlock()
	if last {
		clearTables()
	}
}

func largestLocked() int64 {
	if len(budget.leases) == 0 {
		return DefaultBudget
	}
	var m int64
	for _, b := range budget.leases {
		m = max(m, b)
	}
	return m
}

// fits reports whether cost more bytes keep the tables within budget.
func fits(cost int64) bool { return budget.used.Load()+cost <= limit() }

// limit returns the tables' budget.
func limit() int64 {
	if l := budget.limit.Load(); l > 0 {
		return l
	}
	return DefaultBudget
}

// Stats describes the sharing tables of the process (every source's).
type Stats struct {
	// Entries is the number of values the tables hold: strings and
	// subtrees.
	Entries int
	// Bytes is what the entries hold: a string's bytes and its map slot; a
	// subtree's wire bytes (its key), an estimate of its decoded value
	// (twice its wire size) and its map slot; a hash of a subtree seen
	// once. An estimate, from the sizes of what is stored.
	Bytes int64
	// Budget is the bound on Bytes: the largest budget of the live leases.
	Budget int64
	// Hits and Misses count the lookups that found a shared value and those
	// that did not, since the process started.
	Hits, Misses uint64
	// Refused counts the values not kept because the budget was reached.
	Refused uint64
}

// HitRate is Hits over all lookups, 0 without any.
func (s Stats) HitRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

// ReadStats returns the sharing tables' current figures. Safe for
// concurrent use; the figures are read table by table, not at one instant.
func ReadStats() Stats {
	s := sharedStrings.stats()
	allTables.mu.Lock()
	tables := allTables.t
	allTables.mu.Unlock()
	for _, t := range tables {
		ts := t.stats()
		s.Entries += ts.Entries
		s.Hits += ts.Hits
		s.Misses += ts.Misses
		s.Refused += ts.Refused
	}
	s.Bytes = budget.used.Load()
	s.Budget = limit()
	return s
}

// allTables lists every subtree table made, for clearTables and ReadStats.
var allTables struct {
	mu sync.Mutex // guards t
	t  []*shareTable
}

// clearTables empties every sharing table.
func clearTables() {
	sharedStrings.clear()
	allTables.mu.Lock()
	tables := allTables.t
	allTables.mu.Unlock()
	for _, t := range tables {
		t.clear()
	}
}
