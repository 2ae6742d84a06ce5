package k8stest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/ginformer/ginformer/internal/leakcheck"
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
	os.Exit(leakcheck.Check(code, idleConnections()...))
}

// idleConnections ignores the idle connections of client-go's shared
// transports, which outlive the control plane's stop; the process-wide
// goroutines are leakcheck's.
func idleConnections() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*clientConnReadLoop).run"),
	}
}
