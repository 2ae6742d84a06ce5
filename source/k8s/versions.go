package k8s

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/ginformer/ginformer/informer"
)

var _ informer.VersionComparer = (*Source[*unstructured.Unstructured])(nil)

// CompareVersions orders two resourceVersions of the resource: -1 if a is
// older than b, 0 if equal, +1 if newer. It implements
// [informer.VersionComparer], which lets
// [informer.SharedInformer.WaitForVersion] wait for "this resourceVersion or
// later", such as the resourceVersion returned by a create or an update.
//
// The API conventions call resourceVersion opaque, but the API server forms
// it from etcd's revision, and apimachinery now defines its order
// (k8s.io/apimachinery/pkg/util/resourceversion.CompareResourceVersion,
// which this calls): a positive decimal integer without leading zeros, of
// any length, compared as an integer. An aggregated API server that forms
// resourceVersions another way makes CompareVersions fail, and so every
// WaitForVersion on an informer of it.
//
// Possible errors: [informer.ErrInvalidVersion] when a or b is not such an
// integer ("", "0", "007", "abc").
func (s *Source[T]) CompareVersions(a, b string) (int, error) {
	c, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		return 0, fmt.Errorf("k8s: %w: %w", informer.ErrInvalidVersion, err)
	}
	return c, nil
}
