package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/bench"
	"github.com/ginformer/ginformer/bench/internal/childproc"
	"github.com/ginformer/ginformer/bench/internal/kubepods"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// The -crd mode's libraries, as a child's -lib flag takes them. The
// prefix routes a child to newCRDInformer.
const (
	crdPrefix          = "crd-"
	libCRDClientGo     = crdPrefix + libClientGo
	libCRDDynamic      = crdPrefix + "client-go-dynamic"
	libCRDGinformer    = crdPrefix + libGinformer
	libCRDProjection   = crdPrefix + libProjection
	fieldManagerCreate = "workload-operator"
	fieldManagerStatus = "workload-controller"
)

// The -crd mode's columns.
const (
	colCRDClientGo   = "client-go"
	colCRDStrip      = "client-go, " + transformStrip
	colCRDSlim       = "client-go, " + transformSlim
	colCRDDynamic    = "client-go dynamic"
	colCRDGinformer  = "ginformer"
	colCRDProjection = "ginformer projection"
)

// crdParticipants are the -crd mode's columns: client-go's typed informer
// at its defaults, with a transform stripping managedFields and with one
// keeping workloadSlim; client-go's dynamic informer; ginformer full and
// projected (workloadSlim).
func crdParticipants(cfg config) []participant {
	p := func(name string, args ...string) participant {
		return participant{name: name, exe: cfg.Exe, args: args}
	}
	return []participant{
		p(colCRDClientGo, "-lib="+libCRDClientGo),
		p(colCRDGinformer, "-lib="+libCRDGinformer),
		p(colCRDStrip, "-lib="+libCRDClientGo, "-transform="+transformStrip),
		p(colCRDProjection, "-lib="+libCRDProjection),
		p(colCRDSlim, "-lib="+libCRDClientGo, "-transform="+transformSlim),
		p(colCRDDynamic, "-lib="+libCRDDynamic),
	}
}

// crdScheme knows workload and workloadList under the CRD's group and
// version, and the meta types (Status, WatchEvent) there, as a
// controller-runtime scheme built with the type's AddToScheme does.
func crdScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	gv := crdGVR.GroupVersion()
	s.AddKnownTypeWithName(gv.WithKind(crdKind), &workload{})
	s.AddKnownTypeWithName(gv.WithKind(crdKind+"List"), &workloadList{})
	metav1.AddToGroupVersion(s, gv)
	return s
}

