package main

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestPacer: write k is released at start + k/rate, not before; rate 0
// does not wait.
func TestPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPacer(100) // every 10 ms
		start := time.Now()
		for _, k := range []int{0, 1, 5, 100} {
			if err := p.wait(t.Context(), k); err != nil {
				t.Fatal(err)
			}
			if got, want := time.Since(start), time.Duration(k)*10*time.Millisecond; got != want {
				t.Errorf("write %d released after %s, want %s", k, got, want)
			}
		}
		// A writer behind the schedule goes at once.
		if err := p.wait(t.Context(), 3); err != nil || time.Since(start) != time.Second {
			t.Errorf("late write: err %v, released after %s, want at once (1s)", err, time.Since(start))
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := p.wait(ctx, 1000); err == nil {
			t.Error("wait on a cancelled context returned nil")
		}
		z := newPacer(0)
		at := time.Now()
		if err := z.wait(t.Context(), 1_000_000); err != nil || time.Since(at) != 0 {
			t.Errorf("rate 0 waited %s (err %v)", time.Since(at), err)
		}
	})
}

func TestAchievedRate(t *testing.T) {
	s := int64(time.Second)
	for _, c := range []struct {
		name   string
		writes []update
		want   float64
	}{
		{"none", nil, 0},
		{"one", []update{{Sent: 0, NS: s}}, 0},
		{"three over 2 s", []update{{Sent: s, NS: s + 10}, {Sent: 0, NS: 5}, {Sent: s / 2, NS: 2 * s}}, 1.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := achievedRate(c.writes); got != c.want {
				t.Errorf("achievedRate = %v, want %v", got, c.want)
			}
		})
	}
}
