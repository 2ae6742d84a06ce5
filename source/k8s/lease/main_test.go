package lease_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// env is the control plane shared by the tests, nil when
// KUBEBUILDER_ASSETS is unset.
var env *k8stest.Env

func TestMain(m *testing.M) {
	var err error
	env, err = k8stest.Start(k8stest.Config{})
	if err != nil && !errors.Is(err, k8stest.ErrNoAssets) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
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

// needEnv skips t when no control plane runs.
func needEnv(t testing.TB) *k8stest.Env {
	t.Helper()
	if env == nil {
		t.Skip(k8stest.ErrNoAssets)
	}
	return env
}

// leakOptions ignores the process-wide goroutines of client-go and klog,
// started once and never stopped.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/util/wait.BackoffUntilWithContext.func1"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*clientConnReadLoop).run"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.poller.func1"),
	}
}
