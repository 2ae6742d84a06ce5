package k8s

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
	"github.com/ginformer/ginformer/source/k8s/k8stest/slim"
)

// benchPod is a Deployment's pod as the apiserver serves it: three
// containers with env, resources, ports, mounts and probes, twelve labels,
// an owner, tolerations, volumes (one named after the pod, as the service
// account admission names it), a running status, and managedFields of two
// managers built from the fields set (about 11 KB of JSON, 8 KB of
// protobuf).
func benchPod(i int) *corev1.Pod {
	dep := i / 10
	app := fmt.Sprintf("svc-%d", dep)
	t := metav1.Unix(1_750_000_000+int64(i), 0)
	yes := true
	grace := int64(30)
	tok := fmt.Sprintf("kube-api-access-%05x", i*7919%0xfffff)
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080), Scheme: "HTTP"}},
			InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	container := func(name string, port int32) corev1.Container {
		return corev1.Container{
			Name: name, Image: fmt.Sprintf("registry.example.com/team-%d/%s-%s:v1.%d.0", dep%5, app, name, dep%7),
			Ports: []corev1.ContainerPort{{Name: "http-" + name, ContainerPort: port, Protocol: "TCP"}},
			Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "SERVICE", Value: app},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + name, ReadOnly: true},
				{Name: tok, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			LivenessProbe: probe("/healthz"), ReadinessProbe: probe("/readyz"),
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File", ImagePullPolicy: "IfNotPresent",
		}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-7c9f8d6b5-%05x", app, i), Namespace: fmt.Sprintf("team-%d", dep%20),
			GenerateName: app + "-7c9f8d6b5-", UID: types.UID(fmt.Sprintf("%08x-1111-4222-8333-%012x", i, i)),
			ResourceVersion: fmt.Sprint(1000 + i), CreationTimestamp: t,
			Labels: map[string]string{"app": app, "component": "api", "tier": "backend", "version": "v1.4.2", "team": fmt.Sprintf("team-%d", dep%5),
				"env": "prod", "release": app, "chart": "svc-1.4.2", "managed-by": "helm", "cost-center": fmt.Sprintf("cc-%d", dep%9),
				"pod-template-hash": "7c9f8d6b5", "instance": fmt.Sprintf("%05x", i)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7c9f8d6b5",
				UID: types.UID(fmt.Sprintf("rs-%08x", dep)), Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app}}}},
				{Name: tok, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}},
			Containers:    []corev1.Container{container("app", 8080), container("sidecar", 9090), container("proxy", 15001)},
			RestartPolicy: "Always", TerminationGracePeriodSeconds: &grace, DNSPolicy: "ClusterFirst", ServiceAccountName: app,
			NodeName: fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i%500/250, i%250), SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute"},
				{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute"}},
		},
	}
	p.Status = corev1.PodStatus{Phase: "Running", HostIP: fmt.Sprintf("10.0.%d.%d", i%500/250, i%250), PodIP: fmt.Sprintf("10.64.%d.%d", i/256%256, i%256), StartTime: &t, QOSClass: "Burstable"}
	for _, ty := range []corev1.PodConditionType{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: ty, Status: "True", LastTransitionTime: t})
	}
	for k, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Ready: true, Image: c.Image,
			ImageID: c.Image + "@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945", Started: &yes,
			ContainerID: fmt.Sprintf("containerd://%064x", i*3+k), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}})
	}
	// managedFields as the server writes them: the fields each manager set.
	spec, _ := json.Marshal(struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     corev1.PodSpec    `json:"spec"`
	}{metav1.ObjectMeta{Labels: p.Labels, OwnerReferences: p.OwnerReferences, GenerateName: p.GenerateName}, p.Spec})
	status, _ := json.Marshal(struct {
		Status corev1.PodStatus `json:"status"`
	}{p.Status})
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: "Update", APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(fieldSet(spec)))},
		{Manager: "kubelet", Operation: "Update", APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(fieldSet(status))), Subresource: "status"},
	}
	return p
}

