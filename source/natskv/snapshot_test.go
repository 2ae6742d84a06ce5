package natskv_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
)

// write is one write of the bucket: the generation a key got, 0 for a
// delete or purge.
type write struct {
	rev uint64
	key string
	gen int
}

// stateAt replays the writes up to rev.
func stateAt(writes []write, rev uint64) map[string]int {
	state := map[string]int{}
	for _, w := range writes {
		if w.rev > rev {
			continue
		}
		if w.gen == 0 {
			delete(state, w.key)
		} else {
			state[w.key] = w.gen
		}
	}
	return state
}

// Lists taken while a writer puts, deletes and purges are each exactly the
// bucket's state at their version, paged or not, with a history of one
// revision per key (the server then delivers the stream from its first
// message) and with a longer one (a last-per-subject snapshot).
//
// A bucket of up to 1024 keys is read in one batched direct get, exact; a
// larger one (here with 1100 more keys, never written again) through a
// consumer, where a key whose history a later write trims during the read
// may differ (see the package doc, Lists).
func TestListConsistentUnderWrites(t *testing.T) {
	for _, tc := range []struct {
		history uint8
		extra   int
	}{{1, 0}, {16, 0}, {1, 1100}, {16, 1100}} {
		t.Run(fmt.Sprintf("history%d_keys%d", tc.history, 30+tc.extra), func(t *testing.T) {
			history := tc.history
			_, js := conn(t, srv)
			kv := newBucket(t, js, jetstream.KeyValueConfig{History: history})
			src := newSource(t, natskv.Options[obj]{JetStream: js, Bucket: kv.Bucket()})
			ctx := t.Context()

			var (
				mu     sync.Mutex
				writes []write
				wg     sync.WaitGroup
				werr   error
			)
			for i := range tc.extra {
				key := fmt.Sprintf("x%04d", i)
				b, _ := json.Marshal(obj{Name: key, Gen: 1})
				rev, err := kv.Put(ctx, key, b)
				require.NoError(t, err)
				writes = append(writes, write{rev, key, 1})
			}
			done := make(chan struct{})
			wg.Go(func() {
				defer close(done)
				rng := rand.New(rand.NewPCG(uint64(history), 7))
				for i := range 800 {
					key := fmt.Sprintf("k%02d", rng.IntN(30))
					var rev uint64
					var err error
					gen := 0
					switch r := rng.IntN(10); {
					case r < 7:
						gen = i + 1
						b, _ := json.Marshal(obj{Name: key, Gen: gen})
						rev, err = kv.Put(ctx, key, b)
					case r < 9:
						rev, err = natstest.Delete(ctx, js, kv.Bucket(), key)
					default:
						rev, err = natstest.Purge(ctx, js, kv.Bucket(), key)
					}
					if err != nil {
						werr = err
						return
					}
					mu.Lock()
					writes = append(writes, write{rev, key, gen})
					mu.Unlock()
				}
			})
			type listed struct {
				version uint64
				state   map[string]int
			}
			var lists []listed
			for running := true; running; {
				select {
				case <-done:
					running = false
				default:
				}
				limit := len(lists) % 3 * 7 // 0, 7, 14
				state := map[string]int{}
				opts := informer.ListOptions{Limit: limit}
				var version string
				for {
					p, err := src.List(ctx, opts)
					require.NoError(t, err)
					version = p.Version
					for _, o := range p.Items {
						state[o.Key] = o.Value.Gen
					}
					if p.Continue == "" {
						break
					}
					opts.Continue = p.Continue
				}
				v, err := strconv.ParseUint(version, 10, 64)
				require.NoError(t, err)
				lists = append(lists, listed{v, state})
			}
			wg.Wait()
			require.NoError(t, werr)
			require.GreaterOrEqual(t, len(lists), 2, "lists taken during the writes")
			trimmed := 0
			for i, l := range lists {
				want := stateAt(writes, l.version)
				if maps.Equal(want, l.state) {
					continue
				}
				// The only difference allowed: keys whose messages up to
				// the list's revision the stream removed while the list
				// was read, for a later write of the key (see the package
				// doc, Lists). That write brings them back in a watch.
				keys := map[string]bool{}
				for k := range want {
					keys[k] = true
				}
				for k := range l.state {
					keys[k] = true
				}
				for k := range keys {
					if want[k] == l.state[k] {
						continue
					}
					require.NotZero(t, tc.extra, "list %d at revision %d (one direct get): key %s is %d, want %d", i, l.version, k, l.state[k], want[k])
					later := slices.ContainsFunc(writes, func(w write) bool { return w.key == k && w.rev > l.version })
					require.True(t, later, "list %d at revision %d: key %s is %d, want %d, and no later write removed its history:\nwant %v\ngot  %v",
						i, l.version, k, l.state[k], want[k], want, l.state)
					trimmed++
				}
			}
			t.Logf("%d lists, %d keys differing for a later write that trimmed their history", len(lists), trimmed)
		})
	}
}
