package informer

// Handler receives the changes of a [SharedInformer]'s cache, in order per
// key. Each registered handler has its own goroutine and queue: its methods
// are called one at a time, never concurrently with each other, never while
// the informer holds a lock, and a slow handler delays only itself.
//
// The objects passed are shared with the cache: treat them as read-only.
type Handler[K comparable, T any] interface {
	// OnAdd is called when obj enters the cache. isInInitialList is true for
	// the objects of the informer's first list, and for the current contents
	// delivered to a handler registered after the informer started.
	OnAdd(obj T, isInInitialList bool)
	// OnUpdate is called when an object changes, and on a resync (then old
	// and new are the same object).
	OnUpdate(old, new T)
	// OnDelete is called when an object leaves the cache.
	OnDelete(d Deletion[K, T])
}

// Deletion describes an object that left the cache: a typed tombstone.
type Deletion[K comparable, T any] struct {
	// Key is the key the object was stored under.
	Key K
	// Object is the last state of the object the cache knew.
	Object T
	// FinalStateUnknown is true when the deletion was not observed but
	// inferred (the object was missing from a relist after a watch gap):
	// Object may then be stale.
	FinalStateUnknown bool
}

// HandlerFuncs adapts functions to a [Handler]; nil functions are skipped,
// so a partial handler sets only what it needs. At least one must be set:
// [SharedInformer.AddHandler] refuses a HandlerFuncs with none (it would
// receive everything and do nothing, which is always a mistake).
type HandlerFuncs[K comparable, T any] struct {
	AddFunc    func(obj T, isInInitialList bool)
	UpdateFunc func(old, new T)
	DeleteFunc func(d Deletion[K, T])
}

// OnAdd calls AddFunc if it is set.
func (h HandlerFuncs[K, T]) OnAdd(obj T, isInInitialList bool) {
	if h.AddFunc != nil {
		h.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc if it is set.
func (h HandlerFuncs[K, T]) OnUpdate(old, new T) {
	if h.UpdateFunc != nil {
		h.UpdateFunc(old, new)
	}
}

// OnDelete calls DeleteFunc if it is set.
func (h HandlerFuncs[K, T]) OnDelete(d Deletion[K, T]) {
	if h.DeleteFunc != nil {
		h.DeleteFunc(d)
	}
}
