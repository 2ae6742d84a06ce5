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
// # Warm restarts
//
// The source is an [informer.SnapshotSource]: an informer with
// [informer.SnapshotOptions] keeps its cache on disk, encoded by
// [Source.SnapshotCodec] (key, revisions, and the value through the
// source's [Codec]), under an identity naming etcd's cluster ID, the prefix
// and the options that change the objects ([Source.SnapshotIdentity]).
// Restarted, it resumes with a watch from the snapshot's revision
// ([informer.WatchOptions.NotifyCaughtUp]): etcd replays what changed while
// it was down, then answers a progress request (which it does only once
// the watch has sent everything up to its current revision), and that
// answer is the caught-up marker. No range of the prefix is read, unless
// the revision was compacted meanwhile (the watch ends with
// [informer.ErrExpired] and the informer relists). A [Sharded] source
// always relists after a restore (see [Sharded.Watch]).
//
// Nor is any previous value read during the catch-up: without a Filter, a
// deletion the watch sends before its caught-up marker (and a put of a bad
// value, sent as a deletion) carries the key only, with
// [Object.ValueUnknown] set, where a later deletion carries the key's last
// state. The informer needs no more: it tells its handlers nothing before
// the marker, and removes the key from its cache. A key deleted while the
// program was down thus costs no read of etcd (one per key otherwise:
// 100k deletions caught up in 0.76 s instead of 3.4 s). A put of a bad
// value over a bad value, which would give no event, then gives such a
// deletion too, of a key the cache does not hold. With a Filter etcd sends
// every previous value (prev_kv) and the deletions carry it as usual.
//
// # Connections and liveness
//
// Each watch runs on a gRPC connection of its own to one of the client's
// endpoints, dialled with the client's own settings ([clientv3.Client.Dial]:
// TLS, credentials, keepalive, dial options) and closed when the watch ends.
// A streaming list (the initial events of a watch) and each page of a list
// ([Source.List]) also run on connections of their own, so a relist after a
// network failure never waits on the client's connections, which may still
// be dead. The endpoint of a new connection is the next one in turn that
// has not failed in the last 3 s (a watch or read that lost its connection
// or got no answer); when every endpoint has, the one that failed longest
// ago. A failure also ends the list reads open on that endpoint: a relist
// never waits on a connection a watch has already found dead. A client
// whose Watcher was replaced (namespace.NewWatcher, for one) or that has no
// endpoints is used as it is: its watches share its connections (and a
// replaced KV is used for every read).
//
// A watch that fails for a reason another member may not share (its
// connection closed, failed or silent, no leader, a read unanswered) moves
// at once to another endpoint, from the last revision it delivered, within
// the same stream: the reflector neither backs off nor relists, but the
// move is reported to it ([informer.ReportSourceError], wrapping
// [informer.ErrTransient]: the informer's metrics count it under class
// transient, its Health keeps it as the last error). Only when every endpoint has
// failed in a row without the watch delivering anything does the stream end
// with an Error event wrapping [informer.ErrTransient], and the reflector
// back off. A streaming list moves likewise while it has sent nothing.
//
// A watch whose connection is silently dropped (a half-open TCP flow: no
// traffic, no close, no error) would otherwise wait forever: etcd's client
// resumes broken streams by itself, and gRPC keepalive cannot be set under
// 10 s and only pings a connection while a stream uses it. Each watch
// therefore sends a progress request after a silence and counts the
// connection dead when no answer comes in time: on a quiet stream, after
// [Options.LivenessInterval] and within [Options.LivenessTimeout]; on a
// busy one, whose silence is suspect, after 8 times the last gap between
// two responses (at least 250 ms) and within 8 times that gap (at least
// 1 s, at most LivenessTimeout). So a dead stream is found within
// LivenessInterval plus LivenessTimeout, the source's liveness bound
// ([Source.LivenessBound], which an informer shows in its Health). A new
// connection must be ready (its handshake done) within LivenessTimeout, at
// most 1 s, and etcd must confirm a new watch within LivenessTimeout. Once the network heals, the
// informer is current again within a second or two: in the tests, 0.4–1.7 s
// after a 5 s blackhole of every member, and 0–2.4 s after the last of a
// series of short cuts of one member at a time with compactions every
// second.
//
// While no member answers (a quorum lost, every connection cut), the
// reflector backs off (client-go's 0.8 s doubling to 30 s, plus jitter),
// but the source implements [informer.ReachabilityWaiter]: it probes every
// endpoint for a member with a leader every 250 ms, and the reflector
// retries as soon as one answers, whatever its backoff had grown to (in the
// tests, a write after a quorum loss of 5 s is cached 70–80 ms after etcd
// answers again).
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
// Keepalive drops the client's own dead connections (those the client's own
// requests use; the source's watches and lists do not wait on them): one
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
// it is reported (as a *[DecodeError] with key and revision, wrapping
// [informer.ErrDecode], to the informer through
// [informer.ReportSourceError]: its metrics under class decode, its Health
// and ErrorHandler and its log; to [Options.ErrorHandler]; to
// [Options.Logger] only when no informer listens; and counted by
// [Source.DecodeErrors]) and never delivered as a put. A list skips it; a watch delivers it as a
// Deleted of the key's previous state if that one was delivered, exactly as
// an object leaving the filter. So the cache holds the keys whose current
// value decodes, the same whether it was built by a list or a watch, and the
// watch goes on. A later good value arrives as Modified, or as Added when a
// Filter is set: the previous value of a put is decoded only when the event
// depends on it (with a Filter, or when the new value is bad), so without a
// Filter the source cannot tell a key whose previous value was bad from one
// it delivered. An informer applies both alike. A deletion whose
// previous value does not decode still arrives as Deleted with the key, a
// zero Value and [Object.ValueUnknown] set (as does every deletion before a
// caught-up marker: see Warm restarts).
package etcd
