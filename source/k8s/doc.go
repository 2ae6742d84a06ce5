// Package k8s provides [informer.Source] implementations over the Kubernetes
// API, through client-go clients, so that an [informer.SharedInformer] keeps a
// typed, indexed cache of a resource: *corev1.Pod rather than interface{}.
//
//	pods := clientset.CoreV1().Pods("default")
//	src, err := k8s.New(pods, func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{})
//	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.Pod]{
//		Source:  src,
//		KeyFunc: k8s.Key[*corev1.Pod],
//		Indexes: []informer.Index[*corev1.Pod]{
//			k8s.FieldIndex("node", func(p *corev1.Pod) string { return p.Spec.NodeName }),
//		},
//	})
//
// Five constructors cover the usual clients: [New] for typed clients (any
// list type with an Items slice), [NewDynamic] for *unstructured.Unstructured
// of any GroupVersionResource, [NewMetadata] for *metav1.PartialObjectMetadata,
// and [NewForConfig] for custom resources without a generated clientset,
// decoded from a rest.Config straight into the program's own Go type, and
// [NewProjection] for a struct of only the fields a controller reads.
// The namespace is the client's (Pods("default"), or Pods("") for all);
// [Options] adds label and field selectors, passed to every list and watch.
//
// # Decoding
//
// With a generated typed client (and with [NewForConfig] and
// [NewProjection]) the source sends its requests through the client's own
// REST client — the user's rest.Config, its transport and rate limiter, the
// same wire format — and decodes the responses itself: on every core, in
// the server's order; protobuf with a decoder planned from the types' tags
// that skips managedFields unread and shares the strings and spec subtrees
// objects repeat; a relist decodes only the objects whose resourceVersion
// changed (the others are the objects already delivered). managedFields
// are dropped by default ([Options.KeepManagedFields]): the one default that
// differs from client-go. Cached objects share values, as they share them
// in any informer: never modify one (DeepCopy first).
//
// Sharing goes further here: objects share the spec subtrees they repeat
// byte for byte, and the labels, annotations and owner references of their
// metadata, so a program that modifies one pod's resource limits (or
// labels) in place modifies those of every pod of its Deployment, and of
// pods decoded later. [Options.DisableSubtreeSharing] turns subtree sharing off (and
// [Options.DisableStringSharing] string sharing, separately);
// [Options.SharingBudget] bounds the tables' memory and [Source.Sharing]
// reports their entries, bytes and hit rate.
//
// Objects that do not
// decode are counted ([Source.DecodeErrors]), reported to the informer
// ([informer.ReportSourceError], wrapping [informer.ErrDecode]: its metrics
// under class decode, its Health, ErrorHandler and log; logged by the
// source only when no informer listens) and left out; a deletion is
// delivered with the object's metadata even then.
// [NewProjection] caches a struct that declares only the fields a controller
// reads. docs/k8s.md has the design, docs/benchmarks.md the measurements.
//
// # Versions
//
// Versions are resourceVersions. [Source.List] maps the read modes of the
// contract onto resourceVersion and resourceVersionMatch: ReadLatest is ""
// (consistent), ReadAny is "0" (the watch cache, any age), ReadNotOlderThan
// and ReadExact pass the version with match NotOlderThan or Exact. Limit and
// Continue are passed through. Watches ask for bookmarks.
// [Source.CompareVersions] orders resourceVersions as integers (the API
// calls them opaque; see there), so
// [informer.SharedInformer.WaitForVersion] can wait for the resourceVersion
// a write returned.
//
// # Errors
//
// API errors are classified onto the contract's sentinels, the original
// *apierrors.StatusError kept in the chain: 410 Gone / Expired →
// [informer.ErrExpired]; "Too large resource version" →
// [informer.ErrVersionTooLarge]; connection refused or reset, 429, 503 and
// server timeouts → [informer.ErrTransient]; 500 → [informer.ErrInternal].
//
// A watch whose connection dies silently is found by client-go's HTTP/2
// health check (a ping after 30 s without a frame, 15 s for its answer):
// the connection is closed and the watch ends with an Error event. The
// source declares those 45 s as its liveness bound ([Source.LivenessBound]:
// the environment may change them; 0 where client-go's transport has no
// such check, or the source cannot see it).
//
// # Streaming lists
//
// [informer.WatchOptions.SendInitialEvents] becomes a watch with
// sendInitialEvents=true, resourceVersionMatch=NotOlderThan and bookmarks:
// the server sends the state as ADDED events, then a bookmark annotated
// k8s.io/initial-events-end, which the source turns into
// [informer.Event.InitialEventsEnd]. A server that refuses the request
// (WatchList disabled) yields errors.ErrUnsupported, and the reflector falls
// back to paged lists; a server that ignores it never sends the marker, and
// the reflector's StreamingListTimeout does the same.
//
// # Sharding
//
// [Sharded] serves a replica's slice of a resource (package shard): it sends
// the slice as a ShardSelector, which an apiserver with the
// ShardedListAndWatch gate applies, and filters by the same hash on the
// client whatever the server did; [Sharded.Mode] says which side filters.
// The slice comes from a shard.Owner or from [StaticSlices] ([Split]).
//
// # Warm restarts
//
// Every source is an [informer.SnapshotSource]: an informer with
// [informer.Options.Snapshot] keeps its cache on disk between runs, under
// the source's identity (server, cluster, resource, namespace, selectors:
// [Source.SnapshotIdentity]) and in its codec (protobuf for the generated
// types read through typed clients, JSON otherwise: [Source.SnapshotCodec]).
// A restarted informer resumes with a watch from the snapshot's version
// that marks when it has caught up ([informer.WatchOptions.NotifyCaughtUp],
// see [Source.Watch]): the apiserver receives watches, GETs and a list of
// one name no object has, no list of the collection and no streaming list,
// and the marker comes at once when nothing else was written since, else
// with the watch cache's bookmark (about 1 s). Marking needs get on the
// resource (and, to be quick, list in its namespace); without
// it, for a resource the apiserver does not cache, after the watch cache's
// window (410) and always for a [Sharded] source, the informer relists,
// and a source that decodes itself decodes only the objects that changed
// since the snapshot (the snapshot's objects count as delivered).
//
// # Keys and indexes
//
// [Key] names objects by namespace and name without allocating.
// [NamespaceIndex], [LabelIndex], [OwnerIndex] and [FieldIndex] build the
// common secondary indexes, and [StripManagedFields] is a ready transform
// (for clients the source does not decode for, managedFields are dropped
// already, unless [Options.KeepManagedFields]).
//
// The subpackage compat adapts a ginformer informer to client-go's
// cache.SharedIndexInformer, for code (and controller-runtime) written
// against client-go.
package k8s
