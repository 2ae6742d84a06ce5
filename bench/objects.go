// Package bench runs the same workloads through ginformer and client-go's
// tools/cache, on identical inputs, and reports both side by side. The
// command in cmd/compare drives it; see docs/benchmarks.md.
package bench

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ginformer/ginformer/informer"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
)

// Shape selects the pod built by [NewPod].
type Shape uint8

const (
	// Small is a pod with name, namespace, UID, resourceVersion and three
	// labels (about 250 B of JSON).
	Small Shape = iota
	// Full is a typical Deployment pod with spec and status (about 4 KB of JSON).
	Full
)

// String returns "small" or "full".
func (s Shape) String() string {
	if s == Full {
		return "full"
	}
	return "small"
}

// Label keys of the benchmark pods. podNameLabel has one pod per value.
const (
	appLabel     = "app"
	tierLabel    = "tier"
	podNameLabel = "statefulset.kubernetes.io/pod-name"
)

// Index names, shared by both libraries.
const (
	nsIndex     = "namespace" // cache.NamespaceIndex
	labelsIndex = "labels"
	nodeIndex   = "node" // spec.nodeName; only in the read/write workload
)

// jsonSize is the size of pod 12345 of shape s as JSON, for the workload
// names (computed once per shape).
var jsonSize = map[Shape]int{}

// ShapeDesc describes the pods of a shape for workload names: "full pods,
// 4.3 KB JSON each".
func ShapeDesc(s Shape) string {
	n, ok := jsonSize[s]
	if !ok {
		b, err := json.Marshal(NewPod(s, 12345, 12345))
		if err != nil {
			panic(err)
		}
		n = len(b)
		jsonSize[s] = n
	}
	if n >= 1000 {
		return fmt.Sprintf("%s pods, %.1f KB JSON each", s, float64(n)/1000)
	}
	return fmt.Sprintf("%s pods, %d B JSON each", s, n)
}

// NewPod returns pod number i of a collection of n: namespace ns-<i%10>,
// labels app=app-<i/100> (100 pods per value), tier=tier-<i%10> (n/10 per
// value) and the pod-name label (1 per value), as in the client-go baseline.
func NewPod(shape Shape, i int, rv int) *corev1.Pod {
	name := "pod-" + strconv.Itoa(i)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       "ns-" + strconv.Itoa(i%10),
			UID:             types.UID("00000000-0000-4000-8000-" + pad12(i)),
			ResourceVersion: strconv.Itoa(rv),
			Labels: map[string]string{
				appLabel:     "app-" + strconv.Itoa(i/100),
				tierLabel:    "tier-" + strconv.Itoa(i%10),
				podNameLabel: name,
			},
		},
	}
	if shape == Full {
		fillFull(p)
		p.Spec.NodeName = "node-" + strconv.Itoa(i/podsPerNode)
	}
	return p
}

// podsPerNode is how many consecutive full pods share a node (NodeName
// node-<i/40>), so a ByIndex(node) query matches about 40.
const podsPerNode = 40

func pad12(i int) string {
	s := strconv.Itoa(i)
	for len(s) < 12 {
		s = "0" + s
	}
	return s
}

