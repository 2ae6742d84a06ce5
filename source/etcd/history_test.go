package etcd_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// keyHistory records, while a test runs, what it needs to explain a key the
// cache ends up holding wrong (issue 29, item 3): every change the informer
// delivered to a handler (in order per key), the log lines that mark which
// member's stream delivered it (failovers, relists), etcd's own history of
// the prefix (a watch of its own on a direct client, from before the
// informer's first change), and every write the test attempted, acknowledged
// or not. Recording is appends under a mutex (a few thousand small records
// per run); nothing is printed unless a check fails. Safe for concurrent
// use.
type keyHistory struct {
	start time.Time
	names map[string]string // endpoint → member name, for the marks

	mu        sync.Mutex
	seq       int // changes delivered so far
	delivered map[string][]delivery
	marks     []streamMark
	etcd      map[string][]etcdChange
	etcdRev   int64 // the revision etcd's history is complete up to
	etcdGap   string
	writes    map[string][]writeAttempt
	etcdWake  chan struct{}
}

// delivery is one change a handler was given.
type delivery struct {
	seq     int
	at      time.Duration
	op      string // add, add(initial), update, delete, delete(final state unknown)
	objKey  string // the object's own Key (a delete: the key the cache used)
	mod     int64
	create  int64
	ptr     *etcd.Object[obj]
	prevMod int64 // an update's old object's ModRevision
	prevKey string
}

// streamMark is a log line of the source or reflector that tells which
// stream the changes after it came from.
type streamMark struct {
	at   time.Duration
	seq  int // changes delivered before it
	line string
}

// etcdChange is one event of etcd's own history of a key.
type etcdChange struct {
	at       time.Duration // when its event reached the recording watch
	op       string        // put, delete
	mod      int64
	create   int64
	prevMod  int64 // the previous value's ModRevision (0: none)
	valueGen string
}

// writeAttempt is one write the test asked etcd for.
type writeAttempt struct {
	at  time.Duration
	op  string
	gen int
	rev int64 // acknowledged revision; 0 when the write returned an error
	err string
}

func newKeyHistory(endpoints []string) *keyHistory {
	h := &keyHistory{start: time.Now(), names: map[string]string{}, delivered: map[string][]delivery{},
		etcd: map[string][]etcdChange{}, writes: map[string][]writeAttempt{}, etcdWake: make(chan struct{}, 1)}
	for i, ep := range endpoints {
		h.names[strings.TrimPrefix(ep, "http://")] = fmt.Sprintf("member %d", i)
	}
	return h
}

func (h *keyHistory) since() time.Duration { return time.Since(h.start) }

// handler records every change delivered, in the order the handler sees
// them (per key, the cache's order).
func (h *keyHistory) handler() informer.Handler[string, *etcd.Object[obj]] {
	rec := func(key string, d delivery) {
		h.mu.Lock()
		h.seq++
		d.seq, d.at = h.seq, h.since()
		h.delivered[key] = append(h.delivered[key], d)
		h.mu.Unlock()
	}
	return informer.HandlerFuncs[string, *etcd.Object[obj]]{
		AddFunc: func(o *etcd.Object[obj], initial bool) {
			op := "add"
			if initial {
				op = "add(initial)"
			}
			rec(o.Key, delivery{op: op, objKey: o.Key, mod: o.ModRevision, create: o.CreateRevision, ptr: o})
		},
		UpdateFunc: func(old, o *etcd.Object[obj]) {
			rec(o.Key, delivery{op: "update", objKey: o.Key, mod: o.ModRevision, create: o.CreateRevision, ptr: o,
				prevMod: old.ModRevision, prevKey: old.Key})
		},
		DeleteFunc: func(d informer.Deletion[string, *etcd.Object[obj]]) {
			op := "delete"
			if d.FinalStateUnknown {
				op = "delete(final state unknown)"
			}
			rec(d.Key, delivery{op: op, objKey: d.Object.Key, mod: d.Object.ModRevision, ptr: d.Object})
		},
	}
}

// logLine keeps the lines that tell where the informer's changes came from:
// a watch or list moved to another member, a relist, a list's end.
func (h *keyHistory) logLine(args string) {
	for _, s := range []string{"moved to", "relisting", "caches populated", "source unavailable", "the source asked"} {
		if strings.Contains(args, s) {
			h.mu.Lock()
			h.marks = append(h.marks, streamMark{at: h.since(), seq: h.seq, line: h.nameEndpoints(args)})
			h.mu.Unlock()
			return
		}
	}
}

