// Package debughttp serves a read-only page that shows what the informers
// of a [informer.Group] are doing, for the engineer on call: one card per
// informer with its types, whether it is running and synced (and, once its
// source has failed for longer than its liveness bound, for how long and
// how stale its cache may be), the version its cache has applied and when,
// the last list, event and error, counts of lists, watch restarts and
// errors by class, queue depth, objects, its source's liveness bound, a
// restored snapshot still catching up, the last snapshot written, its
// indexes, and its handlers (backlog, coalescing, call in progress, stuck
// calls). What needs looking at is
// listed at the top and on the card, in red (errors) or amber (warnings);
// an error is quoted once per card, as its last error. Each informer's
// keys can be browsed a page at a time and searched, each key linking to
// its cached object.
//
// Mount it in the program's own mux, behind the program's own
// authentication: it shows cached data (objects included, on request).
//
//	mux.Handle("/debug/informers", debughttp.Handler(group))
//
// [WithMetricsLink] adds a link to the program's metrics. Auto-refresh is
// off unless the page is asked for it (links at the top set ?refresh=).
//
// # Requests
//
// GET or HEAD; any other method gets 405. N is an informer's name
// ([informer.Options].Name, as the page shows it), K a key formatted with
// %v (for an [informer.NamespacedKey], "namespace/name"):
//
//	/debug/informers                      the page, for people
//	/debug/informers?format=json          the same as JSON (the page document
//	                                      below), for machines
//	/debug/informers?informer=N           informer N's keys, a page at a time,
//	                                      sorted, each linking to its object;
//	                                      &format=json: as JSON (the keys
//	                                      document below)
//	    &q=S&match=contains|prefix        only the keys containing (or starting
//	                                      with) S, case-sensitive, S at most
//	                                      256 bytes (more: 400)
//	    &limit=L                          L keys a page (default 100, at most 1000)
//	    &after=K | &before=K | &last=1    the page after key K, before key K, the last
//	/debug/informers?informer=N&key=K     the cached object of informer N whose
//	                                      key is K, as JSON
//	&refresh=S                            on an HTML page: reload it every S
//	                                      seconds (1 to 3600); off without it
//
// A page of keys is one pass over every key of the informer with
// O(limit) memory: 0.12 s per million string keys on a busy 2-core
// machine, 0.26 s per million NamespacedKeys; passes run one at a time
// per [Handler] (a request waits for the one in progress, or for its own
// context to end: 503). Keys are read without locks, weakly consistent:
// pages read at different times may skip or repeat a key added or deleted
// in between. The other requests cost what [informer.Inspector]'s views
// cost. The handler never writes to an informer and never waits for a
// source or a handler. It uses the standard library only, and
// html/template escapes everything it shows.
//
// # JSON
//
// The JSON documents are the contract (there are no Go types for them to
// import: decode the keys you need). Keys are camelCase; times are RFC
// 3339 strings with nanoseconds; a key marked "omitted" is left out when
// empty (a time: when it has not happened). A request that fails answers
// {"error": "..."} with a 4xx or 5xx status.
//
// The page document, ?format=json:
//
//	time                   time       when the page was read
//	informers              [informer] every informer of the Source, in its order
//
// An informer (see [informer.Health] for the meaning of each):
//
//	name                   string     its Options.Name
//	types                  string     "K → T"
//	running, synced        bool
//	appliedVersion         string     the newest version the cache applied; omitted
//	appliedAt              time       when; omitted
//	lastListAt             time       the last complete list received; omitted
//	lastEventAt            time       the last watch event received (not an error); omitted
//	lastError              string     the last error survived; omitted
//	lastErrorAt            time       when; omitted
//	failingSince           time       the first failure of the source's current
//	                                  outage; omitted while the source answers
//	staleSeconds           number     how stale the cache may be: seconds since the
//	                                  source last answered; omitted unless synced
//	                                  and the source has failed for longer than
//	                                  livenessBoundSeconds (with none: at all)
//	livenessBoundSeconds   number     how long a dead watch of the source can go
//	                                  unnoticed (informer.LivenessBounder); omitted
//	                                  when the source declares none
//	lists, watchRestarts   number     since Run started
//	errors                 {class: number}  errors survived by class; omitted
//	queueDepth, objects    number
//	restored               bool       serving a restored snapshot not yet caught up
//	restoredVersion        string     the snapshot restored at start; omitted
//	restoredAt             time       when it was loaded; omitted
//	snapshotVersion        string     the last snapshot written; omitted
//	snapshotAt             time       when; omitted
//	snapshotBytes          number     its size; omitted
//	start                  string     how the start used the snapshot: cold, refused,
//	                                  verifying, catching-up, resumed, relisted; omitted
//	startReason            string     why, for refused and relisted; omitted
//	stuckThresholdSeconds  number     0: stuck calls are not reported
//	indexes                [{"name": string, "values": number}]  distinct values per index
//	handlers               [handler]  in registration order
//	longestCall            string     the handler whose call has run longest; omitted
//	problems               [{"level": "error"|"warning", "text": string}]
//	                                  what to look at, errors first; [] when healthy
//
// A handler:
//
//	name                   string
//	coalesce, synced       bool
//	backlog                number     notifications waiting
//	runningSeconds         number     the call in progress; 0 when idle
//	runningKey             string     its key; omitted
//	stuck                  bool       the call has run past the stuck threshold
//	stuckCalls             number     calls reported stuck since the handler was added
//
// The keys document, ?informer=N&format=json:
//
//	informer               string     N
//	q                      string     the search; omitted without one
//	match                  string     "contains" or "prefix"
//	limit                  number     the most keys a page holds
//	keys                   [string]   the page, sorted byte-wise; [] when none match
//	matched                number     the keys that match (all without a search)
//	offset                 number     matches sorted before keys[0]
//	hasPrev, hasNext       bool       matches sort before (after) the page: the
//	                                  previous page is &before=keys[0], the next
//	                                  &after= the last key
//
// A problem's level is "error" when the informer is not running; has not
// synced (and holds no restored snapshot); has a handler whose call in
// progress has run past the stuck threshold; or its source's latest
// answer was an error (a list or watch error under five minutes old,
// newer than the last list and event). It is "warning" when it serves a
// restored snapshot it has not yet caught up from; its last error is
// under five minutes old but is not the source's latest answer (the
// source has answered since, or the error is the informer's own: a
// handler, a key, index or transform function, a snapshot, an object the
// source could not decode); a handler had calls reported stuck before; a
// handler of a synced informer has not synced.
//
// # The liveness bound
//
// A synced informer whose source has failed (FailingSince set) keeps its
// green "synced" badge for the source's liveness bound
// ([informer.LivenessBounder]: the etcd source's LivenessInterval plus
// LivenessTimeout, 5 s by default; Kubernetes and NATS KV: what their
// clients' health checks give), then the badge turns amber: "synced ·
// source down D, stale up to S" ([informer.Health.StaleFor]). Within the
// bound, a watch that looks alive may lag as much unnoticed, and the
// reflector's first retries end most blips. A source that declares no
// bound (the memory source, a [informer.SourceFuncs]) gets no such grace:
// the badge turns as soon as the source fails, since nothing says a
// failure of that source is routine.
package debughttp
