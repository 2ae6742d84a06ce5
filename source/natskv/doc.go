// Package natskv is an [informer.Source] over a NATS JetStream key-value
// bucket: a typed, paged list at one revision and a watch that resumes
// from a revision, so that a [informer.SharedInformer] keeps a typed, indexed
// cache of the bucket. It needs nats-server 2.11 or later (batched direct
// gets) and the jetstream package of nats.go.
//
// The source yields *[Object][T]: the KV key, the decoded value and the
// key's revision. The key is always there, even when a value cannot be
// decoded or is no longer known, so a deletion is never lost; [KeyFunc] and
// [IndexFunc] plug the objects into an informer.
//
// # Versions
//
// A KV bucket is a stream (KV_<bucket>) with one subject per key; every
// put, delete and purge is a message, and its stream sequence is the
// revision jetstream.KeyValue returns. Revisions are the source's versions,
// as decimal strings: an object's is its last change's, a list's or an
// event's is a stream sequence. [Source.CompareVersions] orders them as
// integers, so [informer.SharedInformer.WaitForVersion] can wait for the
// revision a write returned.
//
// A revision is served while the stream holds every message after it: v is
// expired ([informer.ErrExpired]) once v+1 is below the stream's first
// sequence (history limits, purges, max age, a stream purge), and a v above
// the stream's last sequence is in the future
// ([informer.ErrVersionTooLarge]).
//
// # Lists
//
// A list reads a snapshot of the bucket in one of two ways.
//
// A bucket of up to 1024 keys (deleted ones included) is read in one
// batched direct get ("multi_last" over the bucket's subjects), which the
// server answers under the stream's read lock: the last message of every
// key at one sequence, which it reports and which is the list's version.
// That snapshot is exact.
//
// A larger bucket (or one without direct gets) is read through an ordered
// consumer of the bucket's subjects with the deliver-last-per-subject
// policy: the server fixes, when it creates the consumer, the last message
// of every key, sends those, then every message after them in order. The
// source applies each message over any older one of its key (a put sets
// the key, a delete or purge removes it) until the consumer reports nothing
// pending; the sequence of the newest message applied is the list's
// version S. This is the state at S, with one exception the stream makes
// unavoidable: a key whose messages up to S the stream removes while the
// list is being read, because a later write of that key trimmed its
// history (a history limit, a purge), can be missing or stale in the list.
// That later write has a revision after S, so the watch the informer opens
// from S delivers it and sets the key right; the cache converges, but a
// consumer of the list alone sees such keys as of their next write. In the
// tests (a writer on 30 hot keys racing lists of 1130 keys) up to one key
// per list differed this way; on a quiet bucket none. An empty bucket lists
// at the stream's last sequence.
//
// [informer.ListOptions.Mode] maps onto this snapshot:
//
//   - ReadLatest, ReadAny: the snapshot.
//   - ReadNotOlderThan v: the snapshot, which is never older than a v the
//     stream had reached; a v past the stream's last sequence gives
//     [informer.ErrVersionTooLarge].
//   - ReadExact v: the snapshot, only if it is at v (nothing was written
//     since). A stream keeps at most a few revisions per key and no index
//     by revision, so an older state cannot be rebuilt: ReadExact at an
//     older v gives errors.ErrUnsupported (an expired one ErrExpired, a
//     future one ErrVersionTooLarge). The informer never uses ReadExact.
//
// Pages: a stream cannot be read "after key k as of revision S", so paging
// is done in the source. The first page of a list with a Limit reads the
// whole snapshot, returns the first Limit keys (in key order) and keeps the
// rest under the continue token for [Options.ContinueTTL], at most
// [Options.MaxContinues] lists at once; each page's token differs, so a
// page can be read again. A token that is malformed, unknown, dropped or
// expired, or whose revision the stream has removed (its first sequence
// has passed it: a compaction, in the contract's terms), gives
// [informer.ErrExpired], and the informer lists again. Paging bounds the
// size of each page, not the memory of the process that runs the source.
//
// # Watches
//
// A watch opened at version v reads the stream from sequence v+1 through an
// ordered consumer of the bucket's subjects (the client recreates it from
// the last delivered sequence when the connection or the server is lost,
// so a server restart does not lose or repeat a change). Each message
// becomes one event whose version is its revision:
//
//   - a put becomes Added when the key was absent before (or the stream
//     holds no earlier message of it), else Modified;
//   - a delete or purge marker, and a put whose value does not decode,
//     become Deleted with the key's previous state (its Revision is the
//     marker's); when the key was already absent, a Bookmark at that
//     revision (nothing changed for the consumer).
//
// The previous state of a key is what the watch last saw of it; for the
// first message of a key in a watch, the source reads the key's last
// message before it from the stream (a direct get, one request, only at the
// first sight of each key). The stream keeps it only if the bucket keeps
// history: with History 1 (the KV default) a delete replaces the value, a
// purge always removes the earlier values, so such a Deleted event carries
// the key alone, with [Object.ValueUnknown] set. The informer applies it by
// key all the same, and its handlers receive the last state the cache
// held. A stream without direct gets (AllowDirect off; jetstream creates
// buckets with it on) gives no previous states at all: a put of a key the
// watch has not seen arrives as Modified, a delete with the key alone. Each
// watch remembers the last state of the keys it has seen (a map
// entry per key, sharing the objects it delivered).
//
// A watch delivers every message of the stream after v, or ends: the
// sequences of a KV stream are all the bucket's, so a message skipped (a
// sequence missing between two delivered ones) means the stream removed it
// before the watch read it (a history limit superseding it, a purge, max
// age, or a stream purge). The watch then ends with an Error event wrapping
// [informer.ErrExpired], and the informer lists again, rather than go on
// without knowing whether it lost a deletion. A watch that falls behind a
// bucket with a short history therefore relists; History 64 (the most)
// makes that rare.
//
// Streaming lists ([informer.WatchOptions.SendInitialEvents]) send a
// snapshot (as List reads it) as Added events, a Bookmark with
// InitialEventsEnd at its revision, and then the changes after it, like a
// watch from that revision; a version asks for a snapshot not older than
// it. A watch asked for [informer.WatchOptions.NotifyCaughtUp] sends a
// Bookmark with InitialEventsEnd once it has delivered the stream's last
// revision as of its start (see [Source.Watch]). Watches have no other
// bookmarks: every revision of the stream is a change of the bucket, so the
// version of the last event is always the newest the watch has reached.
// [informer.WatchOptions.Timeout] ends a watch normally.
//
// # Snapshots
//
// The source is an [informer.SnapshotSource], so an informer over it can
// keep its cache on disk and restart warm ([informer.SnapshotOptions]): it
// watches from the snapshot's revision instead of listing the bucket. The
// snapshot's identity includes the stream's creation time: a bucket deleted
// and created again (its revisions start again at 1) refuses the snapshots
// taken of the old one. See [Source.SnapshotIdentity] and
// [Source.SnapshotCodec].
//
// Events pass to the consumer through a bounded buffer
// ([Options.WatchBuffer], 100 by default): a slow consumer stops the source
// from reading the consumer's messages.
//
// # What the contract cannot get from NATS KV
//
//   - Past states (ReadExact at an older revision): see Lists.
//   - An exact list of a bucket of more than 1024 keys under writes that
//     trim history: see Lists (the informer still converges).
//   - Deleted events always carrying the previous value: only while the
//     stream still holds it, or the watch saw it (see Watches).
//   - Keys that vanish without a marker are invisible to a watch that has
//     already passed them: messages removed by the bucket's max age (TTL)
//     when the bucket writes no limit markers (set LimitMarkerTTL, nats-server
//     2.11+, so expiries leave purge markers, which become Deleted events),
//     and a purge of the stream itself (jetstream.Stream.Purge, not the KV
//     Purge, which writes a marker). The cache keeps such keys until the
//     next list; a watch that had not yet read them fails with ErrExpired.
//
// # Bad values
//
// A value that fails the codec is treated as absent: it is reported (as a
// *[DecodeError] with key and revision, wrapping [informer.ErrDecode], to
// the informer through [informer.ReportSourceError]: its metrics under
// class decode, its Health and ErrorHandler and its log; to
// [Options.ErrorHandler]; to [Options.Logger] only when no informer
// listens; and counted by [Source.DecodeErrors]) and never
// delivered as a put. A list skips it; a watch delivers it as a Deleted of
// the key's previous state (the key alone when that is unknown), so the
// cache holds the keys whose current value decodes, the same whether it was
// built by a list or a watch, and the watch goes on. A later good value
// arrives as Modified.
//
// So an update that does not decode deletes the key from an informer's
// cache: its handlers are given a deletion of the last state they saw
// (the informer fills it in when the source sends the key alone), and the
// cache never keeps serving the state the update replaced. A second bad
// update of the key, now absent, is reported and changes nothing. This is
// the policy of the etcd source too (docs/sources.md, "An update that does
// not decode").
//
// # Errors
//
// Failures that pass (a lost or closed connection, timeouts, no
// responders, missed heartbeats) wrap [informer.ErrTransient]: the
// reflector retries from the same revision. A missing bucket is returned
// unclassified (the reflector backs off and lists again).
//
// A lost connection is never survived silently. The source watches the
// client's connection status: when it disconnects or starts reconnecting
// (a server restart, a network failure) or closes, a list in progress
// fails and an open watch ends with an Error event, both wrapping
// [informer.ErrTransient], though the client would reconnect and its
// ordered consumer resume by itself. The informer thus counts the outage
// (metric class transient, Health), and its reflector watches again from
// the last revision delivered, checking that the stream still holds the
// revisions after it (else it relists); [Source.WaitReachable] lets it do
// so as soon as the server answers again. A watch costs one more
// goroutine for this.
//
// The source declares no liveness bound ([informer.LivenessBounder]), so
// an informer takes any failure of it at once (the debug page's stale
// badge). A connection that dies silently (a half-open TCP flow) is found
// by the client's pings, after PingInterval × (MaxPingsOut + 1) at most
// (6 min with nats.go's defaults), and the watch then ends as above; but a
// watch whose ordered consumer missed its idle heartbeats before that
// (after 10 s) is inside the client, which recreates the consumer and, in
// nats.go v1.55, retries without limit and without looking at the watch's
// context: the watch sees the lost connection only once the server
// answers again.
package natskv
