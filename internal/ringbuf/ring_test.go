package ringbuf

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// capOf returns the number of slots r has allocated.
func capOf[T any](r *Ring[T]) int { return len(r.buf) }

// items returns r's items, front to back, without removing them.
func items[T any](r *Ring[T]) []T {
	out := make([]T, 0, r.Len())
	for i := range r.Len() {
		out = append(out, r.At(i))
	}
	return out
}

func TestRingZeroValue(t *testing.T) {
	var r Ring[int]
	require.Equal(t, 0, r.Len())
	require.Equal(t, 0, capOf(&r))
	_, ok := r.Pop()
	require.False(t, ok)
	_, ok = r.Peek()
	require.False(t, ok)
	require.Empty(t, items(&r))
	r.Clear()
	r.Push(7)
	require.Equal(t, minCap, capOf(&r))
	v, ok := r.Peek()
	require.True(t, ok)
	require.Equal(t, 7, v)
}

func TestRingFIFOAndWrap(t *testing.T) {
	tests := []struct {
		name      string
		preFill   int // pushed and popped first, to move head
		items     int
		wantCap   int
		wantOrder bool
	}{
		{name: "empty", items: 0, wantCap: 0},
		{name: "one", items: 1, wantCap: minCap},
		{name: "full-min", items: minCap, wantCap: minCap},
		{name: "grow", items: minCap + 1, wantCap: 2 * minCap},
		{name: "wrapped-grow", preFill: 10, items: 40, wantCap: 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Ring[int]
			for i := range tt.preFill {
				r.Push(-i)
				_, _ = r.Pop()
			}
			for i := range tt.items {
				r.Push(i)
			}
			if tt.items > 0 {
				require.Equal(t, tt.wantCap, capOf(&r))
			}
			want := make([]int, tt.items)
			for i := range want {
				want[i] = i
				require.Equal(t, i, r.At(i))
			}
			require.Equal(t, want, append([]int{}, items(&r)...))
			for i := range tt.items {
				v, ok := r.Pop()
				require.True(t, ok)
				require.Equal(t, i, v)
			}
			require.Equal(t, 0, r.Len())
		})
	}
}

func TestRingAtOutOfRange(t *testing.T) {
	var r Ring[int]
	r.Push(1)
	require.Panics(t, func() { r.At(1) })
	require.Panics(t, func() { r.At(-1) })
	require.Equal(t, 1, r.At(0))
}

func TestRingShrink(t *testing.T) {
	var r Ring[int]
	for i := range 4000 {
		r.Push(i)
	}
	require.Equal(t, 4096, capOf(&r))
	for i := range 4000 {
		v, _ := r.Pop()
		require.Equal(t, i, v)
		// Invariant: capacity stays within 4x of the content once shrinking applies.
		if capOf(&r) > keepCap {
			require.Greater(t, r.Len(), capOf(&r)/4, "cap %d len %d", capOf(&r), r.Len())
		}
	}
	require.Equal(t, keepCap, capOf(&r), "shrinks back, but not below keepCap")
	// No thrashing: after a shrink a push does not immediately grow again.
	for i := range 100 {
		r.Push(i)
	}
	for range 75 {
		r.Pop()
	}
	c := capOf(&r)
	r.Push(1)
	require.Equal(t, c, capOf(&r))
}

func TestRingSlotZeroing(t *testing.T) {
	var r Ring[*int]
	for i := range 40 {
		v := i
		r.Push(&v)
	}
	for range 30 {
		_, _ = r.Pop()
	}
	for range 5 {
		r.Push(new(int))
	}
	// Every slot outside the live range must be nil.
	live := 0
	for i, p := range r.buf {
		inRange := (i-r.head+len(r.buf))&(len(r.buf)-1) < r.n
		if inRange {
			require.NotNil(t, p)
			live++
		} else {
			require.Nil(t, p, "slot %d not zeroed", i)
		}
	}
	require.Equal(t, r.n, live)
	r.Clear()
	require.Nil(t, r.buf)
}

// checkModel runs ops against a Ring and a slice model, checking after every
// step. Each op byte: low 2 bits select push/pop/peek/clear-or-push.
func checkModel(t *testing.T, ops []byte) {
	t.Helper()
	var r Ring[int]
	var model []int
	next := 0
	for step, op := range ops {
		switch op % 8 {
		case 0, 1, 2, 3:
			for range int(op/8)%5 + 1 {
				r.Push(next)
				model = append(model, next)
				next++
			}
		case 4, 5:
			for range int(op/8)%7 + 1 {
				v, ok := r.Pop()
				if len(model) == 0 {
					require.False(t, ok, "step %d", step)
					continue
				}
				require.True(t, ok, "step %d", step)
				require.Equal(t, model[0], v, "step %d", step)
				model = model[1:]
			}
		case 6:
			v, ok := r.Peek()
			require.Equal(t, len(model) > 0, ok)
			if ok {
				require.Equal(t, model[0], v)
			}
		case 7:
			if op/8%8 == 0 {
				r.Clear()
				model = nil
			}
		}
		require.Equal(t, len(model), r.Len(), "step %d", step)
		got := items(&r)
		if len(model) == 0 {
			require.Empty(t, got)
		} else {
			require.Equal(t, model, got, "step %d", step)
		}
		c := capOf(&r)
		require.True(t, c == 0 || c&(c-1) == 0, "cap %d not a power of two", c)
		require.GreaterOrEqual(t, c, r.Len())
		if c > keepCap {
			require.Greater(t, r.Len(), c/8, "cap %d too large for len %d", c, r.Len())
		}
	}
}

func TestRingModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		ops := make([]byte, rng.IntN(400))
		for i := range ops {
			ops[i] = byte(rng.UintN(256))
		}
		checkModel(t, ops)
	}
}

func FuzzRing(f *testing.F) {
	f.Add([]byte{0, 0, 0, 4, 4, 6, 7})
	f.Add([]byte{3, 11, 19, 27, 35, 43, 51, 4, 12, 20, 28, 36, 44, 52, 60})
	f.Fuzz(func(t *testing.T, ops []byte) {
		checkModel(t, ops)
	})
}

func TestRingPtrModifiesInPlace(t *testing.T) {
	var r Ring[int]
	for i := range 5 {
		r.Push(i)
	}
	r.Pop()
	*r.Ptr(r.Len() - 1) = 40
	*r.Ptr(0) = 10
	require.Equal(t, []int{10, 2, 3, 40}, items(&r))
	require.Panics(t, func() { r.Ptr(4) })
	require.Panics(t, func() { r.Ptr(-1) })
}
