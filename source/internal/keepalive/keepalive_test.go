package keepalive

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestBackoff(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Next())
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("pauses %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if d := b.Next(); d != 100*time.Millisecond {
		t.Fatalf("after Reset: %v, want 100ms", d)
	}
	var zero Backoff
	if d := zero.Next(); d != 0 {
		t.Fatalf("zero Backoff: %v, want 0", d)
	}
}

func TestRenew(t *testing.T) {
	const ttl = 3 * time.Second
	tests := []struct {
		name    string
		results []Result // what the attempts return, in order; then Lost
		want    []time.Duration
	}{
		{"renewed every third", []Result{Renewed, Renewed}, []time.Duration{1000, 2000, 3000}},
		{"again at once", []Result{Again, Renewed}, []time.Duration{1000, 1000, 2000}},
		{"failed retries a tenth later", []Result{Failed, Renewed}, []time.Duration{1000, 1300, 2300}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				until := start.Add(time.Hour)
				var at []time.Duration
				Renew(t.Context(), ttl, func() time.Time { return until }, func(ctx context.Context, sent time.Time) Result {
					if d, ok := ctx.Deadline(); !ok || !d.Equal(until) {
						t.Errorf("attempt's deadline %v, want %v", d, until)
					}
					at = append(at, sent.Sub(start))
					if len(at) > len(tt.results) {
						return Lost
					}
					return tt.results[len(at)-1]
				})
				if len(at) != len(tt.want) {
					t.Fatalf("attempts at %v, want %v ms", at, tt.want)
				}
				for i := range at {
					if at[i] != tt.want[i]*time.Millisecond {
						t.Fatalf("attempts at %v, want %v ms", at, tt.want)
					}
				}
			})
		})
	}
}

func TestRenewEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Validity over: no attempt.
		Renew(t.Context(), time.Second, time.Now, func(context.Context, time.Time) Result {
			t.Error("attempt after the validity ended")
			return Renewed
		})
		// Failing until the validity ends: Renew returns by itself.
		until := time.Now().Add(2 * time.Second)
		n := 0
		Renew(t.Context(), 3*time.Second, func() time.Time { return until }, func(context.Context, time.Time) Result {
			n++
			return Failed
		})
		if n == 0 {
			t.Error("no attempt before the validity ended")
		}
		// ctx done: Renew returns without an attempt.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		Renew(ctx, time.Second, func() time.Time { return time.Now().Add(time.Hour) }, func(context.Context, time.Time) Result {
			t.Error("attempt after ctx was done")
			return Renewed
		})
	})
}
