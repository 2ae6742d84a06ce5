// Package k8stest starts a real kube-apiserver and etcd for tests, through
// sigs.k8s.io/controller-runtime/pkg/envtest, from the binaries in
// KUBEBUILDER_ASSETS (see scripts/kube-apiserver-binary.sh, which builds
// them from the Go module proxy into a cache outside the repository).
package k8stest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsEnv is the environment variable naming the directory that holds
// the kube-apiserver and etcd binaries.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// ErrNoAssets is returned by [Start] when KUBEBUILDER_ASSETS is unset.
var ErrNoAssets = errors.New("k8stest: " + AssetsEnv + " is not set (run `export " + AssetsEnv + "=$(scripts/kube-apiserver-binary.sh)`, or `make test`)")

// Config tunes a test control plane. The zero value is a default
// kube-apiserver.
type Config struct {
	// APIServerArgs are extra kube-apiserver flags, name → values
	// ("watch-cache-sizes" → {"configmaps#0"}).
	APIServerArgs map[string][]string
	// FeatureGates are kube-apiserver feature gates to set, name → on
	// ({"ShardedListAndWatch": true}), passed as --feature-gates after any
	// given in APIServerArgs. Zero: the server's defaults.
	FeatureGates map[string]bool
}

// ShardedListAndWatch is the kube-apiserver feature gate of server-side
// sharded lists and watches (KEP-5866, alpha since v1.36, off by default):
// Config{FeatureGates: map[string]bool{k8stest.ShardedListAndWatch: true}}.
const ShardedListAndWatch = "ShardedListAndWatch"

// Env is a running control plane. Use [Start]; Stop it when done.
type Env struct {
	// Config reaches the apiserver as an administrator. Its QPS and Burst
	// are raised so that tests are not throttled on the client side.
	Config *rest.Config
	// Client is a clientset of Config.
	Client kubernetes.Interface

	env  *envtest.Environment
	etcd *clientv3.Client
	dir  string
}

// Start starts etcd and kube-apiserver and waits until they serve.
//
// Possible errors: [ErrNoAssets], and those of envtest.
func Start(cfg Config) (*Env, error) {
	assets := os.Getenv(AssetsEnv)
	if assets == "" {
		return nil, ErrNoAssets
	}
	dir, err := os.MkdirTemp("", "k8stest-")
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: time.Minute, ControlPlaneStopTimeout: time.Minute}
	api := env.ControlPlane.GetAPIServer()
	// A fixed certificate directory keeps the serving certificate across
	// a restart, so clients keep trusting the server (see Restart).
	api.CertDir = filepath.Join(dir, "apiserver")
	if err := os.MkdirAll(api.CertDir, 0o700); err != nil {
		return nil, err
	}
	for name, vals := range cfg.APIServerArgs {
		api.Configure().Set(name, vals...)
	}
	if len(cfg.FeatureGates) > 0 {
		gates := slices.Clone(cfg.APIServerArgs["feature-gates"])
		for _, name := range slices.Sorted(maps.Keys(cfg.FeatureGates)) {
			gates = append(gates, name+"="+strconv.FormatBool(cfg.FeatureGates[name]))
		}
		api.Configure().Set("feature-gates", strings.Join(gates, ","))
	}
	rc, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("k8stest: start control plane: %w", err)
	}
	rc.QPS, rc.Burst = 5000, 10000
	e := &Env{Config: rc, env: env, dir: dir}
	if e.Client, err = kubernetes.NewForConfig(rc); err != nil {
		e.Stop()
		return nil, err
	}
	e.etcd, err = clientv3.New(clientv3.Config{
		Endpoints:   []string{env.ControlPlane.Etcd.URL.String()},
		DialTimeout: 10 * time.Second,
		Logger:      nopLogger(),
	})
	if err != nil {
		e.Stop()
		return nil, fmt.Errorf("k8stest: etcd client: %w", err)
	}
	return e, nil
}

// Stop stops the control plane and removes its files. It is idempotent.
func (e *Env) Stop() {
	if e.etcd != nil {
		_ = e.etcd.Close()
		e.etcd = nil
	}
	if e.env != nil {
		_ = e.env.Stop()
		e.env = nil
	}
	_ = os.RemoveAll(e.dir)
}

// StopAPIServer stops kube-apiserver only; etcd keeps running.
func (e *Env) StopAPIServer() error {
	return e.env.ControlPlane.GetAPIServer().Stop()
}

// StartAPIServer starts kube-apiserver again, on the same address and with
// the same certificates, after [Env.StopAPIServer].
func (e *Env) StartAPIServer() error {
	return e.env.ControlPlane.GetAPIServer().Start()
}

// Compact compacts etcd's history up to its current revision: every older
// resourceVersion is then expired (lists at it, its continue tokens and
// watches from it fail with 410 Gone, where the watch cache does not serve
// them).
func (e *Env) Compact(ctx context.Context) error {
	resp, err := e.etcd.Get(ctx, "compact-probe")
	if err != nil {
		return fmt.Errorf("k8stest: compact: %w", err)
	}
	_, err = e.etcd.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
	if err != nil {
		return fmt.Errorf("k8stest: compact at %d: %w", resp.Header.Revision, err)
	}
	return nil
}

var nsN atomic.Int64

// Namespace creates a namespace no other test uses and deletes it when t
// ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%d", os.Getpid()%10000, nsN.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = e.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}
