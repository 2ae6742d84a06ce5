package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
// ginformer's source); a watch is a stream the driver feeds, each side's
// channel shaped as its own real source shapes it: unbuffered for client-go
// (watch.NewFake, like the StreamWatcher its Kubernetes watches go
// through), watchBuffer events for ginformer (informer.NewWatchStream, with
// the default WatchBuffer of its etcd and Kubernetes sources). Neither side
// pays for decoding.

// watchBuffer is the buffer of ginformer's watch stream: the default
// WatchBuffer of source/etcd and source/k8s.
const watchBuffer = 100

var errNoList = errors.New("bench: no list response prepared")

// epoch is the shared clock origin of latency samples.
var epoch = time.Now()

func since() int64 { return int64(time.Since(epoch)) }

// counter is one benchmark handler: it does the same small piece of work on
// both sides (see handlerWork), counts its callbacks (updates apart) and
// closes a channel when a target is reached.
type counter struct {
	n       atomic.Int64
	updates atomic.Int64
	target  atomic.Int64
	mu      sync.Mutex
	ch      chan struct{}
	work    handlerWork
	// rec, if set, records latencies (see recording).
	rec atomic.Pointer[recording]
	// sentinel, if set: its seen is closed when the pod of its name is
	// added.
	sentinel atomic.Pointer[sentinel]
	// probe, if set, is told of every callback (see liveProbe).
	probe atomic.Pointer[liveProbe]
}

// sentinel is a pod name a counter watches for (see counter.watch).
type sentinel struct {
	name string
	seen chan struct{}
	once sync.Once
}

// watch returns a channel closed when the pod named name is added.
func (c *counter) watch(name string) <-chan struct{} {
	s := &sentinel{name: name, seen: make(chan struct{})}
	c.sentinel.Store(s)
	return s.seen
}

func (c *counter) hit(p *corev1.Pod, update bool) {
	var now int64
	rec := c.rec.Load()
	if rec != nil {
		now = since()
	}
	c.work.do(p)
	if update {
		c.updates.Add(1)
	}
	v := c.n.Add(1)
	if pr := c.probe.Load(); pr != nil {
		pr.callback()
	}
	if rec != nil {
		if k := v - 1 - rec.base; k >= 0 && k < int64(len(rec.stamps)) {
			rec.lat = append(rec.lat, float64(now-rec.stamps[k]))
		}
	}
	if !update {
		if s := c.sentinel.Load(); s != nil && p.Name == s.name {
			s.once.Do(func() { close(s.seen) })
		}
	}
	if v == c.target.Load() {
		c.mu.Lock()
		if c.ch != nil {
			close(c.ch)
			c.ch = nil
		}
		c.mu.Unlock()
	}
}

// recording is a counter's latency recording: stamps[k] is when the k-th
// event after the first base callbacks was sent (since()); every handler
// sees events in order, so its callback number says which event it is. lat
// collects handler-start minus send, in ns; only the handler's goroutine
// appends to it, and it is read once the informer has stopped.
type recording struct {
	stamps []int64
	base   int64
	lat    []float64
}

// record starts latency recording for the next len(stamps) events: the
// handler has seen base callbacks so far.
func (c *counter) record(stamps []int64, base int64) {
	c.rec.Store(&recording{stamps: stamps, base: base, lat: make([]float64, 0, len(stamps))})
}

