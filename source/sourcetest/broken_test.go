package sourcetest_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/sourcetest"
)

// rewatch wraps a watcher, passing each event through fn, which returns the
// events to forward.
func rewatch(ctx context.Context, inner informer.Watcher[item], fn func(informer.Event[item]) []informer.Event[item]) informer.Watcher[item] {
	out := informer.NewWatchStream[item](ctx, 10)
	go func() {
		defer out.Close()
		defer inner.Stop()
		for {
			select {
			case ev, ok := <-inner.Events():
				if !ok {
					return
				}
				for _, e := range fn(ev) {
					if !out.Send(e) {
						return
					}
				}
			case <-out.Done():
				return
			}
		}
	}()
	return out
}

// brokenSources are sources violating the contract, each in one way the kit
// must catch.
var brokenSources = map[string]func(h sourcetest.Harness[item]) informer.Source[item]{
	"drops a change": func(h sourcetest.Harness[item]) informer.Source[item] {
		return informer.SourceFuncs[item]{ListFunc: h.Source.List, WatchFunc: func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			w, err := h.Source.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			n := 0
			return rewatch(ctx, w, func(ev informer.Event[item]) []informer.Event[item] {
				if n++; n == 3 {
					return nil
				}
				return []informer.Event[item]{ev}
			}), nil
		}}
	},
	"duplicates updates": func(h sourcetest.Harness[item]) informer.Source[item] {
		return informer.SourceFuncs[item]{ListFunc: h.Source.List, WatchFunc: func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			w, err := h.Source.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return rewatch(ctx, w, func(ev informer.Event[item]) []informer.Event[item] {
				if ev.Type == informer.EventModified {
					return []informer.Event[item]{ev, ev}
				}
				return []informer.Event[item]{ev}
			}), nil
		}}
	},
	"pages at the latest version": func(h sourcetest.Harness[item]) informer.Source[item] {
		return informer.SourceFuncs[item]{WatchFunc: h.Source.Watch, ListFunc: func(ctx context.Context, o informer.ListOptions) (informer.ListPage[item], error) {
			if o.Continue == "" {
				return h.Source.List(ctx, o)
			}
			all, err := h.Source.List(ctx, informer.ListOptions{})
			if err != nil {
				return all, err
			}
			all.Items = all.Items[min(len(all.Items), o.Limit):]
			return all, nil
		}}
	},
}

// TestKitCatchesBrokenSources runs the kit against each broken source in a
// child process and expects it to fail.
func TestKitCatchesBrokenSources(t *testing.T) {
	if name := os.Getenv("SOURCETEST_BROKEN"); name != "" {
		sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[item] {
			h := minimalHarness(t)
			h.Source = brokenSources[name](h)
			h.WaitTimeout = time.Second // a missing event fails fast
			return h
		})
		return
	}
	if testing.Short() {
		t.Skip("spawns test processes")
	}
	for name := range brokenSources {
		t.Run(name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestKitCatchesBrokenSources$")
			cmd.Env = append(os.Environ(), "SOURCETEST_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the kit passed a source that %s:\n%s", name, out)
			require.Contains(t, string(out), "--- FAIL", "%s", out)
		})
	}
}