// nameEndpoints adds the member's name after each proxy endpoint in s.
func (h *keyHistory) nameEndpoints(s string) string {
	for ep, name := range h.names {
		s = strings.ReplaceAll(s, ep, ep+" ("+name+")")
	}
	return s
}

// write records a write attempt of the test's writers.
func (h *keyHistory) write(key, op string, gen int, rev string, err error) {
	a := writeAttempt{at: h.since(), op: op, gen: gen}
	a.rev, _ = strconv.ParseInt(rev, 10, 64)
	if err != nil {
		a.err = err.Error()
	}
	h.mu.Lock()
	h.writes[key] = append(h.writes[key], a)
	h.mu.Unlock()
}

// watchEtcd records etcd's own history of prefix (keys without it) from
// revision from on, through cli, until ctx is done. A compaction that
// overtakes it (it should not: it reads as fast as etcd writes) is noted
// and the history goes on from the compacted revision.
func (h *keyHistory) watchEtcd(ctx context.Context, cli *clientv3.Client, prefix string, from int64) {
	h.mu.Lock()
	h.etcdRev = from - 1
	h.mu.Unlock()
	for ctx.Err() == nil {
		h.watchEtcdOnce(ctx, cli, prefix, &from)
	}
}

// watchEtcdOnce is one etcd watch of watchEtcd, from *from on; it moves
// *from past what it recorded.
func (h *keyHistory) watchEtcdOnce(ctx context.Context, cli *clientv3.Client, prefix string, from *int64) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := cli.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(*from),
		clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	for resp := range wch {
		if resp.CompactRevision != 0 {
			h.mu.Lock()
			h.etcdGap += fmt.Sprintf("history lost from %d to %d (compacted); ", *from, resp.CompactRevision)
			h.mu.Unlock()
			*from = resp.CompactRevision
			return
		}
		if resp.Err() != nil {
			return
		}
		h.mu.Lock()
		for _, ev := range resp.Events {
			c := etcdChange{at: h.since(), op: "put", mod: ev.Kv.ModRevision, create: ev.Kv.CreateRevision, valueGen: genOf(ev.Kv.Value)}
			if ev.Type == clientv3.EventTypeDelete {
				c.op = "delete"
			}
			if ev.PrevKv != nil {
				c.prevMod = ev.PrevKv.ModRevision
			}
			k := strings.TrimPrefix(string(ev.Kv.Key), prefix)
			h.etcd[k] = append(h.etcd[k], c)
			*from = ev.Kv.ModRevision + 1
		}
		h.etcdRev = max(h.etcdRev, *from-1)
		if resp.IsProgressNotify() {
			h.etcdRev = max(h.etcdRev, resp.Header.Revision)
		}
		h.mu.Unlock()
		select {
		case h.etcdWake <- struct{}{}:
		default:
		}
	}
}

// genOf reads the Gen of an obj's JSON for the record ("?" if it does not
// decode).
func genOf(b []byte) string {
	_, after, ok := strings.Cut(string(b), `"gen":`)
	if !ok {
		return "?"
	}
	end := strings.IndexAny(after, ",}")
	if end < 0 {
		return "?"
	}
	return after[:end]
}

// waitEtcd waits (at most timeout) until etcd's history is recorded up to
// rev.
func (h *keyHistory) waitEtcd(rev int64, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		done := h.etcdRev >= rev
		h.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-h.etcdWake:
		case <-deadline:
			return false
		}
	}
}