// crdRESTClient is a REST client of the CRD's group and version speaking
// JSON with crdScheme's codecs: what controller-runtime's typed client
// and cache build for a custom resource's Go type.
func crdRESTClient(cfg *rest.Config) (*rest.RESTClient, error) {
	rc := rest.CopyConfig(cfg)
	gv := crdGVR.GroupVersion()
	rc.GroupVersion = &gv
	rc.APIPath = "/apis"
	rc.ContentType, rc.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	rc.NegotiatedSerializer = serializer.NewCodecFactory(crdScheme()).WithoutConversion()
	if rc.UserAgent == "" {
		rc.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(rc)
}

// runCRD is run's -crd mode: it installs the workload CRD, creates
// cfg.Pods workloads, and measures the participants of crdParticipants
// as run measures pods.
func runCRD(ctx context.Context, cfg config, out io.Writer) (rep *report, err error) {
	if cfg.ProfileDir != "" {
		if cfg.ProfileDir, err = filepath.Abs(cfg.ProfileDir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
	}
	t0, benv := time.Now(), bench.NewEnv()
	logf("starting kube-apiserver and etcd")
	env, err := k8stest.Start(k8stest.Config{})
	if err != nil {
		return nil, err
	}
	defer func() { childproc.KillAll(); env.Stop() }()
	defer context.AfterFunc(ctx, childproc.KillAll)()
	dir, err := os.MkdirTemp("", "kubeapi-crd-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := kubepods.WriteKubeconfig(env.Config, kubeconfig); err != nil {
		return nil, err
	}
	rc, err := crdRESTClient(env.Config)
	if err != nil {
		return nil, err
	}
	if err := installCRD(ctx, env.Config, rc); err != nil {
		return nil, err
	}
	logf("creating %d workloads with %d writers", cfg.Pods, cfg.Writers)
	tc := time.Now()
	if err := populateCRD(ctx, env, rc, cfg.Pods, cfg.Writers); err != nil {
		return nil, err
	}
	rep = &report{cfg: cfg, createTook: time.Since(tc)}
	logf("created %d workloads in %s", cfg.Pods, rep.createTook.Round(time.Second))
	if err := env.Compact(ctx); err != nil {
		return nil, err
	}
	if rep.jsonSize, err = servedCRDSize(ctx, rc, cfg.Pods); err != nil {
		return nil, err
	}
	logf("served workload: %.0f B JSON", rep.jsonSize)
	if v, err := env.Client.Discovery().ServerVersion(); err == nil {
		rep.server = v.GitVersion
	}
	ps := crdParticipants(cfg)
	rep.env = benv
	round := func(r int) {
		// A long run that must be cut short still leaves the medians of
		// the runs done so far (stderr).
		if r < cfg.Runs {
			rep.took, rep.env.LoadEnd = time.Since(t0), bench.LoadAvg()
			logf("after run %d of %d:", r, cfg.Runs)
			rep.writeCRD(os.Stderr)
		}
	}
	if err := measureAll(ctx, cfg, ps, kubeconfig, rep, func(seed uint64) ([]update, error) {
		return writeCRDUpdates(ctx, rc, cfg.Pods, cfg.Updates, cfg.UpdateWriters, seed)
	}, round); err != nil {
		return nil, err
	}
	rep.took, rep.env.LoadEnd = time.Since(t0), bench.LoadAvg()
	rep.writeCRD(out)
	return rep, nil
}

// measureAll runs cfg.Warmup unmeasured children, then cfg.Runs children
// of each participant (each run starting with the next one), write doing
// each watch phase's writes, and records the results in rep; round, if
// set, is called after each run (1, 2, ...) of every participant.
func measureAll(ctx context.Context, cfg config, ps []participant, kubeconfig string, rep *report, write func(seed uint64) ([]update, error), round func(r int)) error {
	base := func(updates int) []string {
		return []string{"-kubeconfig=" + kubeconfig, "-pods=" + strconv.Itoa(cfg.Pods),
			"-updates=" + strconv.Itoa(updates), "-timeout=" + cfg.Timeout.String()}
	}
	for w := range cfg.Warmup {
		p := ps[(w+1)%len(ps)]
		logf("warm-up %d: %s", w+1, p.name)
		if _, _, err := runChild(ctx, p.exe, append(base(0), p.args...), cfg.Timeout, func() ([]update, error) { return nil, nil }, nil); err != nil {
			return fmt.Errorf("warm-up, %s: %w", p.name, err)
		}
	}
	rep.participants = ps
	rep.results = map[string][]measure{}
	rep.wire = map[string]map[string]int{}
	rep.versions = map[string]string{}
	seed := uint64(0)
	for r := range cfg.Runs {
		for i := range ps {
			p := ps[(r+i)%len(ps)]
			args := append(base(cfg.Updates), p.args...)
			if cfg.NoCompression {
				args = append(args, "-no-compression")
			}
			if cfg.ProfileDir != "" {
				args = append(args, "-cpuprofile="+filepath.Join(cfg.ProfileDir, fmt.Sprintf("crd-%s-run%d.pprof", p.file(), r+1)))
			}
			s := seed
			res, writes, err := runChild(ctx, p.exe, args, cfg.Timeout, func() ([]update, error) { return write(s) }, nil)
			seed++
			if err != nil {
				return fmt.Errorf("run %d, %s: %w", r+1, p.name, err)
			}
			m := newMeasure(res, writes, cfg.Pods)
			rep.results[p.name] = append(rep.results[p.name], m)
			if rep.wire[p.name] == nil {
				rep.wire[p.name] = res.Wire
			}
			rep.versions[p.name] = res.ClientGo
			logf("run %d %-32s sync %6.0f ms wall, %6.0f ms CPU, %5.0f B/object kept; watch %.1f µs CPU/event, p50 %.1f ms, %d/%d seen",
				r+1, p.name, m.syncWallMS, m.syncCPUMS, m.keptPerPod, m.watchCPUPerEventUS, m.p50MS, m.seen, cfg.Updates)
		}
		if round != nil {
			round(r + 1)
		}
	}
	return nil
}

// installCRD creates the workload CRD and waits until it is established
// and its resource lists.
func installCRD(ctx context.Context, cfg *rest.Config, rc *rest.RESTClient) error {
	ac, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crd := workloadCRD()
	if _, err := ac.CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := ac.CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		established := false
		if err == nil {
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
		}
		if established {
			if err = rc.Get().Resource(crdResource).Param("limit", "1").Do(ctx).Error(); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not served after a minute: %v", crd.Name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// createWorkload creates workload i as its operator does (field manager
// workload-operator), then writes its status as its controller does
// (workload-controller), so that the server keeps managedFields of both.
func createWorkload(ctx context.Context, rc *rest.RESTClient, i int) error {
	w := newWorkload(i)
	created := &workload{}
	err := kubepods.Retry(ctx, func() error {
		err := rc.Post().Namespace(w.Namespace).Resource(crdResource).Param("fieldManager", fieldManagerCreate).
			Body(w).Do(ctx).Into(created)
		if apierrors.IsAlreadyExists(err) {
			err = rc.Get().Namespace(w.Namespace).Resource(crdResource).Name(w.Name).Do(ctx).Into(created)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create workload %d: %w", i, err)
	}
	setWorkloadStatus(created, time.Now())
	err = kubepods.Retry(ctx, func() error {
		return rc.Put().Namespace(w.Namespace).Resource(crdResource).Name(w.Name).SubResource("status").
			Param("fieldManager", fieldManagerStatus).Body(created).Do(ctx).Error()
	})
	if err != nil {
		return fmt.Errorf("status of workload %d: %w", i, err)
	}
	return nil
}

// populateCRD creates the namespaces, then workloads 0 to n-1, with
// writers concurrent writers, compacting etcd every 30 s as
// kubepods.Populate does.
func populateCRD(ctx context.Context, env *k8stest.Env, rc *rest.RESTClient, n, writers int) error {
	if err := kubepods.CreateNamespaces(ctx, env.Client); err != nil {
		return err
	}
	start := time.Now()
	var lastCompact atomic.Int64
	lastCompact.Store(start.UnixNano())
	return kubepods.Parallel(ctx, n, writers, func(ctx context.Context, i int) error {
		if err := createWorkload(ctx, rc, i); err != nil {
			return err
		}
		if last := lastCompact.Load(); time.Since(time.Unix(0, last)) > 30*time.Second && lastCompact.CompareAndSwap(last, time.Now().UnixNano()) {
			return env.Compact(ctx)
		}
		return nil
	}, func(done int) {
		fmt.Fprintf(os.Stderr, "  %d/%d workloads, %.0f/s\n", done, n, float64(done)/time.Since(start).Seconds())
	})
}

// servedCRDSize is the average size of a served workload (JSON, with its
// managedFields), over up to 50 workloads spread over the collection.
func servedCRDSize(ctx context.Context, rc *rest.RESTClient, n int) (float64, error) {
	samples := min(n, 50)
	var total float64
	for k := range samples {
		ns, name := crdName(k * n / samples)
		b, err := rc.Get().Namespace(ns).Resource(crdResource).Name(name).DoRaw(ctx)
		if err != nil {
			return 0, err
		}
		if !json.Valid(b) {
			return 0, fmt.Errorf("workload %s/%s: not JSON", ns, name)
		}
		total += float64(len(b))
	}
	return total / float64(samples), nil
}

// writeCRDUpdates is writeUpdates for workloads: w JSON merge patches of
// the status (probe time and message) of random workloads, from writers
// goroutines.
func writeCRDUpdates(ctx context.Context, rc *rest.RESTClient, n, w, writers int, seed uint64) ([]update, error) {
	out := make([]update, w)
	err := kubepods.Parallel(ctx, w, writers, func(ctx context.Context, k int) error {
		r := rand.New(rand.NewPCG(seed, uint64(k)))
		ns, name := crdName(r.IntN(n))
		var got metav1.PartialObjectMetadata
		var sent int64
		err := kubepods.Retry(ctx, func() error {
			sent = time.Now().UnixNano()
			b, err := rc.Patch(types.MergePatchType).Namespace(ns).Resource(crdResource).Name(name).SubResource("status").
				Param("fieldManager", fieldManagerStatus).Body(workloadStatusPatch(int(seed)*w+k, time.Now())).DoRaw(ctx)
			if err != nil {
				return err
			}
			return json.Unmarshal(b, &got)
		})
		if err != nil {
			return fmt.Errorf("update %s/%s: %w", ns, name, err)
		}
		out[k] = update{RV: got.ResourceVersion, NS: time.Now().UnixNano(), Sent: sent}
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	return out, distinctVersions(out)
}
