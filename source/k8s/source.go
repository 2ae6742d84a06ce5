package k8s

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/ginformer/ginformer/informer"
)

// Object is what a [Source] yields: a Kubernetes object with metadata, such
// as *corev1.Pod, *unstructured.Unstructured or
// *metav1.PartialObjectMetadata.
type Object interface {
	runtime.Object
	metav1.Object
}

// ObjectPtr constrains T to be *E and an [Object]: the pointer to an element
// of a typed list's Items ([]corev1.Pod → *corev1.Pod).
type ObjectPtr[E any] interface {
	*E
	Object
}

// ListerWatcher is the part of a client-go client a [Source] uses: a typed
// client of one resource, already scoped to a namespace if it should be.
// client-go's typed clients (clientset.CoreV1().Pods(ns)), dynamic clients
// (dyn.Resource(gvr).Namespace(ns)) and metadata clients
// (meta.Resource(gvr).Namespace(ns)) all satisfy it as they are.
type ListerWatcher[L any] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Source is an [informer.Source] over one resource of the Kubernetes API,
// through a client-go client. It is safe for concurrent use; its zero value
// is not usable (use [New], [NewDynamic] or [NewMetadata]).
//
// See the package documentation for how the contract's read modes, errors
// and streaming lists map onto the API.
type Source[T Object] struct {
	list  func(ctx context.Context, opts metav1.ListOptions) ([]T, metav1.ListInterface, error)
	watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	opts  Options
}

var _ informer.Source[*unstructured.Unstructured] = (*Source[*unstructured.Unstructured])(nil)

// New returns a source over the resource lw serves. items returns the Items
// of a list; the source yields pointers into that slice, so no object is
// copied (the list's backing array lives while any of its objects does, as
// with client-go). For pods:
//
//	src, err := k8s.New(clientset.CoreV1().Pods("default"),
//		func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{})
//
// Nothing is reflected upon: lists are converted by items, watch events by a
// type assertion to T.
//
// Possible errors: [informer.ErrInvalidOptions] (nil lw or items, a
// selector that does not parse).
func New[E any, T ObjectPtr[E], L metav1.ListInterface](lw ListerWatcher[L], items func(L) []E, opts Options) (*Source[T], error) {
	if lw == nil || items == nil {
		return nil, fmt.Errorf("k8s: a ListerWatcher and an items function are required: %w", informer.ErrInvalidOptions)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Source[T]{
		list: func(ctx context.Context, o metav1.ListOptions) ([]T, metav1.ListInterface, error) {
			l, err := lw.List(ctx, o)
			if err != nil {
				return nil, nil, err
			}
			es := items(l)
			out := make([]T, len(es))
			for i := range es {
				out[i] = T(&es[i])
			}
			return out, l, nil
		},
		watch: lw.Watch,
		opts:  opts,
	}, nil
}

// NewDynamic returns a source of *unstructured.Unstructured over any
// resource, from a dynamic client: dyn.Resource(gvr) for all namespaces (or
// a cluster-scoped resource), dyn.Resource(gvr).Namespace(ns) for one.
//
// Possible errors: those of [New].
func NewDynamic(ri dynamic.ResourceInterface, opts Options) (*Source[*unstructured.Unstructured], error) {
	if ri == nil {
		return nil, fmt.Errorf("k8s: NewDynamic: nil client: %w", informer.ErrInvalidOptions)
	}
	return New(ri, func(l *unstructured.UnstructuredList) []unstructured.Unstructured { return l.Items }, opts)
}

// NewMetadata returns a source of *metav1.PartialObjectMetadata (names,
// labels, annotations, owners: no spec or status) over any resource, from a
// metadata client: meta.Resource(gvr) or meta.Resource(gvr).Namespace(ns).
// It is the memory-conscious choice when only metadata matters.
//
// Possible errors: those of [New].
func NewMetadata(ri metadata.ResourceInterface, opts Options) (*Source[*metav1.PartialObjectMetadata], error) {
	if ri == nil {
		return nil, fmt.Errorf("k8s: NewMetadata: nil client: %w", informer.ErrInvalidOptions)
	}
	return New(ri, func(l *metav1.PartialObjectMetadataList) []metav1.PartialObjectMetadata { return l.Items }, opts)
}

// List reads one page. The read mode maps onto resourceVersion and
// resourceVersionMatch:
//
//   - [informer.ReadLatest]: resourceVersion "" (a consistent read);
//   - [informer.ReadAny]: "0" (any state, usually the watch cache; the
//     server may then ignore Limit and return everything in one page);
//   - [informer.ReadNotOlderThan] v: v with match NotOlderThan;
//   - [informer.ReadExact] v: v with match Exact;
//   - a Continue token: the token alone (the server keeps its version).
//
// Possible errors: [informer.ErrExpired] (a compacted version or token),
// [informer.ErrVersionTooLarge], [informer.ErrTransient],
// [informer.ErrInternal], [informer.ErrInvalidOptions] (a version missing
// for NotOlderThan or Exact), and other API errors (403, 404) unwrapped.
func (s *Source[T]) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[T], error) {
	page, _, err := s.listPage(ctx, opts, "")
	return page, err
}

// listPage is [Source.List] with a ShardSelector (none if ""), returning the
// list's metadata too (for [Sharded], which reads its shardInfo).
func (s *Source[T]) listPage(ctx context.Context, opts informer.ListOptions, shardSelector string) (informer.ListPage[T], metav1.ListInterface, error) {
	lo := metav1.ListOptions{
		LabelSelector: s.opts.LabelSelector,
		FieldSelector: s.opts.FieldSelector,
		Limit:         int64(max(opts.Limit, 0)),
		ShardSelector: shardSelector,
	}
	switch {
	case opts.Continue != "":
		lo.Continue = opts.Continue
	case opts.Mode == informer.ReadLatest:
	case opts.Mode == informer.ReadAny:
		lo.ResourceVersion = "0"
	case opts.Version == "":
		return informer.ListPage[T]{}, nil, fmt.Errorf("k8s: list %v without a version: %w", opts.Mode, informer.ErrInvalidOptions)
	case opts.Mode == informer.ReadNotOlderThan:
		lo.ResourceVersion, lo.ResourceVersionMatch = opts.Version, metav1.ResourceVersionMatchNotOlderThan
	case opts.Mode == informer.ReadExact:
		lo.ResourceVersion, lo.ResourceVersionMatch = opts.Version, metav1.ResourceVersionMatchExact
	default:
		return informer.ListPage[T]{}, nil, fmt.Errorf("k8s: list: unknown mode %v: %w", opts.Mode, informer.ErrInvalidOptions)
	}
	items, meta, err := s.list(ctx, lo)
	if err != nil {
		return informer.ListPage[T]{}, nil, classify("k8s: list", err)
	}
	return informer.ListPage[T]{Items: items, Version: meta.GetResourceVersion(), Continue: meta.GetContinue()}, meta, nil
}