// explain writes, for each key, everything recorded about it: the writes
// asked, etcd's history, what each member holds now (a serializable read of
// each), and every change delivered, each after the stream mark in effect.
func (h *keyHistory) explain(t *testing.T, prefix string, endpoints []string, keys []string, etcdRev int64, summary map[string]string) string {
	t.Helper()
	h.waitEtcd(etcdRev, 5*time.Second)
	time.Sleep(time.Second) // handlers are told after the cache changed: let the last changes reach the record
	var b strings.Builder
	// What each member holds, read from it alone.
	members := map[string][]string{}
	for i, ep := range endpoints {
		cli, err := etcdtest.NewClient(ep)
		if err != nil {
			fmt.Fprintf(&b, "member %d (%s): no client: %v\n", i, ep, err)
			continue
		}
		for _, k := range keys {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			resp, err := cli.Get(ctx, prefix+k, clientv3.WithSerializable())
			cancel()
			switch {
			case err != nil:
				members[k] = append(members[k], fmt.Sprintf("member %d: %v", i, err))
			case len(resp.Kvs) == 0:
				members[k] = append(members[k], fmt.Sprintf("member %d (at %d): absent", i, resp.Header.Revision))
			default:
				members[k] = append(members[k], fmt.Sprintf("member %d (at %d): mod %d gen %s", i, resp.Header.Revision,
					resp.Kvs[0].ModRevision, genOf(resp.Kvs[0].Value)))
			}
		}
		_ = cli.Close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.etcdGap != "" {
		fmt.Fprintf(&b, "etcd's history as recorded: %s\n", h.etcdGap)
	}
	fmt.Fprintf(&b, "etcd's history recorded up to revision %d; the check read etcd at %d\n", h.etcdRev, etcdRev)
	for _, k := range keys {
		fmt.Fprintf(&b, "== key %q: %s\n", k, summary[k])
		fmt.Fprintf(&b, "  now, member by member: %s\n", strings.Join(members[k], "; "))
		b.WriteString("  writes asked by the test:\n")
		for _, w := range h.writes[k] {
			if w.err != "" {
				fmt.Fprintf(&b, "    %8v %s gen %d: NOT ACKNOWLEDGED (%s)\n", w.at.Round(time.Millisecond), w.op, w.gen, w.err)
			} else {
				fmt.Fprintf(&b, "    %8v %s gen %d: revision %d\n", w.at.Round(time.Millisecond), w.op, w.gen, w.rev)
			}
		}
		b.WriteString("  etcd's history (its own watch, with previous values):\n")
		for _, c := range h.etcd[k] {
			fmt.Fprintf(&b, "    %s mod %d create %d gen %s (previous mod %d)\n", c.op, c.mod, c.create, c.valueGen, c.prevMod)
		}
		b.WriteString("  changes delivered to the informer's handlers, in order:\n")
		m := -1
		for _, d := range h.delivered[k] {
			for m+1 < len(h.marks) && h.marks[m+1].at <= d.at {
				m++
			}
			mark := "the first list's stream"
			if m >= 0 {
				mark = fmt.Sprintf("after [%v] %s", h.marks[m].at.Round(time.Millisecond), h.marks[m].line)
			}
			fmt.Fprintf(&b, "    #%d %8v %s mod %d create %d, object key %q %p", d.seq, d.at.Round(time.Millisecond), d.op,
				d.mod, d.create, d.objKey, d.ptr)
			if d.op == "update" {
				fmt.Fprintf(&b, " (old: key %q mod %d)", d.prevKey, d.prevMod)
			}
			fmt.Fprintf(&b, "; stream: %s\n", mark)
		}
	}
	b.WriteString("stream marks (failovers, relists):\n")
	for _, mk := range h.marks {
		fmt.Fprintf(&b, "  [%v] after %d changes: %s\n", mk.at.Round(time.Millisecond), mk.seq, mk.line)
	}
	return b.String()
}

// cacheView is the cache as the check reads it: each key's ModRevision,
// and the entries whose object names another key than the one it is
// stored under.
func cacheView(inf *informer.SharedInformer[string, *etcd.Object[obj]]) (got map[string]int64, misfiled map[string]string) {
	got, misfiled = map[string]int64{}, map[string]string{}
	for k, o := range inf.Lister().All() {
		got[k] = o.ModRevision
		if o.Key != k {
			misfiled[k] = o.Key
		}
	}
	return got, misfiled
}

// etcdView reads the prefix from etcd (linearizable): each key's
// ModRevision, and the revision read at.
func etcdView(t *testing.T, direct *clientv3.Client, prefix string) (map[string]int64, int64) {
	t.Helper()
	resp, err := direct.Get(t.Context(), prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	want := make(map[string]int64, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		want[strings.TrimPrefix(string(kv.Key), prefix)] = kv.ModRevision
	}
	return want, resp.Header.Revision
}

// differing returns the keys whose revision differs between want and got,
// sorted.
func differing(want, got map[string]int64) []string {
	var keys []string
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			keys = append(keys, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// requireCacheMatchesEtcd checks that the cache equals etcd: every key at
// etcd's ModRevision, each object stored under its own Key. It compares
// the cache with a linearizable read of etcd at revision R only once the
// informer has applied R, and trusts a difference only if etcd is still at
// R afterwards: a write the test gave up on (its context ended when the
// writers stopped) may still be committed by etcd after every acknowledged
// one, so etcd's revision can be beyond the last acknowledged write the
// informer was waited for. When etcd moved meanwhile, it reads again.
// On a real difference it fails with everything h recorded about the keys
// involved. It returns etcd's keys and their revisions.
func requireCacheMatchesEtcd(t *testing.T, direct *clientv3.Client, prefix string, endpoints []string,
	inf *informer.SharedInformer[string, *etcd.Object[obj]], h *keyHistory, timeout time.Duration) map[string]int64 {
	t.Helper()
	for attempt := 1; ; attempt++ {
		want, rev := etcdView(t, direct, prefix)
		wctx, cancel := context.WithTimeout(t.Context(), timeout)
		err := inf.WaitForVersion(wctx, strconv.FormatInt(rev, 10))
		cancel()
		require.NoError(t, err, "the informer did not reach etcd's revision %d", rev)
		got, misfiled := cacheView(inf)
		if len(misfiled) == 0 && maps.Equal(want, got) {
			return want
		}
		_, after := etcdView(t, direct, prefix)
		if after != rev && attempt < 5 {
			t.Logf("etcd moved from revision %d to %d while the cache was compared: reading again", rev, after)
			continue
		}
		keys := differing(want, got)
		for k, objKey := range misfiled {
			keys = append(keys, k, objKey)
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		summary := map[string]string{}
		for _, k := range keys {
			e, c := "absent", "absent"
			if r, ok := want[k]; ok {
				e = fmt.Sprintf("mod %d", r)
			}
			if r, ok := got[k]; ok {
				c = fmt.Sprintf("mod %d", r)
			}
			if o, ok := misfiled[k]; ok {
				c += fmt.Sprintf(" holding the object of key %q", o)
			}
			summary[k] = fmt.Sprintf("etcd %s, cache %s", e, c)
		}
		t.Logf("the cache differs from etcd at revision %d (informer at %s) on %d keys:\n%s", rev, inf.LastSyncVersion(),
			len(keys), h.explain(t, prefix, endpoints, keys, rev, summary))
		require.Empty(t, misfiled, "cache entries holding another key's object (stored under → object's key)")
		require.Equal(t, want, got, "cache (- etcd, + cache)")
		return want
	}
}

// noteEarlyCheck logs whether the check as it was before issue 29 (etcd
// read, then the cache, as soon as the informer had applied the last
// acknowledged write, final) would have seen a difference here; whether
// etcd moved while it read (before: its revision; after: once the cache
// was read); and each write not acknowledged, with the revision etcd
// committed it at, if it did: the evidence for item 3's explanation. It
// fails nothing.
func noteEarlyCheck(t *testing.T, direct *clientv3.Client, prefix string,
	inf *informer.SharedInformer[string, *etcd.Object[obj]], h *keyHistory, final int64, stopped time.Duration) {
	t.Helper()
	readAt := h.since() - stopped
	want, before := etcdView(t, direct, prefix)
	got, _ := cacheView(inf)
	_, after := etcdView(t, direct, prefix)
	h.waitEtcd(after, 5*time.Second)
	var notAcked []string
	h.mu.Lock()
	for k, ws := range h.writes {
		for _, w := range ws {
			if w.err == "" {
				continue
			}
			committed := "never committed"
			for _, c := range h.etcd[k] {
				if c.mod > final && (c.op == "delete" && w.op == "delete" || c.op == "put" && w.op == "put" && c.valueGen == strconv.Itoa(w.gen)) {
					committed = fmt.Sprintf("committed at %d, its event seen %v after the stop", c.mod, (c.at - stopped).Round(100*time.Microsecond))
				}
			}
			notAcked = append(notAcked, fmt.Sprintf("%s %s gen %d at %v (%s): %s", w.op, k, w.gen, w.at.Round(time.Millisecond), w.err, committed))
		}
	}
	h.mu.Unlock()
	slices.Sort(notAcked)
	keys := differing(want, got)
	var diffs []string
	for _, k := range keys {
		e, c := "absent", "absent"
		if r, ok := want[k]; ok {
			e = strconv.FormatInt(r, 10)
		}
		if r, ok := got[k]; ok {
			c = strconv.FormatInt(r, 10)
		}
		diffs = append(diffs, fmt.Sprintf("%s: etcd %s, cache %s", k, e, c))
	}
	t.Logf("early check: last acknowledged write %d; etcd at %d when read (%v after the stop), at %d after the cache was read; "+
		"writes not acknowledged: %d %v; the check as it was would have found %d keys differing %v",
		final, before, readAt.Round(100*time.Microsecond), after, len(notAcked), notAcked, len(keys), diffs)
}
