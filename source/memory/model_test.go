package memory_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// model is a plain-map model of a store with a bounded history.
type model struct {
	rev, compactRev int64
	states          map[int64]map[string]int // state after each revision
	events          map[int64]string         // the change at each revision
	historySize     int64
}

func (m *model) current() map[string]int { return m.states[m.rev] }

func (m *model) write(change func(map[string]int) string) {
	next := maps.Clone(m.current())
	ev := change(next)
	if ev == "" {
		return
	}
	m.rev++
	m.states[m.rev] = next
	m.events[m.rev] = ev
	m.compactRev = max(m.compactRev, m.rev-m.historySize)
}

// runModel decodes data into operations on a store and the model, checking
// after each step that they agree.
func runModel(t *testing.T, data []byte) {
	const historySize = 8
	s, err := memory.New(memory.Options[string, *obj]{KeyFunc: objKey, HistorySize: historySize, WatchBuffer: 1})
	require.NoError(t, err)
	defer s.Close()
	m := &model{rev: 1, compactRev: 1, states: map[int64]map[string]int{1: {}}, events: map[int64]string{}, historySize: historySize}
	gen := 0
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	for step := 0; len(data) > 0; step++ {
		op, arg := next()%6, next()
		key := fmt.Sprintf("k%d", arg%8)
		switch op {
		case 0, 1: // put
			gen++
			v, err := s.Put(&obj{Name: key, Gen: gen})
			require.NoError(t, err)
			m.write(func(st map[string]int) string {
				typ := "Added"
				if _, ok := st[key]; ok {
					typ = "Modified"
				}
				st[key] = gen
				return fmt.Sprintf("%s %s/%d", typ, key, gen)
			})
			require.Equal(t, strconv.FormatInt(m.rev, 10), v, "step %d put", step)
		case 2: // delete
			v, existed := s.Delete(key)
			last, ok := m.current()[key]
			require.Equal(t, ok, existed, "step %d delete", step)
			m.write(func(st map[string]int) string {
				if !ok {
					return ""
				}
				delete(st, key)
				return fmt.Sprintf("Deleted %s/%d", key, last)
			})
			require.Equal(t, strconv.FormatInt(m.rev, 10), v, "step %d delete", step)
		case 3: // compact
			v := max(1, m.rev-int64(arg%10))
			require.NoError(t, s.Compact(strconv.FormatInt(v, 10)))
			m.compactRev = max(m.compactRev, v)
		case 4: // exact, paged list at a past version
			v := max(1, m.rev-int64(arg%12))
			got, err := listPaged(t, s, informer.ListOptions{Mode: informer.ReadExact, Version: strconv.FormatInt(v, 10), Limit: arg % 4})
			if v < m.compactRev {
				require.ErrorIs(t, err, informer.ErrExpired, "step %d list at %d, compacted %d", step, v, m.compactRev)
				continue
			}
			require.NoError(t, err, "step %d list at %d", step, v)
			require.Equal(t, m.states[v], got, "step %d list at %d", step, v)
		case 5: // replay watch from a past version
			v := max(1, m.rev-int64(arg%12))
			w, err := s.Watch(t.Context(), informer.WatchOptions{Version: strconv.FormatInt(v, 10)})
			if v < m.compactRev {
				require.ErrorIs(t, err, informer.ErrExpired, "step %d watch from %d", step, v)
				continue
			}
			require.NoError(t, err)
			for r := v + 1; r <= m.rev; r++ {
				ev, _ := recv(t, w)
				require.Equal(t, m.events[r]+"/@"+strconv.FormatInt(r, 10), describe(ev), "step %d watch from %d", step, v)
			}
			w.Stop()
		}
		// Invariants after every step.
		require.Equal(t, strconv.FormatInt(m.rev, 10), s.Version())
		require.Equal(t, len(m.current()), s.Len())
		got, err := listPaged(t, s, informer.ListOptions{Limit: 3})
		require.NoError(t, err)
		require.Equal(t, m.current(), got, "step %d latest", step)
	}
}

// listPaged reads all pages, checking key order, and returns gen by name.
func listPaged(t *testing.T, s *memory.Store[string, *obj], opts informer.ListOptions) (map[string]int, error) {
	got := map[string]int{}
	var order []string
	for {
		page, err := s.List(t.Context(), opts)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Items {
			got[o.Name] = o.Gen
			order = append(order, o.Name)
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	require.True(t, slices.IsSorted(order), "key order: %v", order)
	require.Len(t, got, len(order), "duplicates: %v", order)
	return got, nil
}

func TestModelRandom(t *testing.T) {
	for seed := range uint64(100) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			data := make([]byte, 600)
			for i := range data {
				data[i] = byte(r.UintN(256))
			}
			runModel(t, data)
		})
	}
}

func FuzzStore(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 4, 0, 2, 1, 5, 3, 3, 2, 4, 9})
	f.Add([]byte{1, 1, 1, 1, 1, 2, 2, 1, 4, 5, 5, 11, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 400 {
			data = data[:400]
		}
		runModel(t, data)
	})
}
