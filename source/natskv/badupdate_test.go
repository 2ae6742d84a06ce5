package natskv_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
)

// The policy for an update that does not decode, the same as the etcd
// source's (docs/sources.md, "An update that does not decode"): the
// informer deletes the key, its handlers are given a deletion of the last
// state they saw, and a decode error naming the key and the revision is
// reported (class decode). The cache never keeps serving the state the bad
// update replaced. Another bad update of the absent key changes nothing
// but is reported too; a good value brings the key back.
//
// With History 1 the stream no longer holds the replaced value, so the
// source sends the key alone (ValueUnknown) and the informer fills in the
// last state it cached; with a longer history the source sends the
// previous state itself. Both must end the same for the handlers.
func TestBadUpdateDeletesKey(t *testing.T) {
	for _, history := range []uint8{1, 8} {
		t.Run(fmt.Sprintf("history%d", history), func(t *testing.T) {
			src, w := fixture(t, jetstream.KeyValueConfig{History: history}, natskv.Options[obj]{})
			ctx := t.Context()
			ok(t)(w.create(ctx, "a"))
			ok(t)(w.create(ctx, "b"))

			m := newErrorRecorder()
			var mu sync.Mutex
			var reported []error
			var deleted []informer.Deletion[string, object]
			var added []object
			inf, _ := startInformer(t, src, func(o *informer.Options[string, object]) {
				o.Metrics = m
				o.Logger = logr.FromSlogHandler(slog.DiscardHandler)
				o.ErrorHandler = func(_ context.Context, err error) {
					mu.Lock()
					defer mu.Unlock()
					reported = append(reported, err)
				}
			})
			_, err := inf.AddHandler(informer.HandlerFuncs[string, object]{
				AddFunc: func(o object, initial bool) {
					if initial {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					added = append(added, o)
				},
				DeleteFunc: func(d informer.Deletion[string, object]) {
					mu.Lock()
					defer mu.Unlock()
					deleted = append(deleted, d)
				},
			}, informer.HandlerOptions{Name: "recorder"})
			require.NoError(t, err)
			wait := func(v string) {
				t.Helper()
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				require.NoError(t, inf.WaitForVersion(wctx, v))
			}
			// requireReported checks that the last report is a decode error
			// naming key "a" at revision v.
			requireReported := func(n int, v string) {
				t.Helper()
				waitFor(t, fmt.Sprintf("%d decode errors", n), func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(reported) == n
				})
				mu.Lock()
				err := reported[n-1]
				mu.Unlock()
				require.ErrorIs(t, err, informer.ErrDecode)
				require.ErrorIs(t, err, natskv.ErrDecode)
				var de *natskv.DecodeError
				require.ErrorAs(t, err, &de)
				require.Equal(t, "a", de.Key)
				require.Equal(t, v, fmt.Sprint(de.Revision))
				require.Contains(t, err.Error(), `"a"`)
				require.Contains(t, err.Error(), v)
				require.Equal(t, int64(n), m.count(informer.ErrorClassDecode))
			}

			// The update that does not decode deletes the key.
			vb, err := rev(w.kv.Put(ctx, "a", []byte("not json")))
			require.NoError(t, err)
			wait(vb)
			_, found := inf.Lister().Get("a")
			require.False(t, found, "the cache still serves the state the bad update replaced")
			requireReported(1, vb)
			waitFor(t, "the handler's deletion", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(deleted) > 0
			})
			mu.Lock()
			require.Len(t, deleted, 1)
			d := deleted[0]
			mu.Unlock()
			require.Equal(t, "a", d.Key)
			require.Equal(t, "a", d.Object.Key)
			require.Equal(t, 1, d.Object.Value.Gen, "the deletion carries the last state the handlers saw")
			require.False(t, d.FinalStateUnknown)
			got, found := inf.Lister().Get("b")
			require.True(t, found, "other keys stay")
			require.Equal(t, 1, got.Value.Gen)

			// Another bad update of the key, now absent: reported, no event.
			vb2, err := rev(w.kv.Put(ctx, "a", []byte("{")))
			require.NoError(t, err)
			wait(vb2)
			requireReported(2, vb2)

			// A good value brings it back, as an add.
			vg := ok(t)(w.put(ctx, obj{Name: "a", Gen: 7}))
			wait(vg)
			got, found = inf.Lister().Get("a")
			require.True(t, found)
			require.Equal(t, 7, got.Value.Gen)
			waitFor(t, "the handler's add", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(added) > 0
			})
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, deleted, 1, "the second bad update of an absent key deleted again")
			require.Len(t, added, 1)
			require.Equal(t, "a", added[0].Key)
			require.Equal(t, 7, added[0].Value.Gen)
			require.Len(t, reported, 2)
			for _, err := range reported {
				require.True(t, errors.Is(err, informer.ErrDecode), "%v", err)
			}
			require.Equal(t, uint64(2), src.DecodeErrors())
		})
	}
}
