package informer

import (
	"reflect"
	"strings"
	"unsafe"
)

// optionsDiff returns the names of the fields in which b differs from a,
// comma-separated, or "" if none does. The rules are [InformerFor]'s; Name
// is the group's key and Logger is not compared.
func optionsDiff[K comparable, T any](a, b *Options[K, T]) string {
	var diff []string
	check := func(same bool, field string) {
		if !same {
			diff = append(diff, field)
		}
	}
	check(sameValue(a.Source, b.Source), "Source")
	check(sameFunc(a.KeyFunc, b.KeyFunc), "KeyFunc")
	check(sameIndexes(a.Indexes, b.Indexes), "Indexes")
	check(a.ResyncPeriod == b.ResyncPeriod, "ResyncPeriod")
	check(sameFunc(a.Transform, b.Transform), "Transform")
	check(sameValue(a.Metrics, b.Metrics), "Metrics")
	check(sameFunc(a.ErrorHandler, b.ErrorHandler), "ErrorHandler")
	check(a.StuckHandlerThreshold == b.StuckHandlerThreshold, "StuckHandlerThreshold")
	check(a.BatchSize == b.BatchSize, "BatchSize")
	check(a.ListWatch == b.ListWatch, "ListWatch")
	check(sameFunc(a.ObjectVersion, b.ObjectVersion), "ObjectVersion")
	check(sameMutationDetector(a.MutationDetector, b.MutationDetector), "MutationDetector")
	check(sameSnapshot(a.Snapshot, b.Snapshot), "Snapshot")
	return strings.Join(diff, ", ")
}

// sameMutationDetector reports whether a and b are the same options, their
// funcs compared as in sameFunc.
func sameMutationDetector[T any](a, b MutationDetectorOptions[T]) bool {
	return a.Enabled == b.Enabled && a.Panic == b.Panic && a.Interval == b.Interval &&
		sameFunc(a.Copy, b.Copy) && sameFunc(a.Equal, b.Equal)
}

// sameSnapshot reports whether a and b are the same options: the same
// store and codec values, identity and interval.
func sameSnapshot[T any](a, b SnapshotOptions[T]) bool {
	return sameValue(a.Store, b.Store) && sameValue(a.Codec, b.Codec) && a.Identity == b.Identity && a.Interval == b.Interval
}

// sameIndexes reports whether a and b have the same names, each with the
// same func, in any order.
func sameIndexes[T any](a, b []Index[T]) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			if x.Name == y.Name {
				found = sameFunc(x.Func, y.Func)
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
// values are comparable, so it cannot panic). Funcs compare as in sameFunc.
func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() {
		return false
	}
	if va.Kind() == reflect.Func {
		return funcIdentity(va) == funcIdentity(vb)
	}
	return va.Comparable() && a == b
}

// sameFunc reports whether a and b, funcs of one type, are the same func
// value. Comparing code pointers (reflect.Value.Pointer) would take two
// closures of one func literal for the same func whatever they captured;
// comparing the func values themselves (pointers to the closure) cannot
// err that way: two func values that are one pointer are one function with
// the same captured variables. The price is that two evaluations of a func
// literal that captures variables (or that the compiler copied when
// inlining), or two method values, differ.
func sameFunc(a, b any) bool {
	return funcIdentity(reflect.ValueOf(a)) == funcIdentity(reflect.ValueOf(b))
}

// funcIdentity returns the func value v holds: a pointer to the closure (a
// static one for a named function), nil for a nil func. Go stores a func
// value as that one pointer; reflect only exposes the code pointer it leads
// to, hence the copy into addressable memory to read the pointer itself.
func funcIdentity(v reflect.Value) unsafe.Pointer {
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return *(*unsafe.Pointer)(c.Addr().UnsafePointer())
}
