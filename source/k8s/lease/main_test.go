package lease_test

import (
	"testing"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// env is the control plane shared by the tests, nil when
// KUBEBUILDER_ASSETS is unset.
var env *k8stest.Env

func TestMain(m *testing.M) {
	k8stest.Main(m, k8stest.MainOptions{Started: func(e *k8stest.Env) { env = e }})
}

// needEnv skips t when no control plane runs.
func needEnv(t testing.TB) *k8stest.Env {
	t.Helper()
	if env == nil {
		t.Skip(k8stest.ErrNoAssets)
	}
	return env
}
