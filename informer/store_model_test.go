package informer

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
)

// The model-based test and FuzzIndexer: operation sequences decoded from
// bytes, checked after every step against a plain map.

// modelIndexes are the indexes an operation sequence may add, in order.
var modelIndexes = []Index[*testPod]{
	{Name: nsIndex, Func: nsIndexFunc},
	{Name: labelsIndex, Func: labelsIndexFunc},
	failingIndex, // errors on pods labelled bad=error
	{Name: "letters", Func: func(dst []string, p *testPod) ([]string, error) {
		for i := range len(p.Name) { // duplicates on purpose
			dst = append(dst, p.Name[i:i+1])
		}
		return dst, nil
	}},
}

// opReader decodes bytes into operations.
type opReader struct {
	data []byte
	pos  int
}

func (r *opReader) next() (byte, bool) {
	if r.pos >= len(r.data) {
		return 0, false
	}
	b := r.data[r.pos]
	r.pos++
	return b, true
}

// pod decodes one test pod from two bytes: a name and namespace, and a label
// set (some labels make the failing index fail).
func (r *opReader) pod() *testPod {
	a, _ := r.next()
	b, _ := r.next()
	p := &testPod{Namespace: "ns" + strconv.Itoa(int(a>>4)%3), Name: "p" + strconv.Itoa(int(a)%9), Labels: map[string]string{}}
	if b&1 != 0 {
		p.Labels["app"] = "x"
	}
	if b&2 != 0 {
		p.Labels["app"] = "y"
	}
	if b&4 != 0 {
		p.Labels["tier"] = "t" + strconv.Itoa(int(b>>5)%3)
	}
	if b&8 != 0 {
		p.Labels["pod"] = p.Name
	}
	if b&16 != 0 && b>>5 == 7 {
		p.Labels["bad"] = "error"
	}
	return p
}

// fails reports whether the model expects an index set to refuse p.
func fails(indexes []Index[*testPod], p *testPod) bool {
	for _, ix := range indexes {
		if _, err := ix.Func(nil, p); err != nil {
			return true
		}
	}
	return false
}

// runModel runs the operations encoded in data, checking the store against
// the model after every step.
func runModel(t testing.TB, data []byte) {
	r := &opReader{data: data}
	var indexes []Index[*testPod]
	s := newTestIndexer()
	model := map[NamespacedKey]*testPod{}
	key := func(p *testPod) NamespacedKey { return NamespacedKey{p.Namespace, p.Name} }
	for {
		op, ok := r.next()
		if !ok {
			return
		}
		switch op % 6 {
		case 0, 1: // Add, Update
			p := r.pod()
			write := s.Add
			if op%6 == 1 {
				write = s.Update
			}
			err := write(p)
			if fails(indexes, p) {
				if !errors.Is(err, ErrIndexFunc) {
					t.Fatalf("write of a failing pod: err = %v", err)
				}
			} else if err != nil {
				t.Fatalf("write: %v", err)
			} else {
				model[key(p)] = p
			}
		case 2: // Delete
			p := r.pod()
			if err := s.Delete(p); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			delete(model, key(p))
		case 3: // DeleteKey
			p := r.pod()
			old, ok := s.DeleteKey(key(p))
			if want, had := model[key(p)]; ok != had || old != want {
				t.Fatalf("DeleteKey(%v) = %v, %v; model %v", key(p), old, ok, want)
			}
			delete(model, key(p))
		case 4: // Replace
			n, _ := r.next()
			objs := make([]*testPod, int(n)%6)
			next := map[NamespacedKey]*testPod{}
			failed := false
			for i := range objs {
				objs[i] = r.pod()
				next[key(objs[i])] = objs[i]
				failed = failed || fails(indexes, objs[i])
			}
			err := s.Replace(objs)
			if failed {
				if !errors.Is(err, ErrIndexFunc) {
					t.Fatalf("Replace with a failing pod: err = %v", err)
				}
			} else if err != nil {
				t.Fatalf("Replace: %v", err)
			} else {
				model = next
			}
		case 5: // AddIndexes
			if len(indexes) == len(modelIndexes) {
				continue
			}
			ix := modelIndexes[len(indexes)]
			failed := false
			for _, p := range model {
				failed = failed || fails([]Index[*testPod]{ix}, p)
			}
			err := s.AddIndexes(ix)
			if failed {
				if !errors.Is(err, ErrIndexFunc) {
					t.Fatalf("AddIndexes on failing pods: err = %v", err)
				}
			} else if err != nil {
				t.Fatalf("AddIndexes: %v", err)
			} else {
				indexes = append(indexes, ix)
			}
		}
		checkIndexer(t, s, model, indexes)
	}
}

func TestIndexerModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for seed := range 300 {
		data := make([]byte, 40+rng.IntN(200))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		// Add indexes early in half of the runs.
		if seed%2 == 0 {
			data[0], data[1] = 5, 5
		}
		runModel(t, data)
	}
}

func FuzzIndexer(f *testing.F) {
	f.Add([]byte{5, 0, 1, 7, 0, 2, 9, 5, 1, 3, 4, 3, 1, 2, 3, 4, 5, 6})
	f.Add([]byte{0, 1, 1, 0, 2, 255, 5, 5, 5, 1, 1, 6, 2, 1, 1})
	f.Add([]byte{5, 5, 5, 5, 0, 0, 15, 0, 9, 31, 1, 9, 255, 4, 3, 1, 2, 3, 4, 5, 6})
	f.Fuzz(func(t *testing.T, data []byte) {
		runModel(t, data)
	})
}
