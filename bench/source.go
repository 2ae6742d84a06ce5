package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/informer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// The fake list+watch both informers consume. A list returns the response
// the driver prepared (a fresh deep copy made before the clock starts, like
// a decoded response: a *PodList for client-go's ListWatch, a []*Pod for
// ginformer's source); a watch is an unbuffered stream the driver feeds
// (watch.NewFake for client-go, informer.NewWatchStream(ctx, 0) for
// ginformer). Neither side pays for decoding.

var errNoList = errors.New("bench: no list response prepared")

// epoch is the shared clock origin of latency samples.
var epoch = time.Now()

func since() int64 { return int64(time.Since(epoch)) }

// counter counts handler callbacks and closes a channel when a target is
// reached. Each handler has its own.
type counter struct {
	n      atomic.Int64
	target atomic.Int64
	mu     sync.Mutex
	ch     chan struct{}
	// Latency recording (nil sends: off). sends[i] is when the event whose
	// object has Generation i was sent; lat collects handler-start minus send.
	sends []atomic.Int64
	lat   []float64
}

func (c *counter) hit(obj *corev1.Pod) {
	if c.sends != nil {
		now := since()
		c.lat = append(c.lat, float64(now-c.sends[obj.Generation].Load()))
	}
	if v := c.n.Add(1); v == c.target.Load() {
		c.mu.Lock()
		if c.ch != nil {
			close(c.ch)
			c.ch = nil
		}
		c.mu.Unlock()
	}
}

// arm returns a channel closed once the count reaches target.
func (c *counter) arm(target int64) <-chan struct{} {
	ch := make(chan struct{})
	c.mu.Lock()
	c.ch = ch
	c.target.Store(target)
	if c.n.Load() >= target {
		close(ch)
		c.ch = nil
	}
	c.mu.Unlock()
	return ch
}

func (c *counter) wait(ctx context.Context, target int64) error {
	select {
	case <-c.arm(target):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("handler saw %d of %d events: %w", c.n.Load(), target, ctx.Err())
	}
}

// harness is one running informer of either library with its handlers.
type harness struct {
	side     Side
	counters []*counter
	synced   <-chan struct{} // the informer's own HasSynced
	cancel   context.CancelFunc
	done     chan struct{}

	// client-go
	cgList    atomic.Pointer[corev1.PodList]
	cgWatches chan *watch.FakeWatcher
	cgWatch   *watch.FakeWatcher
	cgInf     cache.SharedIndexInformer
	// ginformer
	giList    atomic.Pointer[[]*corev1.Pod]
	giWatches chan *informer.WatchStream[*corev1.Pod]
	giWatch   *informer.WatchStream[*corev1.Pod]
	giInf     *informer.SharedInformer[informer.NamespacedKey, *corev1.Pod]
}

// cgListWatch is client-go's ListWatch with the documented opt-out from
// streaming lists for clients that do not support them (fake clients): the
// reflector then does LIST + WATCH, as ginformer's does with a source that
// has no streaming list.
type cgListWatch struct{ *cache.ListWatch }

func (cgListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// newHarness builds (not starts) an informer with handlers handlers, and
// latency recording when sends is not nil.
func newHarness(s Side, handlers int, sends []atomic.Int64) *harness {
	h := &harness{side: s, done: make(chan struct{})}
	for range handlers {
		h.counters = append(h.counters, &counter{sends: sends})
	}
	if s == ClientGo {
		h.cgWatches = make(chan *watch.FakeWatcher, 16)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				if l := h.cgList.Swap(nil); l != nil {
					return l, nil
				}
				return nil, errNoList
			},
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				w := watch.NewFake()
				h.cgWatches <- w
				return w, nil
			},
		}
		h.cgInf = cache.NewSharedIndexInformerWithOptions(cgListWatch{lw}, &corev1.Pod{},
			cache.SharedIndexInformerOptions{Indexers: cgIndexers()})
		for _, c := range h.counters {
			_, err := h.cgInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(obj interface{}) { c.hit(obj.(*corev1.Pod)) },
				UpdateFunc: func(_, obj interface{}) { c.hit(obj.(*corev1.Pod)) },
				DeleteFunc: func(obj interface{}) {
					if p, ok := obj.(*corev1.Pod); ok {
						c.hit(p)
					}
				},
			})
			if err != nil {
				panic(err)
			}
		}
		h.synced = h.cgInf.HasSyncedChecker().Done()
		return h
	}
	h.giWatches = make(chan *informer.WatchStream[*corev1.Pod], 16)
	src := informer.SourceFuncs[*corev1.Pod]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*corev1.Pod], error) {
			if l := h.giList.Swap(nil); l != nil {
				return informer.ListPage[*corev1.Pod]{Items: *l, Version: "1"}, nil
			}
			return informer.ListPage[*corev1.Pod]{}, fmt.Errorf("%w: %w", errNoList, informer.ErrTransient)
		},
		WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*corev1.Pod], error) {
			w := informer.NewWatchStream[*corev1.Pod](ctx, 0)
			h.giWatches <- w
			return w, nil
		},
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.Pod]{
		Source: src, KeyFunc: giKey, Indexes: giIndexes(), Name: "bench",
	})
	if err != nil {
		panic(err)
	}
	h.giInf = inf
	for _, c := range h.counters {
		_, err := inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *corev1.Pod]{
			AddFunc:    func(p *corev1.Pod, _ bool) { c.hit(p) },
			UpdateFunc: func(_, p *corev1.Pod) { c.hit(p) },
			DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, *corev1.Pod]) { c.hit(d.Object) },
		}, informer.HandlerOptions{})
		if err != nil {
			panic(err)
		}
	}
	h.synced = inf.Synced()
	return h
}

// setList prepares the next list response from the template (deep copies).
func (h *harness) setList(tmpl []*corev1.Pod, rv string) {
	if h.side == ClientGo {
		h.cgList.Store(PodList(tmpl, rv))
	} else {
		l := Copies(tmpl)
		h.giList.Store(&l)
	}
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		if h.side == ClientGo {
			h.cgInf.RunWithContext(ctx)
		} else {
			_ = h.giInf.Run(ctx)
		}
	}()
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
}

// waitAll waits until every handler has counted target callbacks in total.
func (h *harness) waitAll(target int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, c := range h.counters {
		if err := c.wait(ctx, target); err != nil {
			panic(fmt.Sprintf("%v: %v", h.side, err))
		}
	}
}

// nextWatch waits for the informer's current watch.
func (h *harness) nextWatch() {
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	if h.side == ClientGo {
		select {
		case h.cgWatch = <-h.cgWatches:
		case <-t.C:
			panic("client-go: no watch")
		}
		return
	}
	select {
	case h.giWatch = <-h.giWatches:
	case <-t.C:
		panic("ginformer: no watch")
	}
}

// send delivers one Modified event (blocks until the informer receives it:
// both streams are unbuffered).
func (h *harness) send(p *corev1.Pod) {
	if h.side == ClientGo {
		h.cgWatch.Modify(p)
		return
	}
	if !h.giWatch.Send(informer.Event[*corev1.Pod]{Type: informer.EventModified, Object: p, Version: p.ResourceVersion}) {
		panic("ginformer: watch stopped")
	}
}

// expire ends the current watch with "version expired", which makes both
// reflectors relist.
func (h *harness) expire() {
	if h.side == ClientGo {
		h.cgWatch.Error(&metav1.Status{
			Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version",
		})
		return
	}
	h.giWatch.Send(informer.Event[*corev1.Pod]{Type: informer.EventError, Err: fmt.Errorf("too old version: %w", informer.ErrExpired)})
	h.giWatch.Close()
}