// latencies returns the samples recorded (nil if none).
func (c *counter) latencies() []float64 {
	if r := c.rec.Load(); r != nil {
		return r.lat
	}
	return nil
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
	giList atomic.Pointer[[]*corev1.Pod]
	// giListVersion is the version of the list response prepared (set
	// with giList, before it).
	giListVersion string
	// paged, when set, answers the next list instead: page by page as the
	// reflector asks (Limit, Continue), each page deep-copied when it is
	// asked for, as a paging source decodes it; cleared after its last page.
	paged atomic.Pointer[pagedList]
	// probe, if set, is told of every list page served (see liveProbe).
	probe     atomic.Pointer[liveProbe]
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

// harnessOptions configures a harness.
type harnessOptions struct {
	handlers  int
	nodeIndex bool // add the node index (spec.nodeName) to both informers
}

// newHarness builds (not starts) an informer with its handlers.
func newHarness(s Side, o harnessOptions) *harness {
	h := &harness{side: s, done: make(chan struct{})}
	for range o.handlers {
		c := &counter{}
		c.work.byNode = make(map[string]int)
		h.counters = append(h.counters, c)
	}
	if s == ClientGo {
		h.cgWatches = make(chan *watch.FakeWatcher, 16)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
				if pl := h.paged.Load(); pl != nil {
					items, rv, cont := pl.page(h, int(o.Limit), o.Continue)
					l := PodList(items, rv)
					l.Continue = cont
					return l, nil
				}
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
		idx := cgIndexers()
		if o.nodeIndex {
			idx[nodeIndex] = cgNodeIndex
		}
		h.cgInf = cache.NewSharedIndexInformerWithOptions(cgListWatch{lw}, &corev1.Pod{},
			cache.SharedIndexInformerOptions{Indexers: idx})
		for _, c := range h.counters {
			_, err := h.cgInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(obj interface{}) { c.hit(obj.(*corev1.Pod), false) },
				UpdateFunc: func(_, obj interface{}) { c.hit(obj.(*corev1.Pod), true) },
				DeleteFunc: func(obj interface{}) {
					if p, ok := obj.(*corev1.Pod); ok {
						c.hit(p, false)
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
		ListFunc: func(_ context.Context, o informer.ListOptions) (informer.ListPage[*corev1.Pod], error) {
			if pl := h.paged.Load(); pl != nil {
				items, rv, cont := pl.page(h, o.Limit, o.Continue)
				return informer.ListPage[*corev1.Pod]{Items: Copies(items), Version: rv, Continue: cont}, nil
			}
			if l := h.giList.Swap(nil); l != nil {
				return informer.ListPage[*corev1.Pod]{Items: *l, Version: h.giListVersion}, nil
			}
			return informer.ListPage[*corev1.Pod]{}, fmt.Errorf("%w: %w", errNoList, informer.ErrTransient)
		},
		WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*corev1.Pod], error) {
			w := informer.NewWatchStream[*corev1.Pod](ctx, watchBuffer)
			h.giWatches <- w
			return w, nil
		},
	}
	idx := giIndexes()
	if o.nodeIndex {
		idx = append(idx, giNodeIndex())
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.Pod]{
		Source: src, KeyFunc: giKey, Indexes: idx, Name: "bench",
		// Relists drop unchanged pods (client-go has no such option; the
		// Relist rows say what each side delivered).
		ObjectVersion: func(p *corev1.Pod) string { return p.ResourceVersion },
	})
	if err != nil {
		panic(err)
	}
	h.giInf = inf
	for _, c := range h.counters {
		_, err := inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *corev1.Pod]{
			AddFunc:    func(p *corev1.Pod, _ bool) { c.hit(p, false) },
			UpdateFunc: func(_, p *corev1.Pod) { c.hit(p, true) },
			DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, *corev1.Pod]) { c.hit(d.Object, false) },
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
		h.giListVersion = rv
		h.giList.Store(&l)
	}
}

// pagedList is a list response served page by page (see harness.paged).
type pagedList struct {
	tmpl []*corev1.Pod
	rv   string
}

// page returns the template pods of the page after token cont (a start
// index; "" is the first page) of at most limit items (0: all), the list's
// version and the next page's token ("" after the last page, which also
// clears h.paged). The caller copies the pods in its library's shape.
func (pl *pagedList) page(h *harness, limit int, cont string) ([]*corev1.Pod, string, string) {
	start := 0
	if cont != "" {
		var err error
		if start, err = strconv.Atoi(cont); err != nil {
			panic(err)
		}
	}
	if pr := h.probe.Load(); pr != nil {
		pr.page()
	}
	end := len(pl.tmpl)
	if limit > 0 {
		end = min(start+limit, end)
	}
	next := ""
	if end < len(pl.tmpl) {
		next = strconv.Itoa(end)
	} else {
		h.paged.Store(nil)
	}
	return pl.tmpl[start:end], pl.rv, next
}

// setPagedList makes the next list answer tmpl page by page (see paged).
func (h *harness) setPagedList(tmpl []*corev1.Pod, rv string) {
	h.paged.Store(&pagedList{tmpl: tmpl, rv: rv})
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

// syncedHarness builds and starts an informer over list (at version "1"),
// waits until every handler has received it and the informer has opened its
// watch: the state every workload that sends watch events starts from.
func syncedHarness(s Side, o harnessOptions, list []*corev1.Pod) *harness {
	h := newHarness(s, o)
	h.setList(list, "1")
	h.start()
	h.waitAll(int64(len(list)))
	h.nextWatch()
	return h
}

// recordNext starts latency recording, on every handler, for the next m
// events after the n callbacks each has seen, and returns the send stamps
// to fill.
func (h *harness) recordNext(m, n int) []int64 {
	stamps := make([]int64, m)
	for _, c := range h.counters {
		c.record(stamps, int64(n))
	}
	return stamps
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

// send delivers one Modified event: on client-go's unbuffered watch it
// blocks until the informer receives it; on ginformer's it blocks only
// while watchBuffer events wait.
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
