package leakcheck_test

import (
	"testing"

	"github.com/ginformer/ginformer/internal/leakcheck"
)

// Check passes a failed run's code through, keeps 0 when nothing leaked,
// and turns it into 1 when a goroutine is left over.
func TestCheck(t *testing.T) {
	if got := leakcheck.Check(3); got != 3 {
		t.Errorf("Check(3) = %d, want 3", got)
	}
	if got := leakcheck.Check(0); got != 0 {
		t.Errorf("Check(0) with nothing left over = %d, want 0", got)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-stop
	}()
	got := leakcheck.Check(0)
	close(stop)
	<-done
	if got != 1 {
		t.Errorf("Check(0) with a goroutine left over = %d, want 1", got)
	}
}
