package informer

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// fifoModel is a plain model of DeltaFIFO's contract for sequential use.
type fifoModel struct {
	items       map[string]Deltas[fifoObj]
	order       []string
	initial     map[string]bool
	initialLeft int
	populated   bool
	synced      bool
	lastVersion string
	known       *fakeKnown // shared with the real queue; the consumer updates it
	replaceLeft int        // keys at the front that the last Replace covers (PopBatch takes them together)
}

func (m *fifoModel) append(key string, d Delta[fifoObj]) {
	ds, ok := m.items[key]
	if !ok {
		m.order = append(m.order, key)
		m.items[key] = Deltas[fifoObj]{d}
		return
	}
	if n := &ds[len(ds)-1]; d.Type == Deleted && n.Type == Deleted {
		if !(d.FinalStateUnknown && !n.FinalStateUnknown) {
			*n = d
		}
		return
	}
	m.items[key] = append(ds, d)
}

func (m *fifoModel) populate() {
	if !m.populated {
		m.populated = true
		m.checkSynced()
	}
}

func (m *fifoModel) checkSynced() {
	if m.populated && m.initialLeft == 0 {
		m.synced = true
	}
}

func (m *fifoModel) markInitial(first bool, key string) {
	if first && !m.initial[key] {
		m.initial[key] = true
		m.initialLeft++
	}
}

func (m *fifoModel) change(t DeltaType, obj fifoObj, inFlight map[string]bool) {
	m.populate()
	if t == Deleted {
		_, queued := m.items[obj.Name]
		_, known := m.known.Get(obj.Name)
		if !queued && !known && !inFlight[obj.Name] {
			return
		}
	}
	m.append(obj.Name, Delta[fifoObj]{Type: t, Object: obj})
}

func (m *fifoModel) replace(objs []fifoObj, version string) {
	first := !m.populated
	m.populated = true
	listed := map[string]bool{}
	for _, obj := range objs {
		m.append(obj.Name, Delta[fifoObj]{Type: Replaced, Object: obj})
		listed[obj.Name] = true
		m.markInitial(first, obj.Name)
	}
	for _, key := range slices.Clone(m.order) {
		if listed[key] {
			continue
		}
		ds := m.items[key]
		if n := ds[len(ds)-1]; n.Type != Deleted {
			m.append(key, Delta[fifoObj]{Type: Deleted, Object: n.Object, FinalStateUnknown: true})
			m.markInitial(first, key)
		}
	}
	for key, obj := range m.known.All() {
		if _, queued := m.items[key]; !queued {
			m.append(key, Delta[fifoObj]{Type: Deleted, Object: obj, FinalStateUnknown: true})
			m.markInitial(first, key)
		}
	}
	m.lastVersion = version
	m.replaceLeft = len(m.order)
	m.checkSynced()
}

func (m *fifoModel) resync() {
	for key, obj := range m.known.All() {
		if _, queued := m.items[key]; !queued {
			m.append(key, Delta[fifoObj]{Type: Sync, Object: obj})
		}
	}
}

// pop removes up to n keys from the front; a batch (whole) also takes every
// key the last Replace covers.
func (m *fifoModel) pop(n int, whole bool) []popped {
	if whole {
		n = max(n, m.replaceLeft)
	}
	var out []popped
	defer func() { m.replaceLeft = max(0, m.replaceLeft-len(out)) }()
	for len(out) < n && len(m.order) > 0 {
		key := m.order[0]
		m.order = m.order[1:]
		out = append(out, popped{key, m.items[key], m.initial[key]})
		delete(m.items, key)
		delete(m.initial, key)
	}
	return out
}

// finish ends a pop: requeue (ahead of newer deltas) or count as processed.
func (m *fifoModel) finish(ps []popped, requeue bool) {
	for _, p := range ps {
		if !requeue {
			if p.initial {
				m.initialLeft--
			}
			continue
		}
		newer, queued := m.items[p.key]
		// A queued key keeps its place; one that is not joins the tail (append does it).
		delete(m.items, p.key)
		for i, d := range p.deltas {
			if i == 0 && queued {
				m.items[p.key] = Deltas[fifoObj]{d}
				continue
			}
			m.append(p.key, d)
		}
		for _, d := range newer {
			m.append(p.key, d)
		}
		if p.initial {
			if m.initial[p.key] {
				m.initialLeft--
			}
			m.initial[p.key] = true
		}
	}
	m.checkSynced()
}

