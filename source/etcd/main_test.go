package etcd_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// srv is the embedded member shared by the tests that need no special
// server settings; each test works under its own prefix.
var srv *etcdtest.Server

// TestMain starts the shared member, runs the tests, stops the member and
// then checks for leaked goroutines (goleak.VerifyTestMain would check
// before the member is stopped).
func TestMain(m *testing.M) {
	if os.Getenv(killChildEnv) != "" {
		os.Exit(m.Run()) // the child of TestWarmRestartSurvivesSIGKILL: its etcd is the parent's
	}
	var err error
	srv, err = etcdtest.Start(etcdtest.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	srv.Close()
	if code == 0 {
		if err := goleak.Find(leakOptions()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignores the goroutines that etcd's and gRPC's packages start
// once per process and never stop. Each is named exactly.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		// go.opencensus / klog-style flush daemons are not used; the known
		// ones are gRPC's and zap's process-wide helpers:
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/schedule.(*fifo).run"),
	}
}
