package k8s

import (
	"runtime"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
)

// SharingStats describes the tables that share strings and spec subtrees
// between decoded objects ([Options.DisableStringSharing],
// [Options.DisableSubtreeSharing]). They are the process's, shared by every
// source, so these are the process's figures, not one source's.
type SharingStats struct {
	// Entries is the number of strings and subtrees the tables hold.
	Entries int
	// Bytes estimates what the entries hold (a string's bytes, a subtree's
	// wire bytes and decoded value, their map slots): the figure
	// [Options.SharingBudget] bounds.
	Bytes int64
	// Budget is the bound on Bytes: the largest SharingBudget of the live
	// sources.
	Budget int64
	// Hits and Misses count the lookups that found a shared value and those
	// that did not, since the process started; Refused counts the values
	// not shared because the budget was reached.
	Hits, Misses, Refused uint64
}

// HitRate is Hits over all lookups, 0 before any.
func (s SharingStats) HitRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

// Sharing returns the figures of the process's sharing tables (see
// [SharingStats]). Safe for concurrent use.
func (s *Source[T]) Sharing() SharingStats {
	st := wire.ReadStats()
	return SharingStats{Entries: st.Entries, Bytes: st.Bytes, Budget: st.Budget, Hits: st.Hits, Misses: st.Misses, Refused: st.Refused}
}

// holdSharing takes a lease on the sharing tables for src, a source that
// decodes itself and shares, released when src is garbage collected: the
// tables are emptied when no such source is left.
func holdSharing[T Object](src *Source[T], opts Options) {
	if opts.DisableStringSharing && opts.DisableSubtreeSharing {
		return
	}
	runtime.AddCleanup(src, (*wire.Lease).Release, wire.Acquire(opts.SharingBudget))
}
