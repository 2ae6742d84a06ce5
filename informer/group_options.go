package informer

import (
	"reflect"
	"strings"
)

// optionsDiff returns the names of the fields in which b differs from a,
// comma-separated, or "" if none does. The rules are [InformerFor]'s; Name
// is the group's key and Logger is not compared; funcs are compared only
// for being set.
func optionsDiff[K comparable, T any](a, b *Options[K, T]) string {
	var diff []string
	check := func(same bool, field string) {
		if !same {
			diff = append(diff, field)
		}
	}
	check(sameValue(a.Source, b.Source), "Source")
	check((a.KeyFunc == nil) == (b.KeyFunc == nil), "KeyFunc")
	check(sameIndexes(a.Indexes, b.Indexes), "Indexes")
	check(a.ResyncPeriod == b.ResyncPeriod, "ResyncPeriod")
	check((a.Transform == nil) == (b.Transform == nil), "Transform")
	check(sameValue(a.Metrics, b.Metrics), "Metrics")
	check((a.ErrorHandler == nil) == (b.ErrorHandler == nil), "ErrorHandler")
	check(a.StuckHandlerThreshold == b.StuckHandlerThreshold, "StuckHandlerThreshold")
	check(a.BatchSize == b.BatchSize, "BatchSize")
	check(a.ListWatch == b.ListWatch, "ListWatch")
	check((a.ObjectVersion == nil) == (b.ObjectVersion == nil), "ObjectVersion")
	check(sameMutationDetector(a.MutationDetector, b.MutationDetector), "MutationDetector")
	check(sameSnapshot(a.Snapshot, b.Snapshot), "Snapshot")
	return strings.Join(diff, ", ")
}

// sameMutationDetector reports whether a and b are the same options, their
// funcs compared for being set.
func sameMutationDetector[T any](a, b MutationDetectorOptions[T]) bool {
	return a.Enabled == b.Enabled && a.Panic == b.Panic && a.Interval == b.Interval &&
		(a.Copy == nil) == (b.Copy == nil) && (a.Equal == nil) == (b.Equal == nil)
}

// sameSnapshot reports whether a and b are the same options: the same
// store and codec values, identity and interval.
func sameSnapshot[T any](a, b SnapshotOptions[T]) bool {
	return sameValue(a.Store, b.Store) && sameValue(a.Codec, b.Codec) && a.Identity == b.Identity && a.Interval == b.Interval
}

// sameIndexes reports whether a and b have the same names in any order,
// each with a func or each without.
func sameIndexes[T any](a, b []Index[T]) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			if x.Name == y.Name {
				found = (x.Func == nil) == (y.Func == nil)
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sameValue reports whether two interface values are the same: both nil, or
// of one dynamic type and equal with == (which it only uses when the dynamic
// values are comparable, so it cannot panic). An uncomparable dynamic value
// (a func, a struct holding one) is never the same.
func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Type() == vb.Type() && va.Comparable() && a == b
}
