package compat_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// controller-runtime's metadata informers wrap their watch in
		// watch.Filter, whose goroutine blocks for good on an event sent as
		// the watch is stopped (its Stop does not end a pending send, and
		// nothing drains it); client-go's reflector leaves it so too.
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
	)
}
