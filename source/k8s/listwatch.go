package k8s

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/ginformer/ginformer/informer"
)

// NewFromListerWatcher returns a source of [Object] over a client-go
// cache.ListerWatcher, the interface client-go's informers and
// controller-runtime hand out. Lists are untyped there, so their items are
// extracted with meta.ExtractList, which uses reflection, as client-go's own
// reflector does; prefer [New] when a typed client is at hand. The
// ListerWatcher's context-aware methods are used when it has them, and a
// ListerWatcher that declares it does not support streaming lists
// (IsWatchListSemanticsUnSupported, as client-go's fake clients do) gets
// plain lists.
//
// Possible errors: those of [New].
func NewFromListerWatcher(lw cache.ListerWatcher, opts Options) (*Source[Object], error) {
	if lw == nil {
		return nil, fmt.Errorf("k8s: NewFromListerWatcher: nil ListerWatcher: %w", informer.ErrInvalidOptions)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		opts.DisableStreamingList = true
	}
	lwc := cache.ToListerWatcherWithContext(lw)
	return &Source[Object]{
		trim:      trimmer[Object](opts),
		bad:       &decodeErrors{log: opts.Logger},
		client:    fmt.Sprintf("%T", lw),
		snapCodec: newRuntimeCodec(scheme.Scheme),
		list: func(ctx context.Context, o metav1.ListOptions) ([]Object, metav1.ListInterface, error) {
			l, err := lwc.ListWithContext(ctx, o)
			if err != nil {
				return nil, nil, err
			}
			lm, err := meta.ListAccessor(l)
			if err != nil {
				return nil, nil, fmt.Errorf("k8s: list returned %T: %w", l, err)
			}
			raw, err := meta.ExtractListWithAlloc(l)
			if err != nil {
				return nil, nil, fmt.Errorf("k8s: list returned %T: %w", l, err)
			}
			out := make([]Object, 0, len(raw))
			for _, r := range raw {
				o, ok := r.(Object)
				if !ok {
					return nil, nil, fmt.Errorf("k8s: list item %T has no object metadata", r)
				}
				out = append(out, o)
			}
			return out, lm, nil
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return lwc.WatchWithContext(ctx, o)
		},
		opts: opts,
	}, nil
}
