package k8stest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// MainOptions configures [Main].
type MainOptions struct {
	// Config is the shared control plane's. Zero: a default
	// kube-apiserver.
	Config Config
	// Started is called once, before the tests run, with the shared
	// control plane, or with nil when KUBEBUILDER_ASSETS is unset (the
	// tests that need one then skip). Nil: nothing is called, which leaves
	// the tests no way to reach the control plane.
	Started func(*Env)
	// AfterTests is called once the tests have run, before the shared
	// control plane stops and before the leak check: a package stops there
	// the control planes it started itself (with other settings, on first
	// use). Nil: nothing is called.
	AfterTests func()
}

// Main is the TestMain of a package whose tests share one control plane:
// it starts the control plane of opts.Config (none when KUBEBUILDER_ASSETS
// is unset), hands it to opts.Started, runs the tests, calls
// opts.AfterTests, stops the control plane and, if the tests passed, fails
// the run when a goroutine is left over (the process-wide goroutines of
// client-go, klog and the etcd client, and idle HTTP connections, are not
// counted). The check comes after the stop, where goleak.VerifyTestMain
// would check before it. Main does not return: it exits the process with
// the tests' code, or 1 when the control plane fails to start or a
// goroutine leaked.
func Main(m *testing.M, opts MainOptions) {
	env, err := Start(opts.Config)
	if err != nil && !errors.Is(err, ErrNoAssets) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if opts.Started != nil {
		opts.Started(env)
	}
	code := m.Run()
	if opts.AfterTests != nil {
		opts.AfterTests()
	}
	if env != nil {
		env.Stop()
	}
	if code == 0 {
		if err := goleak.Find(leakOptions()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignores the process-wide goroutines of client-go, klog and
// the etcd client's gRPC, which are started once and never stopped, and the
// idle connections of client-go's shared transports.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/util/wait.BackoffUntilWithContext.func1"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*Type).updateUnfinishedWorkLoop"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*delayingType).waitingLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*clientConnReadLoop).run"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.poller.func1"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	}
}
