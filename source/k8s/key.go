package k8s

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/informer"
)

// errNoName is returned by [Key] for an object without a name.
var errNoName = errors.New("k8s: object has no name")

// Key is the [informer.KeyFunc] of Kubernetes objects: their namespace and
// name as an [informer.NamespacedKey] (the namespace is empty for
// cluster-scoped objects). It allocates nothing. An object without a name
// is refused with an error (the informer then reports it and skips it).
func Key[T metav1.Object](obj T) (informer.NamespacedKey, error) {
	name := obj.GetName()
	if name == "" {
		return informer.NamespacedKey{}, errNoName
	}
	return informer.NamespacedKey{Namespace: obj.GetNamespace(), Name: name}, nil
}

// Names of the indexes returned by the helpers below.
const (
	// IndexNamespace is the name of [NamespaceIndex].
	IndexNamespace = "namespace"
	// IndexOwner is the name of [OwnerIndex].
	IndexOwner = "owner"
	// labelIndexPrefix prefixes the label key in [LabelIndex]'s name.
	labelIndexPrefix = "label:"
)

// NamespaceIndex indexes objects by namespace (cluster-scoped objects are
// not indexed). Query it with the namespace, through the declaration given
// to the informer, bound once:
//
//	byNamespace := k8s.NamespaceIndex[*corev1.Pod]() // in Options.Indexes
//	namespace, err := inf.Lister().IndexRef(byNamespace)
//	for key, pod := range namespace.ByValue("default") { ... }
func NamespaceIndex[T metav1.Object]() informer.Index[T] {
	return informer.Index[T]{Name: IndexNamespace, Func: func(dst []string, obj T) ([]string, error) {
		if ns := obj.GetNamespace(); ns != "" {
			dst = append(dst, ns)
		}
		return dst, nil
	}}
}

// LabelIndex indexes objects by the value of one label; objects without the
// label are not indexed. Its name is [LabelIndexName](label).
func LabelIndex[T metav1.Object](label string) informer.Index[T] {
	return informer.Index[T]{Name: LabelIndexName(label), Func: func(dst []string, obj T) ([]string, error) {
		if v, ok := obj.GetLabels()[label]; ok {
			dst = append(dst, v)
		}
		return dst, nil
	}}
}

// LabelIndexName returns the name of [LabelIndex](label): "label:" + label.
func LabelIndexName(label string) string { return labelIndexPrefix + label }

// OwnerIndex indexes objects by the UIDs of their owner references (every
// owner, controller or not), the lookup a controller does from an owner to
// what it owns: owned.ByValue(string(owner.GetUID())), where owned is the
// [informer.IndexRef] that Lister.IndexRef returned for this index.
func OwnerIndex[T metav1.Object]() informer.Index[T] {
	return informer.Index[T]{Name: IndexOwner, Func: func(dst []string, obj T) ([]string, error) {
		for _, ref := range obj.GetOwnerReferences() {
			dst = append(dst, string(ref.UID))
		}
		return dst, nil
	}}
}

// FieldIndex indexes objects by one string field that field returns (such
// as a pod's spec.nodeName); an empty value is not indexed. name is the
// index's name. field is user code, called without locks held.
func FieldIndex[T any](name string, field func(obj T) string) informer.Index[T] {
	return informer.Index[T]{Name: name, Func: func(dst []string, obj T) ([]string, error) {
		if v := field(obj); v != "" {
			dst = append(dst, v)
		}
		return dst, nil
	}}
}

// StripManagedFields is an [informer.Options.Transform] that drops
// metadata.managedFields, often the largest part of an object's metadata and
// rarely needed by a controller. It modifies obj in place, which is safe for
// objects from a [Source]: each is decoded afresh and not shared. It never
// fails.
func StripManagedFields[T metav1.Object](obj T) (T, error) {
	obj.SetManagedFields(nil)
	return obj, nil
}
