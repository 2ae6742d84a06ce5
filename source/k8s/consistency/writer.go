package consistency

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/go-logr/logr"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// Client is the part of a typed client-go client of one resource that a
// [Writer] writes through: client-go's generated typed clients
// (clientset.CoreV1().ConfigMaps(ns)) and those generated for custom
// resources satisfy it as they are, with C their object type.
type Client[C k8s.Object] interface {
	Create(ctx context.Context, obj C, opts metav1.CreateOptions) (C, error)
	Update(ctx context.Context, obj C, opts metav1.UpdateOptions) (C, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (C, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (C, error)
}

// statusUpdater is the UpdateStatus of a typed client of a resource with a
// status subresource.
type statusUpdater[C any] interface {
	UpdateStatus(ctx context.Context, obj C, opts metav1.UpdateOptions) (C, error)
}

// Writer writes through a typed client and records each write, so that its
// reads of the informer's cache ([Writer.Get], [Writer.List],
// [Writer.WaitForWrites]) wait until the cache shows them. C is the client's
// object type, T the cache's: the same type, or a projection of C (see
// [k8s.NewProjection]), or any [k8s.Object] whose metadata carries the
// object's resourceVersion and UID (a Transform must keep both).
//
// The informer must cache the objects the client writes: a write to an
// object outside the informer's namespace or selectors never reaches the
// cache as an event, and a read waiting for it waits for its bound (or for
// a later event or bookmark of the cache).
//
// A Writer is safe for concurrent use by any number of goroutines; it holds
// no lock while it waits or calls the API. Its record of writes holds only
// what the cache does not show yet: each entry is dropped once the cache has
// applied it. Its zero value is not usable: see [NewWriter].
type Writer[C, T k8s.Object] struct {
	client Client[C]
	inf    *informer.SharedInformer[informer.NamespacedKey, T]
	reg    *informer.Registration[informer.NamespacedKey, T]
	rec    *record
	opts   Options
	log    logr.Logger
}

// NewWriter returns a writer through client whose reads wait on inf's cache.
// C, the client's object type, cannot be inferred from an interface value:
// name it, as in
//
//	w, err := consistency.NewWriter[*corev1.ConfigMap](clientset.CoreV1().ConfigMaps(ns), inf, consistency.Options{})
//
// The writer registers a handler on inf (named "consistency-" +
// [Options.Name]) that follows the versions and deletions the cache
// applies; [Writer.Close] removes it. Like any handler added late, it first
// receives the cache's current objects; after that it costs a few atomic
// operations per change (BenchmarkWriter/handler-event). It may be called
// before inf runs or after. Make one writer per controller and share it:
// each has its own handler.
//
// Possible errors: [informer.ErrInvalidOptions] (a nil client or informer,
// an invalid Options), and those of [informer.SharedInformer.AddHandler]
// ([informer.ErrClosed]: inf has stopped).
func NewWriter[C, T k8s.Object](client Client[C], inf *informer.SharedInformer[informer.NamespacedKey, T], opts Options) (*Writer[C, T], error) {
	if client == nil || inf == nil {
		return nil, fmt.Errorf("consistency: NewWriter: a client and an informer are required: %w", informer.ErrInvalidOptions)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Writer[C, T]{client: client, inf: inf, opts: opts, log: opts.Logger.WithValues("writer", opts.Name)}
	w.rec = newRecord(w.gone)
	h := informer.HandlerFuncs[informer.NamespacedKey, T]{
		AddFunc:    func(obj T, _ bool) { w.observe(obj) },
		UpdateFunc: func(_, obj T) { w.observe(obj) },
		DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, T]) { w.observeDeletion(d) },
	}
	w.reg, err = inf.AddHandler(h, informer.HandlerOptions{Name: "consistency-" + opts.Name, ResyncPeriod: -1})
	if err != nil {
		return nil, fmt.Errorf("consistency: NewWriter: %w", err)
	}
	return w, nil
}

// Close removes the writer's handler from the informer and returns at once.
// Reads waiting then, and later ones that need to wait for a delete, end
// with [informer.ErrClosed]; writes still work (and are recorded).
func (w *Writer[C, T]) Close() { w.reg.Remove() }

// Create creates obj through the client and records the version the server
// returned. Possible errors: the client's.
func (w *Writer[C, T]) Create(ctx context.Context, obj C, opts metav1.CreateOptions) (C, error) {
	out, err := w.client.Create(ctx, obj, opts)
	if err == nil {
		w.wrote(out)
	}
	return out, err
}

// Update updates obj through the client and records the version the server
// returned. Possible errors: the client's.
func (w *Writer[C, T]) Update(ctx context.Context, obj C, opts metav1.UpdateOptions) (C, error) {
	out, err := w.client.Update(ctx, obj, opts)
	if err == nil {
		w.wrote(out)
	}
	return out, err
}

// UpdateStatus updates obj's status through the client and records the
// version the server returned.
//
// Possible errors: the client's; errors.ErrUnsupported (wrapped) when the
// client has no UpdateStatus (its resource has no status subresource).
func (w *Writer[C, T]) UpdateStatus(ctx context.Context, obj C, opts metav1.UpdateOptions) (C, error) {
	su, ok := w.client.(statusUpdater[C])
	if !ok {
		var zero C
		return zero, fmt.Errorf("consistency: %T has no UpdateStatus: %w", w.client, errors.ErrUnsupported)
	}
	out, err := su.UpdateStatus(ctx, obj, opts)
	if err == nil {
		w.wrote(out)
	}
	return out, err
}

// Patch patches the object name (or its subresources) through the client
// and records the version the server returned. Possible errors: the
// client's.
func (w *Writer[C, T]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (C, error) {
	out, err := w.client.Patch(ctx, name, pt, data, opts, subresources...)
	if err == nil {
		w.wrote(out)
	}
	return out, err
}

// Delete deletes the object name through the client and records it by UID:
// reads then wait until the cache no longer holds that object, though it
// may hold another of the same name created since.
//
// The API answers a delete with no version, so Delete first reads the
// object from the server (one GET) for its UID and version. An object that
// has finalizers, or is deleted with foreground or orphan propagation (the
// API server adds a finalizer), is not removed by the delete, only marked:
// Delete then reads it once more and records the marked version instead,
// which the cache shows as an update.
//
// Possible errors: the client's (a NotFound from the first read is returned
// as the delete's, without deleting).
func (w *Writer[C, T]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	before, err := w.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	key, kerr := k8s.Key(before)
	if err := w.client.Delete(ctx, name, opts); err != nil {
		return err
	}
	v, ok := parseVersion(before.GetResourceVersion())
	if kerr != nil || !ok {
		w.log.Error(kerr, "delete not recorded: reads will not wait for it", "name", name, "resourceVersion", before.GetResourceVersion())
		return nil
	}
	if len(before.GetFinalizers()) > 0 || finalizedByPolicy(opts) {
		after, err := w.client.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && after.GetUID() == before.GetUID():
			w.wrote(after) // marked, not removed
			return nil
		case err != nil && !apierrors.IsNotFound(err):
			// Not known whether it was removed: recorded as removed.
			// If it was only marked, reads wait for their bound until
			// it goes.
			w.log.V(1).Info("delete: read after delete failed", "name", name, "error", err.Error())
		}
	}
	w.rec.deleted(key, before.GetUID(), v)
	return nil
}

// finalizedByPolicy reports whether opts asks for foreground propagation or
// orphaning: the API server then adds a finalizer, and the object stays,
// marked, until the garbage collector has dealt with its dependents.
func finalizedByPolicy(opts metav1.DeleteOptions) bool {
	if opts.PropagationPolicy != nil {
		return *opts.PropagationPolicy != metav1.DeletePropagationBackground
	}
	//lint:ignore SA1019 deprecated but still honoured by the API server: a caller setting it gets the finalizer
	return opts.OrphanDependents != nil && *opts.OrphanDependents
}

// wrote records the object a write returned.
func (w *Writer[C, T]) wrote(obj C) {
	key, err := k8s.Key(obj)
	v, ok := parseVersion(obj.GetResourceVersion())
	if err != nil || !ok {
		w.log.Error(err, "write not recorded: reads will not wait for it", "name", obj.GetName(), "resourceVersion", obj.GetResourceVersion())
		return
	}
	w.rec.wrote(key, v)
}

// observe is the handler's: the cache has applied obj.
func (w *Writer[C, T]) observe(obj T) {
	if v, ok := parseVersion(obj.GetResourceVersion()); ok {
		w.rec.observe(v.n)
	}
	if key, err := k8s.Key(obj); err == nil {
		w.rec.touched(key)
	}
}

// observeDeletion is the handler's: the cache has dropped d.Object.
func (w *Writer[C, T]) observeDeletion(d informer.Deletion[informer.NamespacedKey, T]) {
	if v, ok := parseVersion(d.Object.GetResourceVersion()); ok {
		w.rec.observe(v.n)
	}
	w.rec.touched(d.Key)
}

// gone reports whether the cache no longer holds the object of uid under
// key (an object without a UID, from a fake client, by its absence).
func (w *Writer[C, T]) gone(key informer.NamespacedKey, uid types.UID) bool {
	obj, ok := w.inf.Lister().Get(key)
	return !ok || (uid != "" && obj.GetUID() != uid)
}
