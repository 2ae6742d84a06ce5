package k8s_test

import (
	"context"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// The typed pods the source decodes itself equal what client-go decodes.

// wireLog records the media types of the responses to lists and watches
// of pods.
type wireLog struct {
	mu    sync.Mutex
	types map[string]int
}

func (l *wireLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") {
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			l.mu.Lock()
			l.types[mt]++
			l.mu.Unlock()
		}
		return resp, err
	})
}

func (l *wireLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.types))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// loggedClient is a clientset of cfg (copied) whose pod lists and watches
// are logged; json forces JSON.
func loggedClient(t testing.TB, cfg *rest.Config, json bool) (kubernetes.Interface, *rest.Config, *wireLog) {
	c := rest.CopyConfig(cfg)
	if json {
		c.ContentType = runtime.ContentTypeJSON
		c.AcceptContentTypes = runtime.ContentTypeJSON
	}
	log := &wireLog{types: map[string]int{}}
	c.Wrap(log.wrap)
	cs, err := kubernetes.NewForConfig(c)
	require.NoError(t, err)
	return cs, c, log
}

func ptrTo[T any](v T) *T { return &v }

// realisticPod is pod i of a Deployment, as a ReplicaSet controller
// creates it: several containers, probes, volumes, tolerations.
func realisticPod(i int) *corev1.Pod {
	rs := fmt.Sprintf("shop-api-%d-7f9c6d5b4", i/10)
	ctrl := true
	probe := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	container := func(name, image string, port int32, cpu, mem string, env []corev1.EnvVar) corev1.Container {
		return corev1.Container{
			Name: name, Image: image,
			Ports: []corev1.ContainerPort{{Name: "http-" + name, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			Env:   env,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
			},
			VolumeMounts:             []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + name, ReadOnly: true}},
			ReadinessProbe:           probe("/readyz", port),
			LivenessProbe:            probe("/healthz", port),
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		}
	}
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	initC := container("init", "registry.example.com/shop/migrate:v3", 8081, "10m", "32Mi", nil)
	initC.ReadinessProbe, initC.LivenessProbe = nil, nil
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%05d", rs, i),
			Labels: map[string]string{
				"app": "shop-api", "component": []string{"api", "worker", "frontend"}[i%3], "version": fmt.Sprintf("v1.%d", i%4),
				"pod-template-hash": "7f9c6d5b4", "team": "payments", "instance": fmt.Sprint(i),
			},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
				"kubectl.kubernetes.io/default-container": "app"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: types.UID(fmt.Sprintf("0000-%d", i/10)), Controller: &ctrl, BlockOwnerDeletion: &ctrl}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      fmt.Sprintf("node-%d", i%17),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptrTo(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			AutomountServiceAccountToken:  ptrTo(false),
			SchedulerName:                 "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))},
			},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "shop-api-config"}, DefaultMode: ptrTo(int32(420))}}}},
			InitContainers: []corev1.Container{initC},
			Containers: []corev1.Container{
				container("app", fmt.Sprintf("registry.example.com/shop/api:v1.%d", i%4), 8080, "500m", "512Mi", []corev1.EnvVar{
					{Name: "LOG_LEVEL", Value: "info"}, {Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
				}),
				container("proxy", "docker.io/istio/proxyv2:1.27.3", 15090, "100m", "128Mi", []corev1.EnvVar{
					{Name: "NODE_NAME", ValueFrom: fieldRef("spec.nodeName")},
				}),
				container("logs", "docker.io/fluent/fluent-bit:4.0.3", 2020, "50m", "64Mi", nil),
			},
		},
	}
}

// runningStatus is the status a kubelet reports for p, running.
func runningStatus(p *corev1.Pod, i int, seq int) corev1.PodStatus {
	t := metav1.NewTime(time.Unix(1_780_000_000+int64(seq), 0))
	ip := fmt.Sprintf("10.1.%d.%d", i/250, i%250)
	st := corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t, Message: fmt.Sprint("probe ", seq)}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t}},
		HostIP:     "192.168.0.17", HostIPs: []corev1.HostIP{{IP: "192.168.0.17"}},
		PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		StartTime: &t, QOSClass: corev1.PodQOSBurstable,
	}
	for k, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Ready: true, Image: c.Image, ImageID: c.Image + "@sha256:0123456789abcdef",
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
			ContainerID:  fmt.Sprintf("containerd://%d-%d", i, k),
			RestartCount: int32(seq),
			Started:      ptrTo(true),
		})
	}
	return st
}

// serverPods is client-go's own typed List of the pods of ns.
func serverPods(t testing.TB, cs kubernetes.Interface, ns string, keepManagedFields bool) map[string]*corev1.Pod {
	l, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]*corev1.Pod{}
	for i := range l.Items {
		p := &l.Items[i]
		p.TypeMeta = metav1.TypeMeta{}
		if !keepManagedFields {
			p.ManagedFields = nil
		}
		out[p.Name] = p
	}
	return out
}

