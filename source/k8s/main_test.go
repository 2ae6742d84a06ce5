package k8s_test

import (
	"testing"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// env is the control plane shared by the tests, nil when
// KUBEBUILDER_ASSETS is unset. ConfigMaps bypass the watch cache on it
// (--watch-cache-sizes=configmaps#0): their lists and watches are served by
// etcd, so compaction expires versions exactly as the contract expects.
// Other resources (Secrets, Pods) are cached, as usual.
var env *k8stest.Env

func TestMain(m *testing.M) {
	k8stest.Main(m, k8stest.MainOptions{
		Config: k8stest.Config{APIServerArgs: map[string][]string{
			"watch-cache-sizes": {"configmaps#0"},
		}},
		Started: func(e *k8stest.Env) { env = e },
		AfterTests: func() { // the control planes started on first use
			if benchEnv != nil {
				benchEnv.Stop()
			}
			if gatedEnv != nil {
				gatedEnv.Stop()
			}
		},
	})
}

// needEnv skips t when no control plane runs.
func needEnv(t testing.TB) *k8stest.Env {
	t.Helper()
	if env == nil {
		t.Skip(k8stest.ErrNoAssets)
	}
	return env
}