// fillFull adds a Deployment pod's spec and status: one container with env,
// resources, probes and mounts, two volumes, tolerations, an owner
// reference, a managedFields entry, five conditions and a container status.
func fillFull(p *corev1.Pod) {
	t := metav1.Unix(1_750_000_000, 0)
	ctrl := true
	grace := int64(30)
	p.GenerateName = "web-7c9f8d6b5-"
	p.CreationTimestamp = t
	p.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}
	p.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7c9f8d6b5",
		UID: "11111111-2222-4333-8444-555555555555", Controller: &ctrl, BlockOwnerDeletion: &ctrl,
	}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", Time: &t, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"11111111-2222-4333-8444-555555555555\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{},"f:image":{},"f:name":{},"f:ports":{},"f:resources":{}}}}}`),
	}}
	probe := func(path string, delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP,
			}},
			InitialDelaySeconds: delay, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	p.Spec = corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"},
			}}},
			{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{
						LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
					}},
				},
			}}},
		},
		Containers: []corev1.Container{{
			Name:  "web",
			Image: "registry.example.com/team/web:v1.42.7",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{
				{Name: "LOG_LEVEL", Value: "info"},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "config", MountPath: "/etc/web", ReadOnly: true},
				{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
			},
			LivenessProbe:            probe("/healthz", 10),
			ReadinessProbe:           probe("/readyz", 5),
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		}},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: &grace,
		DNSPolicy:                     corev1.DNSClusterFirst,
		ServiceAccountName:            "web",
		SchedulerName:                 "default-scheduler",
		Tolerations: []corev1.Toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		},
		EnableServiceLinks: &ctrl,
	}
	cond := func(ty corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: ty, Status: corev1.ConditionTrue, LastTransitionTime: t}
	}
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond("PodReadyToStartContainers"), cond(corev1.PodInitialized), cond(corev1.PodReady),
			cond(corev1.ContainersReady), cond(corev1.PodScheduled),
		},
		HostIP:    "10.0.3.17",
		HostIPs:   []corev1.HostIP{{IP: "10.0.3.17"}},
		PodIP:     "10.244.3.51",
		PodIPs:    []corev1.PodIP{{IP: "10.244.3.51"}},
		StartTime: &t,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:        "web",
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
			Ready:       true,
			Image:       "registry.example.com/team/web:v1.42.7",
			ImageID:     "registry.example.com/team/web@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
			ContainerID: "containerd://8d1f0c7b3e5a4f2c9b6d0e1a2f3c4b5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b",
			Started:     &ctrl,
		}},
		QOSClass: corev1.PodQOSBurstable,
	}
}

// NewPods returns pods 0..n-1 at resourceVersion rv.
func NewPods(shape Shape, n, rv int) []*corev1.Pod {
	ps := make([]*corev1.Pod, n)
	for i := range ps {
		ps[i] = NewPod(shape, i, rv)
	}
	return ps
}

// Copies returns a deep copy of every pod, each its own allocation: a
// decoded list as a typed source hands it over.
func Copies(ps []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(ps))
	for i, p := range ps {
		out[i] = p.DeepCopy()
	}
	return out
}

// PodList returns a deep copy of the pods as a *corev1.PodList: a decoded
// list as client-go's ListWatch hands it over.
func PodList(ps []*corev1.Pod, rv string) *corev1.PodList {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: make([]corev1.Pod, len(ps))}
	for i, p := range ps {
		p.DeepCopyInto(&l.Items[i])
	}
	return l
}

// ginformer side: key and index functions.

func giKey(p *corev1.Pod) (informer.NamespacedKey, error) {
	return informer.NamespacedKey{Namespace: p.Namespace, Name: p.Name}, nil
}

func giIndexes() []informer.Index[*corev1.Pod] {
	return []informer.Index[*corev1.Pod]{
		{Name: nsIndex, Func: func(dst []string, p *corev1.Pod) ([]string, error) {
			return append(dst, p.Namespace), nil
		}},
		{Name: labelsIndex, Func: func(dst []string, p *corev1.Pod) ([]string, error) {
			for k, v := range p.Labels {
				dst = append(dst, k+"="+v)
			}
			return dst, nil
		}},
	}
}

// giNodeIndex indexes pods by spec.nodeName.
func giNodeIndex() informer.Index[*corev1.Pod] {
	return informer.Index[*corev1.Pod]{Name: nodeIndex, Func: func(dst []string, p *corev1.Pod) ([]string, error) {
		return append(dst, p.Spec.NodeName), nil
	}}
}

// client-go side: the same functions in its shape.

// cgNodeIndex indexes pods by spec.nodeName, client-go's shape (a slice per
// call, as client-go index functions return).
func cgNodeIndex(obj interface{}) ([]string, error) {
	return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
}

func cgIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		labelsIndex: func(obj interface{}) ([]string, error) {
			p := obj.(*corev1.Pod)
			out := make([]string, 0, len(p.Labels))
			for k, v := range p.Labels {
				out = append(out, k+"="+v)
			}
			return out, nil
		},
	}
}
