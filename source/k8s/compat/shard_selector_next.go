//go:build clientgo_next

// This file needs client-go v0.38 (k8s.io/apimachinery/pkg/sharding does
// not exist in v0.37): only scripts/clientgo-next.sh builds it, with
// -tags clientgo_next. shard_selector.go stands in for it otherwise.

package compat

import (
	"context"
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/ginformer/ginformer/informer"
)

// shardLW is the ListerWatcher an [Informer]'s source lists and watches
// through: the caller's, or client-go's cache.NewShardedListWatch over it
// once [Informer.SetShardSelector] has set a selector.
type shardLW = *switchLW

// newShardLW returns the ListerWatcher of an informer over lw, with no
// shard selector.
func newShardLW(lw cache.ListerWatcher) shardLW {
	s := &switchLW{base: lw}
	s.set(lw)
	return s
}

// switchLW forwards to the ListerWatcher last set. It is set only before
// the informer starts (under Informer.mu, which Run takes before starting
// the engine); cur is atomic so that a reader need not know that.
type switchLW struct {
	base cache.ListerWatcher                            // the caller's
	cur  atomic.Pointer[cache.ListerWatcherWithContext] // base, or base sharded
}

var (
	_ cache.ListerWatcher            = (*switchLW)(nil)
	_ cache.ListerWatcherWithContext = (*switchLW)(nil)
)

func (s *switchLW) set(lw cache.ListerWatcher) {
	c := cache.ToListerWatcherWithContext(lw)
	s.cur.Store(&c)
}

func (s *switchLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), o)
}

func (s *switchLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), o)
}

func (s *switchLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return (*s.cur.Load()).ListWithContext(ctx, o)
}

func (s *switchLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return (*s.cur.Load()).WatchWithContext(ctx, o)
}

// IsWatchListSemanticsUnSupported is the caller's ListerWatcher's answer
// (as client-go's sharded ListerWatcher gives), so that a fake client
// still gets plain lists.
func (s *switchLW) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(s.base)
}

// SetShardSelector restricts the informer to the objects selector matches,
// as client-go v0.38's does: the selector is sent with every list and watch
// request (ListOptions.ShardSelector), and where the server does not apply
// it (a list without ListMeta.ShardInfo, as from a server without the
// ShardedListAndWatch feature), the lists and watch events are filtered
// client-side with selector.Matches (client-go's
// cache.NewShardedListWatch does both, over the Options' ListerWatcher).
// Objects outside the shard are never cached nor handed to handlers. A nil
// or empty selector (sharding.Everything) removes the restriction. It must
// be called before Run; the last call wins.
//
// The snapshot identity of [Options.Snapshot] does not name the selector:
// Options.Snapshot.Identity must (it must name the other selectors too).
// An informer over a ListerWatcher that already sets a shard selector of
// its own gets list and watch errors naming the conflict, as client-go's.
//
// Possible errors: [informer.ErrAlreadyStarted].
func (inf *Informer) SetShardSelector(selector sharding.Selector) error {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.started {
		return fmt.Errorf("compat: set shard selector: %w", informer.ErrAlreadyStarted)
	}
	if selector != nil {
		selector = selector.DeepCopySelector()
	}
	inf.lw.set(cache.NewShardedListWatch(inf.lw.base, selector))
	return nil
}