// byteReader hands out bytes, then zeros.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) next() byte {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *byteReader) done() bool { return r.i >= len(r.b) }

var modelKeys = []string{"a", "b", "c", "d", "e", "f"}

// runFIFOModel decodes ops into an operation sequence, runs it against a
// DeltaFIFO and the model, and compares them after every step.
func runFIFOModel(t *testing.T, ops []byte) {
	known := newFakeKnown()
	var knownIface KnownObjects[string, fifoObj] = known
	withKnown := len(ops) > 0 && ops[0]%2 == 0
	if !withKnown {
		knownIface = nil
	}
	f, err := NewDeltaFIFO(DeltaFIFOOptions[string, fifoObj]{KeyFunc: fifoKey, KnownObjects: knownIface})
	require.NoError(t, err)
	m := &fifoModel{items: map[string]Deltas[fifoObj]{}, initial: map[string]bool{}, known: newFakeKnown()}
	if withKnown {
		m.known = known
	}
	apply := func(key string, ds Deltas[fifoObj]) {
		if withKnown {
			known.apply(key, ds)
		}
	}
	r := &byteReader{b: ops}
	ver := 0
	obj := func() fifoObj {
		ver++
		return fifoObj{Name: modelKeys[int(r.next())%len(modelKeys)], V: ver}
	}
	ctx := context.Background()
	for step := 0; !r.done(); step++ {
		op := r.next()
		switch op % 10 {
		case 0, 1:
			x := obj()
			require.NoError(t, f.Add(x))
			m.change(Added, x, nil)
		case 2:
			x := obj()
			require.NoError(t, f.Update(x))
			m.change(Updated, x, nil)
		case 3:
			x := obj()
			require.NoError(t, f.Delete(x))
			m.change(Deleted, x, nil)
		case 4:
			n := int(r.next() % 5)
			objs := make([]fifoObj, n)
			for i := range objs {
				objs[i] = obj()
			}
			if op/10%8 == 7 && n > 0 {
				objs[n-1].Name = "bad"
				require.ErrorIs(t, f.Replace(objs, "v"), ErrKeyFunc)
				break
			}
			// Lists name keys twice as often as not (up to 4 objects over 6
			// keys); op/10%8 == 6 lists through BeginList, a page per object
			// (no ObjectVersion: every object is queued, as Replace does).
			v := string(rune('A' + step%26))
			if op/10%8 == 6 {
				l := f.BeginList()
				for _, x := range objs {
					require.NoError(t, l.AddPage([]fifoObj{x}))
				}
				require.NoError(t, l.Commit(v))
			} else {
				require.NoError(t, f.Replace(objs, v))
			}
			m.replace(objs, v)
		case 5:
			require.NoError(t, f.Resync())
			if withKnown {
				m.resync()
			}
		case 6, 7, 8:
			// Pop (op 6, 7) or PopBatch (8); the second op byte chooses
			// requeue and a write from inside process.
			arg := r.next()
			requeue := arg%3 == 0
			inner := arg / 3 % 4 // 0: none, 1: Update, 2: Delete, 3: changeOrTake (Update) of the first key
			maxKeys := 1
			if op%10 == 8 {
				maxKeys = int(arg/12%4) + 1
			}
			want := m.pop(maxKeys, op%10 == 8)
			if len(want) == 0 {
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				require.ErrorIs(t, f.PopBatch(cctx, maxKeys, func([]Item[string, fifoObj]) error { return nil }), context.Canceled)
				break
			}
			inFlight := map[string]bool{}
			for _, p := range want {
				inFlight[p.key] = true
			}
			var got []popped
			process := func(batch []Item[string, fifoObj]) error {
				for _, it := range batch {
					got = append(got, popped{it.Key, slices.Clone(it.Deltas), it.IsInInitialList})
				}
				switch x := (fifoObj{Name: batch[0].Key, V: 1000 + step}); inner {
				case 1:
					require.NoError(t, f.Update(x))
					m.change(Updated, x, inFlight)
				case 2:
					require.NoError(t, f.Delete(x))
					m.change(Deleted, x, inFlight)
				case 3:
					// A batch is in flight: never handed out, queued.
					batch, err := f.changeOrTake(Updated, x)
					require.NoError(t, err)
					require.Nil(t, batch)
					m.change(Updated, x, inFlight)
				}
				if requeue {
					return ErrRequeue
				}
				for _, it := range batch {
					apply(it.Key, it.Deltas)
				}
				return nil
			}
			if maxKeys == 1 && op%10 != 8 {
				err = f.Pop(ctx, func(key string, ds Deltas[fifoObj], initial bool) error {
					return process([]Item[string, fifoObj]{{key, ds, initial}})
				})
			} else {
				err = f.PopBatch(ctx, maxKeys, process)
			}
			if requeue {
				require.True(t, errors.Is(err, ErrRequeue))
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, want, got, "step %d", step)
			m.finish(want, requeue)
		case 9:
			// A write that may be handed out at once (changeOrTake): it
			// must be exactly a write then a Pop of it when the queue is
			// idle, and a plain write otherwise.
			arg := r.next()
			typ := []DeltaType{Added, Updated, Deleted}[arg%3]
			requeue := arg/3%4 == 0
			x := obj()
			before := len(m.order)
			m.change(typ, x, nil)
			batch, err := f.changeOrTake(typ, x)
			require.NoError(t, err)
			if before > 0 || len(m.order) == 0 {
				require.Nil(t, batch, "step %d: queued, not handed out", step)
				break
			}
			want := m.pop(1, false)
			var got []popped
			for _, it := range batch {
				got = append(got, popped{it.Key, slices.Clone(it.Deltas), it.IsInInitialList})
			}
			require.Equal(t, want, got, "step %d: handed out", step)
			f.mu.Lock()
			inFlight := f.inFlightLocked(x.Name)
			f.mu.Unlock()
			require.True(t, inFlight, "step %d: in flight", step)
			if !requeue {
				apply(x.Name, batch[0].Deltas)
			}
			f.finish(requeue)
			m.finish(want, requeue)
		}
		if tail, finished := f.sequences(); len(m.order) == 0 {
			require.Equal(t, tail, finished, "step %d: an idle queue has finished every sequence number", step)
		} else {
			require.Less(t, finished, tail, "step %d", step)
		}
		order, items, initial := f.queueSnapshot()
		if len(m.order) == 0 {
			require.Empty(t, order, "step %d", step)
		} else {
			require.Equal(t, m.order, order, "step %d: order", step)
		}
		require.Equal(t, m.items, items, "step %d: deltas", step)
		require.Equal(t, m.initial, initial, "step %d: initial", step)
		require.Equal(t, m.synced, f.HasSynced(), "step %d: synced", step)
		require.Equal(t, len(m.order), f.Len())
		require.Equal(t, m.lastVersion, f.LastVersion())
		f.mu.Lock()
		left := f.initialLeft
		f.mu.Unlock()
		require.Equal(t, m.initialLeft, left, "step %d: initialLeft", step)
	}
}

func TestDeltaFIFOModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 400 {
		ops := make([]byte, rng.IntN(300))
		for i := range ops {
			ops[i] = byte(rng.UintN(256))
		}
		runFIFOModel(t, ops)
	}
}

func FuzzDeltaFIFO(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 4, 3, 1, 2, 3, 6, 0, 8, 50})
	f.Add([]byte{1, 4, 4, 1, 2, 3, 4, 6, 3, 6, 4, 6, 0})
	f.Add([]byte{0, 4, 3, 1, 2, 3, 6, 6, 5, 4, 0, 6, 9, 8, 27})
	f.Add([]byte{4, 3, 0, 1, 0, 6, 1, 6, 1})              // a first Replace naming a twice: two keys, two pops
	f.Add([]byte{64, 3, 0, 1, 0, 8, 1, 4, 2, 0, 0, 8, 1}) // the same through BeginList, one batch; a relist naming a twice
	f.Fuzz(func(t *testing.T, ops []byte) {
		runFIFOModel(t, ops)
	})
}
