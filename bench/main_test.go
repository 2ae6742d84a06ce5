package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the workloads leave no goroutine behind: each runs
// informers, listers and writers and must stop them all.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