// fieldSet turns a JSON document into the FieldsV1 of the fields it sets.
func fieldSet(doc []byte) []byte {
	var v any
	_ = json.Unmarshal(doc, &v)
	var walk func(v any) any
	walk = func(v any) any {
		out := map[string]any{}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				out["f:"+k] = walk(x[k])
			}
		case []any:
			for j, e := range x {
				if m, ok := e.(map[string]any); ok && m["name"] != nil {
					out[fmt.Sprintf(`k:{"name":%q}`, m["name"])] = walk(e)
				} else {
					out[fmt.Sprintf("i:%d", j)] = walk(e)
				}
			}
		}
		return out
	}
	b, _ := json.Marshal(walk(v))
	return b
}

// BenchmarkDecodePods decodes a list of 20,000 served pods (protobuf) as
// client-go's informers do (the scheme's protobuf decoder) and as the
// source does (all cores, managedFields skipped, strings and spec subtrees
// shared; a relist with 1% changed; a Transform to a new, smaller object;
// a projection). Reported per pod: ns,
// bytes allocated, and bytes kept live once decoded (keptB).
//
//	go test ./source/k8s -run '^$' -bench DecodePods -benchmem -benchtime 5x
func BenchmarkDecodePods(b *testing.B) {
	const n = 20_000
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "99999"}}
	for i := range n {
		list.Items = append(list.Items, *benchPod(i))
	}
	var body []byte
	{
		ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
		enc := scheme.Codecs.EncoderForVersion(ser, corev1.SchemeGroupVersion)
		var buf bytesBuffer
		if err := enc.Encode(list, &buf); err != nil {
			b.Fatal(err)
		}
		body = buf.b
	}
	raw, err := wire.Unwrap(body)
	if err != nil {
		b.Fatal(err)
	}
	_, items, err := wire.SplitList(raw, 2)
	if err != nil {
		b.Fatal(err)
	}
	changed := make([][]byte, len(items))
	copy(changed, items)
	for i := 0; i < n; i += 100 { // 1% changed
		p := benchPod(i)
		p.ResourceVersion = fmt.Sprint(200000 + i)
		p.Status.Conditions[2].Status = "False"
		changed[i] = marshal(b, p)
	}
	b.Logf("%d pods, %.1f KB of protobuf each", n, float64(len(body))/n/1e3)
	// kept measures outside the timed loop (b.ResetTimer would drop the
	// metric).
	kept := func(b *testing.B, decode func() any) {
		b.StopTimer()
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		x := decode()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/n, "keptB/pod")
		runtime.KeepAlive(x)
	}
	perPod := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pod")
	}
	b.Run("client-go", func(b *testing.B) {
		dec := scheme.Codecs.UniversalDeserializer()
		decode := func() any {
			obj, _, err := dec.Decode(body, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			return obj
		}
		for range b.N {
			decode()
		}
		perPod(b)
		kept(b, decode)
	})
	b.Run("ginformer", func(b *testing.B) {
		for range b.N {
			newCodec[corev1.Pod, *corev1.Pod](Options{}).decodeList(formatProto, items, nil)
		}
		perPod(b)
		kept(b, func() any { return newCodec[corev1.Pod, *corev1.Pod](Options{}).decodeList(formatProto, items, nil) })
	})
	b.Run("ginformer-relist-1pct", func(b *testing.B) {
		c := newCodec[corev1.Pod, *corev1.Pod](Options{})
		c.decodeList(formatProto, items, nil)
		b.ResetTimer()
		for i := range b.N {
			if i%2 == 0 {
				c.decodeList(formatProto, changed, nil)
			} else {
				c.decodeList(formatProto, items, nil)
			}
		}
		perPod(b)
	})
	b.Run("ginformer-transformed", func(b *testing.B) {
		// An informer whose Transform keeps a new, smaller object: kept
		// is that object and the source's record of the pod.
		decode := func() any {
			c := newCodec[corev1.Pod, *corev1.Pod](Options{})
			objs := c.decodeList(formatProto, items, nil)
			slim := make([]*corev1.Pod, len(objs))
			for i, o := range objs {
				slim[i] = slimPod(o)
			}
			return []any{c, slim}
		}
		for range b.N {
			decode()
		}
		perPod(b)
		kept(b, decode)
	})
	b.Run("ginformer-projection", func(b *testing.B) {
		for range b.N {
			newCodec[slim.Pod, *slim.Pod](Options{}).decodeList(formatProto, items, nil)
		}
		perPod(b)
		kept(b, func() any { return newCodec[slim.Pod, *slim.Pod](Options{}).decodeList(formatProto, items, nil) })
	})
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
