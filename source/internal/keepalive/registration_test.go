package keepalive

import (
	"testing"
	"time"

	"github.com/ginformer/ginformer/shard"
)

func TestClockDrift(t *testing.T) {
	tests := []struct {
		in, want float64
		bad      bool
	}{
		{0, defaultClockDrift, false},
		{0.2, 0.2, false},
		{-0.1, 0, true},
		{0.5, 0, true},
	}
	for _, tt := range tests {
		got, err := ClockDrift(tt.in)
		if (err != nil) != tt.bad || !tt.bad && got != tt.want {
			t.Errorf("ClockDrift(%v) = %v, %v; want %v (error: %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
	sent := time.Unix(1000, 0)
	if got, want := ValidFrom(sent, 10*time.Second, 0.1), sent.Add(9*time.Second); !got.Equal(want) {
		t.Errorf("ValidFrom = %v, want %v", got, want)
	}
}

func TestRegistration(t *testing.T) {
	var r Registration[string]
	if r.Load() != nil || !r.Until().IsZero() || !r.ValidUntil(0).IsZero() {
		t.Fatal("the zero Registration holds one")
	}
	r.End() // nothing to end
	until := time.Now().Add(time.Hour)
	r.Store(7, until, "uid")
	if got := r.ValidUntil(7); !got.Equal(until) {
		t.Fatalf("ValidUntil(7) = %v, want %v", got, until)
	}
	if !r.ValidUntil(8).IsZero() {
		t.Fatal("ValidUntil of another epoch is not zero")
	}
	r.Renewed(until.Add(time.Minute))
	if got := r.Load(); got.Epoch != 7 || got.Info != "uid" || !got.Until.Equal(until.Add(time.Minute)) {
		t.Fatalf("after Renewed: %+v", got)
	}
	r.End()
	ended := r.Until()
	if !ended.Before(until) {
		t.Fatalf("after End: valid until %v", ended)
	}
	r.End()
	if !r.Until().Equal(ended) {
		t.Fatal("a second End moved the end")
	}
}

func TestChanges(t *testing.T) {
	var c Changes
	c.Publish() // nobody holds a channel
	ch := c.C()
	if c.C() != ch {
		t.Fatal("C changed without a Publish")
	}
	c.Publish()
	select {
	case <-ch:
	default:
		t.Fatal("Publish did not close the channel")
	}
	if c.C() == ch {
		t.Fatal("C returned the closed channel")
	}
	ms := []shard.Member{{Name: "b"}, {Name: "a"}}
	SortMembers(ms)
	if ms[0].Name != "a" {
		t.Fatalf("SortMembers: %v", ms)
	}
}
