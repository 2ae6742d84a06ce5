// Package leakcheck is the goroutine leak check of the test harnesses
// that share a server between a package's tests (etcdtest, k8stest, the
// envtest examples), where goleak.VerifyTestMain would check before the
// server is stopped. It holds the one list of goroutines that the
// dependencies start once per process and never stop. It imports nothing
// of ginformer's; only tests and test harnesses import it.
package leakcheck

import (
	"fmt"
	"os"

	"go.uber.org/goleak"
)

// ProcessWide returns goleak options that ignore the goroutines etcd's,
// gRPC's, glog's, klog's and client-go's packages start once per process
// and never stop, each named exactly. A package whose dependencies start
// none of them loses nothing by ignoring them.
func ProcessWide() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/schedule.(*fifo).run"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/util/wait.BackoffUntilWithContext.func1"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.poller.func1"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*Type).updateUnfinishedWorkLoop"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*delayingType).waitingLoop"),
	}
}

// Check is the end of a TestMain that stopped its shared servers after
// m.Run returned code: when code is 0, it looks for leaked goroutines,
// ignoring [ProcessWide]'s and those extra names, and on a leak prints it
// to stderr and returns 1. Otherwise it returns code unchanged.
func Check(code int, extra ...goleak.Option) int {
	if code != 0 {
		return code
	}
	if err := goleak.Find(append(ProcessWide(), extra...)...); err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		return 1
	}
	return code
}
