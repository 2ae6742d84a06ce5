package memory

import (
	"cmp"
	"fmt"
	"strconv"

	"github.com/ginformer/ginformer/informer"
)

// Both the store and its filtered views order their versions.
var (
	_ informer.VersionComparer = (*Store[string, int])(nil)
	_ informer.VersionComparer = filtered[string, int]{}
)

// CompareVersions orders two versions of the store: -1 if a is older than b,
// 0 if equal, +1 if newer. Versions are revisions, so they compare as
// integers ("9" < "10"). It implements [informer.VersionComparer], which lets
// [informer.SharedInformer.WaitForVersion] wait for "this version or later".
// Safe for concurrent use; it does not lock the store.
//
// Possible errors: [informer.ErrInvalidVersion] when a or b is not a
// non-negative decimal integer.
func (s *Store[K, T]) CompareVersions(a, b string) (int, error) { return compareVersions(a, b) }

// CompareVersions orders versions as [Store.CompareVersions] does: a view
// shares the store's versions.
func (f filtered[K, T]) CompareVersions(a, b string) (int, error) { return compareVersions(a, b) }

func compareVersions(a, b string) (int, error) {
	x, err := revisionOf(a)
	if err != nil {
		return 0, err
	}
	y, err := revisionOf(b)
	if err != nil {
		return 0, err
	}
	return cmp.Compare(x, y), nil
}

// revisionOf parses a version for CompareVersions.
func revisionOf(v string) (int64, error) {
	rev, err := strconv.ParseInt(v, 10, 64)
	if err != nil || rev < 0 {
		return 0, fmt.Errorf("memory: version %q is not a revision: %w", v, informer.ErrInvalidVersion)
	}
	return rev, nil
}
