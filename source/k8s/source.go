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
	// watchTo, set instead of watch for a source that decodes itself,
	// sends the events straight to sink (see newDecodingWatch).
	watchTo func(ctx context.Context, opts metav1.ListOptions, sink func(watch.Event) bool, finish func()) error
	// trim, if set, is applied to each object the client decoded (it drops
	// managedFields where the source does not decode itself).
	trim     func(T)
	decoding bool // the source decodes responses itself
	bad      *decodeErrors
	opts     Options
	// path is where the client's requests go, when the source can tell
	// (client_path.go): the probe of a NotifyCaughtUp watch (catchup.go)
	// and the snapshot identity use it. nil for other clients.
	path *restPath
	// client names the client's Go type, for the snapshot identity.
	client string
	// snapCodec is the snapshot codec (snapshot_codec.go).
	snapCodec informer.Codec[T]
}

// Decoding reports whether the source decodes the server's responses
// itself, on all cores (see [New]), rather than through the client's own
// List and Watch.
func (s *Source[T]) Decoding() bool { return s.decoding }

// DecodeErrors returns how many objects from the server did not decode
// since the source was made: each was reported (see the package doc), and
// left out of its list or watch (a deletion is still delivered, with the
// object's metadata only).
// Only a source that decodes itself ([Source.Decoding]) counts them; the
// client's own decoders fail the whole list or watch instead.
func (s *Source[T]) DecodeErrors() uint64 { return s.bad.n.Load() }

// trimmer returns the trim function of opts for objects a client decoded.
func trimmer[T Object](opts Options) func(T) {
	if opts.KeepManagedFields {
		return nil
	}
	return func(o T) {
		if o.GetManagedFields() != nil {
			o.SetManagedFields(nil)
		}
	}
}

var _ informer.Source[*unstructured.Unstructured] = (*Source[*unstructured.Unstructured])(nil)

// New returns a source over the resource lw serves. items returns the Items
// of a list. For pods:
//
//	src, err := k8s.New(clientset.CoreV1().Pods("default"),
//		func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{})
//
// When lw is one of client-go's generated typed clients (a clientset's
// clientset.CoreV1().Pods(ns), or a generated clientset of custom
// resources), the source sends its requests through that client's REST
// client — the user's rest.Config with its TLS, authentication,
// impersonation, user agent and rate limiter, and the same wire format
// (protobuf for built-in types unless the config chose another, JSON for
// custom resources) — and decodes the responses itself:
//
//   - the items of a list and the events of a watch (and so of a streaming
//     list) are decoded on all cores (GOMAXPROCS goroutines), while the
//     stream arrives, and handed on in the server's order;
//   - managedFields are skipped in the protobuf bytes before decoding
//     (unless [Options.KeepManagedFields]);
//   - repeated strings are shared between objects ([Options.DisableStringSharing]),
//     and so are the spec subtrees objects repeat byte for byte
//     ([Options.DisableSubtreeSharing], which says why a cached object must
//     never be modified in place);
//   - an object that does not decode is counted ([Source.DecodeErrors]),
//     reported (see the package doc) and left out, and a deletion whose object does
//     not decode is delivered with the object's metadata, so no deletion is
//     lost. client-go's decoders fail the whole list or watch instead.
//
// The objects of one list page share one backing array, which lives while
// any of them does (as with client-go). Any other lw (a fake client, a
// wrapper) is used through its own List and Watch, converting lists by
// items and watch events by a type assertion to T, and so is every client
// with [Options.DisableDecoding]; managedFields are then dropped after
// decoding.
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
	bad := &decodeErrors{log: opts.Logger}
	if path, ok := restPathOf(lw); ok && !opts.DisableDecoding {
		itemsField, _ := itemsFieldOf[L]()
		d := &decodingClient[E, T]{path: path, itemsField: itemsField, codec: newCodec[E, T](opts), bad: bad}
		return d.newSource(opts), nil
	}
	src := &Source[T]{
		trim:      trimmer[T](opts),
		bad:       bad,
		client:    fmt.Sprintf("%T", lw),
		snapCodec: clientCodec[E, T](lw, opts),
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
	}
	if p, ok := clientPathOf(lw); ok {
		src.path = &p
	}
	return src, nil
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
	if s.trim != nil {
		for _, o := range items {
			s.trim(o)
		}
	}
	return informer.ListPage[T]{Items: items, Version: meta.GetResourceVersion(), Continue: meta.GetContinue()}, meta, nil
}
