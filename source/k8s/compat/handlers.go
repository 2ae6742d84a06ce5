package compat

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// registration is the handle of a handler: a
// cache.ResourceEventHandlerRegistration that also offers ShutdownChan, so
// that cache.ShutDownEventHandler can wait for it.
type registration struct {
	inf     *Informer
	reg     *informer.Registration[Key, k8s.Object]
	removed atomic.Bool // set by RemoveEventHandler: no more calls
}

// HasSynced reports whether the informer has synced and the handler has
// received every object of the first list (or, for a handler added late,
// the contents it was given on joining).
func (r *registration) HasSynced() bool { return r.reg.HasSynced() }

// HasSyncedChecker returns a DoneChecker done once [registration.HasSynced].
func (r *registration) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: r.inf.name + " handler", ch: r.reg.Synced()}
}

// ShutdownChan is closed once the handler will never be called again: its
// goroutine has exited, after RemoveEventHandler or once the informer has
// stopped.
func (r *registration) ShutdownChan() <-chan struct{} { return r.reg.Done() }

// adapter turns the engine's typed callbacks into client-go's.
type adapter struct {
	h   cache.ResourceEventHandler
	reg *registration
}

func (a adapter) OnAdd(obj k8s.Object, isInInitialList bool) {
	if !a.reg.removed.Load() {
		a.h.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate passes updates on, except those of a relist that found an
// object unchanged (a different copy at the same resourceVersion): client-go
// hands those only to handlers due for a resync, and the engine notifies
// every handler of them; dropping them keeps client-go's "no change, no
// update" for handlers that do not resync.
func (a adapter) OnUpdate(old, new k8s.Object) {
	if a.reg.removed.Load() {
		return
	}
	if old != new {
		if rv := new.GetResourceVersion(); rv != "" && rv == old.GetResourceVersion() {
			return
		}
	}
	a.h.OnUpdate(old, new)
}

// OnDelete passes the object, or, for a deletion that was inferred from a
// relist rather than observed, a cache.DeletedFinalStateUnknown tombstone
// holding the key and last known state, as client-go does.
func (a adapter) OnDelete(d informer.Deletion[Key, k8s.Object]) {
	if a.reg.removed.Load() {
		return
	}
	if d.FinalStateUnknown {
		a.h.OnDelete(cache.DeletedFinalStateUnknown{Key: d.Key.String(), Obj: d.Object})
		return
	}
	a.h.OnDelete(d.Object)
}

// AddEventHandler adds h with the informer's default resync period. See
// [Informer.AddEventHandlerWithOptions].
func (inf *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return inf.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds h with its own resync period; zero
// means no resync for h. See [Informer.AddEventHandlerWithOptions].
func (inf *Informer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return inf.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds h. As with client-go, h receives the
// current contents as adds (isInInitialList true) and then every change,
// sequentially, on its own goroutine; a resync period (nil: the informer's;
// zero: none) gives it periodic OnUpdate(obj, obj) for every cached object.
// The Logger option is ignored.
//
// Possible errors: [informer.ErrClosed] when the informer has stopped;
// [informer.ErrInvalidOptions] when h is nil or a typed nil (client-go
// accepts it and panics at the first event).
func (inf *Informer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if isNil(h) {
		return nil, fmt.Errorf("compat: handler is nil (%T): %w", h, informer.ErrInvalidOptions)
	}
	if inf.IsStopped() {
		return nil, fmt.Errorf("compat: %w: handler %v was not added to shared informer because it has stopped already", informer.ErrClosed, h)
	}
	var ho informer.HandlerOptions
	if opts.ResyncPeriod != nil {
		ho.ResyncPeriod = *opts.ResyncPeriod
		if ho.ResyncPeriod <= 0 {
			ho.ResyncPeriod = -1 // never
		}
	}
	r := &registration{inf: inf}
	reg, err := inf.eng.AddHandler(adapter{h: h, reg: r}, ho)
	if err != nil {
		return nil, fmt.Errorf("compat: %w", err)
	}
	r.reg = reg
	inf.mu.Lock()
	if inf.stopped {
		// Stopped while the engine added it: see RunWithContext.
		inf.mu.Unlock()
		r.removed.Store(true)
		reg.Remove()
		return nil, fmt.Errorf("compat: %w: handler %v was not added to shared informer because it has stopped already", informer.ErrClosed, h)
	}
	inf.regs[r] = struct{}{}
	inf.mu.Unlock()
	return r, nil
}

// isNil reports whether h is nil or holds a nil pointer, map or func.
func isNil(h cache.ResourceEventHandler) bool {
	if h == nil {
		return true
	}
	switch v := reflect.ValueOf(h); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func:
		return v.IsNil()
	}
	return false
}

// RemoveEventHandler removes a handler added to this informer. It is
// idempotent and does not wait: h is not called after it returns (except
// for a call in progress), and its goroutine exits soon after; use
// cache.ShutDownEventHandler to wait for that. It may be called from the
// handler itself.
//
// Possible errors: a handle that does not come from this informer.
func (inf *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*registration)
	if !ok || r.inf != inf {
		return fmt.Errorf("compat: handle %v was not added to this informer", handle)
	}
	r.removed.Store(true)
	r.reg.Remove() // does not wait, so the handler itself may call it
	inf.mu.Lock()
	delete(inf.regs, r)
	inf.mu.Unlock()
	return nil
}
