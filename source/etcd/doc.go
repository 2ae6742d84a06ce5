// Package etcd is an [informer.Source] over a key prefix of etcd: a typed,
// paged, consistent list and a watch that resumes, so that a
// [informer.SharedInformer] keeps a typed, indexed cache of the prefix.
//
// The source yields *[Object][T]: the etcd key, the decoded value and the
// key's revisions. The key is always there, even when a value cannot be
// decoded, so a deletion is never lost; [KeyFunc] and [IndexFunc] plug the
// objects into an informer.
//
// # Versions
//
// An object's version is its mod revision; the collection's version (of a
// list page, of a watch event) is an etcd store revision, as a decimal
// string; [Source.CompareVersions] orders them as integers, so
// [informer.SharedInformer.WaitForVersion] can wait for a write's revision.
// Lists map [informer.ReadMode] onto etcd reads:
//
//   - ReadLatest: a linearizable read (quorum), the current revision.
//   - ReadAny: a serializable read, served by the member the client talks to,
//     possibly stale.
//   - ReadNotOlderThan v: a serializable read, retried as a linearizable one
//     when the member is behind v; still behind v: [informer.ErrVersionTooLarge].
//   - ReadExact v: a read at revision v. A compacted v gives
//     [informer.ErrExpired], a future one [informer.ErrVersionTooLarge].
//
// Every page of one list is read at the revision of the first page; the next
// page starts after the last key of the previous one. The continue token is an
// opaque encoding of (revision, next key); once the revision is compacted it
// gives [informer.ErrExpired].
//
// # Watches
//
// A watch opened at version v streams the changes after revision v. A
// Deleted event carries the last state of the key. With a Filter, the watch
// asks etcd for the previous value of every event (prev_kv), which the
// filter needs; without one, the source reads the previous values of the
// deleted keys itself, at the revision before each deletion, in one
// transaction per watch response, so that puts (most of the traffic) cost
// etcd no extra read and no extra bytes. A watch asks etcd for progress
// notifications, which become [informer.EventBookmark] events, and requires
// a leader: a watch on a member cut off from the quorum fails with
// [informer.ErrTransient] instead of going silent. A compacted start
// revision ends the watch with an Error event wrapping [informer.ErrExpired],
// so a reflector relists.
//
// Streaming lists ([informer.WatchOptions.SendInitialEvents]) read the
// state at one revision (fixed first by a single-key read) and send it as
// Added events, then a Bookmark with InitialEventsEnd, then the watch from
// the next revision. They use etcd's RangeStream (etcd 3.7 and later): one
// request answered in chunks, each decoded on up to GOMAXPROCS goroutines
// while the next arrives, and no count of the rest of the range, which every
// limited Range request makes etcd walk (so a list paged with Range costs
// etcd the square of the key count over the page size). Against an older
// etcd, or the gRPC proxy, they read pages with Range instead,
// [Options.PageSize] keys each (zero: pages grown to about 2 MB), fetching
// the next page while decoding the current one. The informer keeps the cache
// as it was until the end marker, so it never shows half a list.
//
// Events pass from etcd's watch channel to the consumer through a bounded
// buffer ([Options.WatchBuffer], 100 by default): a slow consumer stops the
// source from reading etcd's channel rather than growing memory in the source
// (the etcd client itself still buffers what its gRPC stream receives).
//
// [Source.RequestProgress] asks every open watch for a bookmark at a revision
// it has fully delivered (etcd's on-demand progress), the consistent way to
// learn that a watch has caught up with a write.
//
// # Connections and liveness
//
// Each watch runs on a gRPC connection of its own to one of the client's
// endpoints, taken in turn, dialled with the client's own settings
// ([clientv3.Client.Dial]: TLS, credentials, keepalive, dial options) and
// closed when the watch ends. A streaming list (the initial events of a
// watch) and the watch's reads of previous values run on that connection
// too, so a relist after a network failure does not wait on the client's
// connections; paged lists ([Source.List]) use the client. A client whose
// Watcher was replaced (namespace.NewWatcher, for one) or that has no
// endpoints is used as it is: its watches share its connections (and a
// replaced KV is used for every read).
//
// A watch whose connection is silently dropped (a half-open TCP flow: no
// traffic, no close, no error) would otherwise wait forever: etcd's client
// resumes broken streams by itself, and gRPC keepalive cannot be set under
// 10 s and only pings a connection while a stream uses it. Each watch
// therefore sends a progress request after [Options.LivenessInterval]
// without news from etcd, and ends with an Error event wrapping
// [informer.ErrTransient] when no answer comes within
// [Options.LivenessTimeout]; etcd must confirm a new watch within
// LivenessTimeout too. A watch also ends with ErrTransient at once when its
// connection closes or fails (its member went away) or the client is
// closed. The reflector re-watches from the last revision it applied, on a
// new connection to the next endpoint, so the recovery does not wait for
// gRPC to find each dead connection: once the network heals, the informer
// is current again within LivenessTimeout plus the reflector's backoff
// delay (a streaming list on a silent connection fails as fast: etcd must
// answer its first read within LivenessTimeout): in the tests, 0.9–1.7 s after a 5 s blackhole of every member. The
// delay grows during a long outage (client-go's 0.8 s doubling to 30 s,
// plus jitter); [informer.Backoff].Max caps it.
//
// Recommended client settings:
//
//	clientv3.Config{
//		Endpoints:            endpoints,        // every member
//		DialTimeout:          5 * time.Second,  // bounds authentication
//		DialKeepAliveTime:    10 * time.Second, // gRPC's floor
//		DialKeepAliveTimeout: 5 * time.Second,
//	}
//
// Keepalive drops the client's own dead connections (those paged lists use): one
// that a request waits on is closed within DialKeepAliveTime +
// DialKeepAliveTimeout of its last traffic, and etcd's client retries the
// read on another member. It also bounds, through TCP_USER_TIMEOUT, how long
// the kernel keeps a connection whose sent data is not acknowledged. Leave
// PermitWithoutStream off: etcd servers do not accept pings on connections
// without streams and close them ("too_many_pings").
//
// # Filters and bad values
//
// [Options.Filter] selects objects in the source. As in the Kubernetes
// apiserver's etcd3 watcher, a modification that makes an object start
// matching is delivered as Added, one that makes it stop matching as Deleted
// (carrying its previous, matching state).
//
// A value that fails [Options.Transform] or the codec is treated as absent:
// it is reported (to [Options.ErrorHandler] as a *[DecodeError] with key and
// revision, to [Options.Logger], and counted by [Source.DecodeErrors]) and
// never delivered as a put. A list skips it; a watch delivers it as a
// Deleted of the key's previous state if that one was delivered, exactly as
// an object leaving the filter. So the cache holds the keys whose current
// value decodes, the same whether it was built by a list or a watch, and the
// watch goes on. A later good value arrives as Modified, or as Added when a
// Filter is set: the previous value of a put is decoded only when the event
// depends on it (with a Filter, or when the new value is bad), so without a
// Filter the source cannot tell a key whose previous value was bad from one
// it delivered. An informer applies both alike. A deletion whose
// previous value does not decode still arrives as Deleted with the key, a
// zero Value and [Object.ValueUnknown] set.
package etcd
