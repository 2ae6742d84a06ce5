package workqueue

import "github.com/ginformer/ginformer/informer"

// Handler returns an informer handler that queues the key of every object
// added, updated (the new object's key; resyncs included) or deleted (the
// [informer.Deletion]'s Key), so that an informer feeds q in one line:
//
//	inf.AddHandler(workqueue.Handler(q, podKey), informer.HandlerOptions{Name: "pods"})
//
// key is normally the informer's own KeyFunc; both type arguments are
// inferred from q and key. An object whose key function fails is not
// queued: with the informer's KeyFunc this never happens, as the informer
// refuses such objects before any handler sees them. A key function that
// panics panics in the handler, which the informer recovers and reports.
// With a nil key, only deletions are queued.
//
// The handler never blocks: an add is a map update under the queue's lock.
// Queue keys of another type (an owner's key, say) with a
// [informer.HandlerFuncs] of your own.
func Handler[K comparable, T any](q *Queue[K], key informer.KeyFunc[K, T]) informer.HandlerFuncs[K, T] {
	enqueue := func(obj T) {
		if key == nil {
			return
		}
		if k, err := key(obj); err == nil {
			q.Add(k)
		}
	}
	return informer.HandlerFuncs[K, T]{
		AddFunc:    func(obj T, _ bool) { enqueue(obj) },
		UpdateFunc: func(_, obj T) { enqueue(obj) },
		DeleteFunc: func(d informer.Deletion[K, T]) { q.Add(d.Key) },
	}
}
