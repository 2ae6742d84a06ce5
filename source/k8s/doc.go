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
// Four constructors cover the usual clients: [New] for typed clients (any
// list type with an Items slice), [NewDynamic] for *unstructured.Unstructured
// of any GroupVersionResource, [NewMetadata] for *metav1.PartialObjectMetadata,
// and [NewForConfig] for custom resources without a generated clientset,
// decoded from a rest.Config straight into the program's own Go type.
// The namespace is the client's (Pods("default"), or Pods("") for all);
// [Options] adds label and field selectors, passed to every list and watch.
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
// # Keys and indexes
//
// [Key] names objects by namespace and name without allocating.
// [NamespaceIndex], [LabelIndex], [OwnerIndex] and [FieldIndex] build the
// common secondary indexes, and [StripManagedFields] is a ready transform.
//
// The subpackage compat adapts a ginformer informer to client-go's
// cache.SharedIndexInformer, for code (and controller-runtime) written
// against client-go.
package k8s
