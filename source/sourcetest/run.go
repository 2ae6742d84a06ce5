package sourcetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// check is one conformance check: a name (the subtest's) and its body.
type check[T any] struct {
	name string
	fn   func(k *kit[T])
}

// checks returns the kit's checks in the order [Run] runs them. Each name is
// the subtest name Run gives it; [Checks] lists them.
func checks[T any]() []check[T] {
	return []check[T]{
		{"ListLatest", checkListLatest[T]},
		{"ListExact", checkListExact[T]},
		{"ListModes", checkListModes[T]},
		{"ListPagesConsistent", checkListPages[T]},
		{"ListFutureVersion", checkListFuture[T]},
		{"MalformedVersion", checkMalformedVersion[T]},
		{"MalformedContinue", checkMalformedContinue[T]},
		{"WatchNeedsVersion", checkWatchNeedsVersion[T]},
		{"WatchFromList", checkWatchFromList[T]},
		{"WatchReplay", checkWatchReplay[T]},
		{"WatchConcurrentWrites", checkWatchConcurrentWrites[T]},
		{"WatchFutureVersion", checkWatchFuture[T]},
		{"Expired", checkExpired[T]},
		{"WatchFallsBehindCompaction", checkFallBehind[T]},
		{"Bookmarks", checkBookmarks[T]},
		{"BookmarkNotAhead", checkBookmarkNotAhead[T]},
		{"CancelContext", checkCancel[T]},
		{"StopIdempotent", checkStop[T]},
		{"StreamingList", checkStreamingList[T]},
		{"StreamingListOrder", checkStreamingListOrder[T]},
		{"WatchTimeout", checkWatchTimeout[T]},
		{"CaughtUp", checkCaughtUp[T]},
		{"CaughtUpIdle", checkCaughtUpIdle[T]},
		{"CaughtUpExpired", checkCaughtUpExpired[T]},
		{"SnapshotSource", checkSnapshotSource[T]},
	}
}

// Checks returns the names of the kit's checks, in the order [Run] runs
// them as subtests. A failing check's subtest is named
// "<TestName>/<check>", so `go test -run 'TestConformance/BookmarkNotAhead'`
// runs one.
func Checks() []string {
	cs := checks[struct{}]()
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.name
	}
	return names
}

// Run checks the source made by newHarness against the source contract, one
// subtest per check (named as in [Checks]), each with a fresh harness.
// newHarness must return a harness over an empty, isolated collection, and
// register its own cleanup with t.Cleanup.
func Run[T any](t *testing.T, newHarness func(t *testing.T) Harness[T]) {
	t.Helper()
	for _, c := range checks[T]() {
		t.Run(c.name, func(t *testing.T) {
			runCheck(t, newHarness(t), c.fn)
		})
	}
}

// runCheck runs one check against h, reporting to tb. The kit's own tests
// call it with a recording testing.TB (see export_test.go).
func runCheck[T any](tb testing.TB, h Harness[T], fn func(k *kit[T])) {
	tb.Helper()
	require.NotNil(tb, h.Source, "Harness.Source")
	require.NotNil(tb, h.Create, "Harness.Create")
	require.NotNil(tb, h.Update, "Harness.Update")
	require.NotNil(tb, h.Delete, "Harness.Delete")
	require.NotNil(tb, h.Name, "Harness.Name")
	require.NotNil(tb, h.Generation, "Harness.Generation")
	fn(&kit[T]{t: tb, h: h, ctx: tb.Context()})
}

// kit carries one check's harness and helpers. Only the check's goroutine
// uses it.
type kit[T any] struct {
	t   testing.TB
	h   Harness[T]
	ctx context.Context

	// writes are the writes the check made, in the order they completed,
	// each with the version the harness returned (see written.go).
	writes []write
	// streams are the watches the check opened with watch.
	streams []*stream[T]
}

func (k *kit[T]) create(name string) string {
	k.t.Helper()
	return k.write("create", name, k.h.Create)
}

func (k *kit[T]) update(name string) string {
	k.t.Helper()
	return k.write("update", name, k.h.Update)
}

func (k *kit[T]) del(name string) string {
	k.t.Helper()
	return k.write("delete", name, k.h.Delete)
}

// write makes the harness write name with do, records the write as op and
// returns the version the harness returned.
func (k *kit[T]) write(op, name string, do func(ctx context.Context, name string) (string, error)) string {
	k.t.Helper()
	v, err := do(k.ctx, name)
	require.NoError(k.t, err, "harness: %s %s", op, name)
	k.record(write{op, name, v})
	return v
}

// listAll reads every page of a list and checks the pages agree: one
// version, no duplicate, at most Limit items each. It returns the
// generation of each object by name, and the version.
func (k *kit[T]) listAll(opts informer.ListOptions) (map[string]int, string) {
	k.t.Helper()
	state := map[string]int{}
	version := ""
	for page := 0; ; page++ {
		if page >= 10_000 {
			k.t.Fatalf("list %s: still returns a continue token after %d pages", describeList(opts), page)
		}
		p, err := k.list(opts)
		require.NoError(k.t, err, "list page %d (%s)", page, describeList(opts))
		if page == 0 {
			version = p.Version
			if version == "" {
				k.t.Fatalf("list %s: the page has no Version; the contract requires every page to carry the version it was read at "+
					"(the reflector watches from it, and rejects a page without one)", describeList(opts))
			}
		} else if p.Version != version {
			k.t.Fatalf("list %s: page %d has version %q, the first page %q; the contract requires every page of one list "+
				"to be read at the first page's version", describeList(opts), page, p.Version, version)
		}
		if opts.Limit > 0 && len(p.Items) > opts.Limit {
			k.t.Fatalf("list %s: page %d has %d items, more than Limit %d", describeList(opts), page, len(p.Items), opts.Limit)
		}
		for i, obj := range p.Items {
			name, gen := k.describeObject(obj, fmt.Sprintf("item %d of list page %d", i, page))
			if _, dup := state[name]; dup {
				k.t.Fatalf("list %s: page %d lists %s a second time; the contract requires each object once per list",
					describeList(opts), page, name)
			}
			state[name] = gen
		}
		if p.Continue == "" {
			return state, version
		}
		opts.Continue = p.Continue
	}
}

// list reads one page with a bounded wait.
func (k *kit[T]) list(opts informer.ListOptions) (informer.ListPage[T], error) {
	ctx, cancel := context.WithTimeout(k.ctx, k.h.wait())
	defer cancel()
	return k.h.Source.List(ctx, opts)
}

// describeList renders list options for messages.
func describeList(o informer.ListOptions) string {
	s := o.Mode.String()
	if o.Version != "" {
		s += " " + o.Version
	}
	if o.Limit > 0 {
		s += fmt.Sprintf(" limit %d", o.Limit)
	}
	if o.Continue != "" {
		s += fmt.Sprintf(" continue %q", o.Continue)
	}
	return s
}