// TestDecodingMatchesClientGo: pods decoded by the source (protobuf and
// JSON, streaming and paged lists, managedFields dropped or kept) equal
// what client-go's typed List decodes, after the initial sync and after
// updates and deletes.
func TestDecodingMatchesClientGo(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	ctx := t.Context()
	_, err := e.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pods := e.Client.CoreV1().Pods(ns)
	t.Cleanup(func() {
		_ = pods.DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}, metav1.ListOptions{})
	})

	const n = 300
	parallelDo(t, n, 16, func(i int) error {
		p, err := pods.Create(ctx, realisticPod(i), metav1.CreateOptions{FieldManager: "kube-controller-manager"})
		if err != nil {
			return err
		}
		p.Status = runningStatus(p, i, 0)
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"})
		return err
	})

	protoCS, protoCfg, protoLog := loggedClient(t, e.Config, false)
	jsonCS, _, jsonLog := loggedClient(t, e.Config, true)
	podItems := func(l *corev1.PodList) []corev1.Pod { return l.Items }
	type podCase struct {
		name   string
		src    *k8s.Source[*corev1.Pod]
		hook   *hooked[*corev1.Pod]
		lw     informer.ListWatchOptions
		truth  kubernetes.Interface
		keepMF bool
		inf    *informer.SharedInformer[informer.NamespacedKey, *corev1.Pod]
	}
	newCase := func(name string, cs kubernetes.Interface, lw informer.ListWatchOptions, opts k8s.Options) *podCase {
		src, err := k8s.New(cs.CoreV1().Pods(ns), podItems, opts)
		require.NoError(t, err)
		require.True(t, src.Decoding(), name)
		return &podCase{name: name, src: src, lw: lw, truth: cs, keepMF: opts.KeepManagedFields}
	}
	cases := []*podCase{
		newCase("protobuf, streaming list", protoCS, informer.ListWatchOptions{}, k8s.Options{}),
		newCase("protobuf, paged lists", protoCS, informer.ListWatchOptions{DisableStreamingList: true, PageSize: 64}, k8s.Options{}),
		newCase("JSON, streaming list", jsonCS, informer.ListWatchOptions{}, k8s.Options{}),
		newCase("JSON, paged lists (k8s.Options), KeepManagedFields", jsonCS, informer.ListWatchOptions{PageSize: 64}, k8s.Options{DisableStreamingList: true, KeepManagedFields: true}),
	}
	// NewForConfig of a built-in type: protobuf, as the clientset.
	viaCfg, err := k8s.NewForConfig[corev1.Pod](protoCfg, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ns, k8s.Options{KeepManagedFields: true})
	require.NoError(t, err)
	require.True(t, viaCfg.Decoding())
	cases = append(cases, &podCase{name: "protobuf, NewForConfig, KeepManagedFields", src: viaCfg, truth: protoCS, keepMF: true})
	for _, c := range cases {
		c.hook = &hooked[*corev1.Pod]{Source: c.src}
		c.inf, _ = startInformer[*corev1.Pod](t, comparing[*corev1.Pod]{c.hook, c.src}, c.lw)
	}
	check := func(when string) {
		t.Helper()
		truth := map[kubernetes.Interface]map[bool]map[string]*corev1.Pod{}
		for _, c := range cases {
			if truth[c.truth] == nil {
				truth[c.truth] = map[bool]map[string]*corev1.Pod{}
			}
			if truth[c.truth][c.keepMF] == nil {
				truth[c.truth][c.keepMF] = serverPods(t, c.truth, ns, c.keepMF)
			}
			want := truth[c.truth][c.keepMF]
			requireCacheEqual(t, c.inf.Lister(), want, c.name+", "+when)
			if c.keepMF {
				for _, p := range want {
					require.Len(t, p.ManagedFields, 2, "kube-controller-manager and kubelet")
				}
			}
			require.Zero(t, c.src.DecodeErrors(), c.name)
		}
		// The same objects whatever the wire format.
		for name, p := range truth[protoCS][true] {
			if j := truth[jsonCS][true][name]; !sameObject(p, j) {
				t.Fatalf("%s: protobuf and JSON differ:\n%s", name, diff.Diff(p, j))
			}
		}
	}
	check("after sync")
	for _, c := range cases {
		streamed := !c.lw.DisableStreamingList && !strings.Contains(c.name, "k8s.Options")
		if streamed {
			require.Zero(t, c.hook.lists.Load(), "%s: synced from a streaming list", c.name)
		} else {
			require.NotZero(t, c.hook.lists.Load(), "%s: synced from lists", c.name)
		}
	}
	require.Equal(t, []string{"application/vnd.kubernetes.protobuf"}, protoLog.seen(), "the typed clients' protobuf")
	require.Equal(t, []string{"application/json"}, jsonLog.seen(), "JSON forced in the rest.Config")

	// Updates (spec labels by one manager, status by another) and deletes.
	parallelDo(t, 60, 8, func(j int) error {
		i := j * 5 // pods 0, 5, …, 295
		name := realisticPod(i).Name
		if j%3 == 0 {
			return pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))})
		}
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Labels["rollout"] = fmt.Sprint("r", j)
		delete(p.Labels, "version")
		if p, err = pods.Update(ctx, p, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			return err
		}
		p.Status = runningStatus(p, i, 1+j%4)
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"})
		return err
	})
	last, err := pods.Get(ctx, realisticPod(1).Name, metav1.GetOptions{})
	require.NoError(t, err)
	last.Annotations["last"] = "write"
	last, err = pods.Update(ctx, last, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	for _, c := range cases {
		require.NoError(t, c.inf.WaitForVersion(wctx, last.ResourceVersion), c.name)
	}
	check("after updates and deletes")
	require.Len(t, serverPods(t, protoCS, ns, false), n-20)
	require.Equal(t, []string{"application/vnd.kubernetes.protobuf"}, protoLog.seen())
	require.Equal(t, []string{"application/json"}, jsonLog.seen())
}
