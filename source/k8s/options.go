package k8s

import (
	"fmt"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/lograte"
)

// Options configures a [Source]. The zero value is valid: every object the
// client can see, bookmarks and streaming lists on.
type Options struct {
	// LabelSelector restricts the source to objects whose labels match, in
	// the syntax of metav1.ListOptions.LabelSelector ("app=web,tier!=db").
	// It is passed to every list and watch. Zero: no restriction.
	LabelSelector string
	// FieldSelector restricts the source to objects whose fields match
	// ("spec.nodeName=node-1"); which fields are selectable depends on the
	// resource. Zero: no restriction.
	FieldSelector string
	// DisableBookmarks stops watches from asking for bookmarks
	// (AllowWatchBookmarks). A streaming list needs them, so it then answers
	// errors.ErrUnsupported. Zero: bookmarks requested.
	DisableBookmarks bool
	// DisableStreamingList makes Watch refuse
	// [informer.WatchOptions.SendInitialEvents] with errors.ErrUnsupported
	// without contacting the server, for servers that do not serve it well.
	// Zero: streaming lists are sent to the server, which may still refuse.
	DisableStreamingList bool
	// WatchBuffer is the number of converted events held between the
	// client-go watch and the consumer. Zero: 100. Negative: unbuffered.
	WatchBuffer int
	// KeepManagedFields keeps metadata.managedFields (server-side apply's
	// record of which manager set which field) on cached objects. They are
	// often half of an object's bytes and few controllers read them, so by
	// default they are dropped: skipped unread where the source decodes
	// itself (protobuf and JSON), dropped after decoding elsewhere (clients
	// the source does not decode for). This is the one default that
	// differs from client-go, whose caches keep them. Zero: dropped.
	KeepManagedFields bool
	// DisableStringSharing keeps every decoded string as decoded. By
	// default the strings that objects repeat (label keys and values,
	// namespaces, node names, owner kinds, image names, environment
	// variables) are shared between the cached objects through one
	// process-wide table, bounded (it forgets strings no decoded object has
	// asked for in a while, and stays within [Options.SharingBudget]);
	// strings unique to an object (name, UID, resourceVersion, container
	// IDs, pod IPs) and strings over 256 bytes are never shared. Applies
	// where the source decodes itself (see [New]). Zero: shared.
	DisableStringSharing bool
	// DisableSubtreeSharing decodes every spec subtree (and the labels,
	// annotations and owner references) of every object on its own. By
	// default, where the source decodes itself (protobuf or JSON), a field
	// of an object's spec that is a pointer to a message (a probe, a
	// security context), a repeated message (a container's env, ports or
	// volume mounts, the tolerations) or a map of messages (a container's
	// resource requests and limits) that another object repeats byte for
	// byte is shared with it, as are the object's labels, annotations and
	// owner references: the pods of one Deployment hold one copy.
	//
	// Shared values are read-only, as every cached object is: a program
	// that modifies one pod's resource limits in place modifies those of
	// every pod that shares them (its whole Deployment, and the pods
	// decoded later). Never modify a cached object; DeepCopy it first (the
	// mutation detector, GINFORMER_CACHE_MUTATION_DETECTOR=true, catches
	// offenders). A program that cannot promise that sets this field, and
	// keeps string sharing (strings are immutable). Zero: shared.
	DisableSubtreeSharing bool
	// SharingBudget bounds, in bytes, the memory of the process's sharing
	// tables (the strings and spec subtrees shared between decoded
	// objects, of every source). The tables are the process's, so their
	// budget is the largest of the live sources'; at the budget a table
	// forgets its older values, and a value that still does not fit is
	// decoded without being shared. When no source that shares is left
	// (sources are released by the garbage collector), the tables are
	// emptied. [Source.Sharing] reports their entries, bytes and hit rate.
	// Zero: 64 MiB. Negative: invalid.
	SharingBudget int64
	// DisableDecoding makes [New] go through the typed client's own List
	// and Watch (client-go's decoders, one goroutine per stream) instead of
	// decoding the responses itself on all cores. Zero: the source decodes
	// itself whenever the client is one of client-go's generated typed
	// clients.
	DisableDecoding bool
	// Logger receives the source's logs: objects that do not decode, at
	// error level, at most a few per 10 s (the next message says how many
	// were left out). Zero: [slog.Default] through [logr.FromSlogHandler],
	// which prints errors; pass logr.FromSlogHandler(slog.DiscardHandler)
	// to silence it.
	Logger logr.Logger
}

// validate checks the selectors and applies the defaults.
func (o *Options) validate() error {
	if _, err := labels.Parse(o.LabelSelector); err != nil {
		return fmt.Errorf("k8s: LabelSelector %q: %w: %w", o.LabelSelector, informer.ErrInvalidOptions, err)
	}
	if _, err := fields.ParseSelector(o.FieldSelector); err != nil {
		return fmt.Errorf("k8s: FieldSelector %q: %w: %w", o.FieldSelector, informer.ErrInvalidOptions, err)
	}
	if o.SharingBudget < 0 {
		return fmt.Errorf("k8s: SharingBudget %d: %w", o.SharingBudget, informer.ErrInvalidOptions)
	}
	o.Logger = lograte.OrDefault(o.Logger)
	switch {
	case o.WatchBuffer == 0:
		o.WatchBuffer = 100
	case o.WatchBuffer < 0:
		o.WatchBuffer = 0
	}
	return nil
}
