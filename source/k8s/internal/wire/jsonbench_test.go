package wire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
)

// benchWorkload is a realistic custom resource: a workload whose spec holds
// components (containers with env, ports, resources and mounts), volumes,
// a config map and free-form parameters, and whose status holds
// conditions.
type benchWorkload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              benchWorkloadSpec   `json:"spec"`
	Status            benchWorkloadStatus `json:"status,omitempty"`
}

type benchWorkloadSpec struct {
	Replicas   *int32               `json:"replicas,omitempty"`
	Paused     bool                 `json:"paused,omitempty"`
	Selector   metav1.LabelSelector `json:"selector"`
	Strategy   benchStrategy        `json:"strategy"`
	Components []benchComponent     `json:"components"`
	Volumes    []corev1.Volume      `json:"volumes,omitempty"`
	Config     map[string]string    `json:"config,omitempty"`
	Parameters runtime.RawExtension `json:"parameters,omitempty"`
}

type benchStrategy struct {
	Type           string              `json:"type"`
	MaxSurge       *intstr.IntOrString `json:"maxSurge,omitempty"`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

type benchComponent struct {
	Name         string                      `json:"name"`
	Image        string                      `json:"image"`
	Command      []string                    `json:"command,omitempty"`
	Args         []string                    `json:"args,omitempty"`
	Env          []corev1.EnvVar             `json:"env,omitempty"`
	Ports        []corev1.ContainerPort      `json:"ports,omitempty"`
	Resources    corev1.ResourceRequirements `json:"resources,omitempty"`
	VolumeMounts []corev1.VolumeMount        `json:"volumeMounts,omitempty"`
	Probe        *corev1.Probe               `json:"probe,omitempty"`
}

type benchWorkloadStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	ReadyReplicas      int32              `json:"readyReplicas,omitempty"`
	Endpoints          []string           `json:"endpoints,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// benchWorkloadJSON is workload i as the server sends it (about 10 KB).
func benchWorkloadJSON(tb testing.TB, i int) []byte {
	replicas := int32(3)
	surge := intstr.FromString("25%")
	t := metav1.Unix(1_750_000_000+int64(i), 0)
	comp := func(name string, port int32) benchComponent {
		var env []corev1.EnvVar
		for k := range 24 {
			env = append(env, corev1.EnvVar{Name: fmt.Sprintf("%s_SETTING_%d", strings.ToUpper(name), k), Value: fmt.Sprintf("value-%d-of-%s", k, name)})
		}
		env = append(env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
		return benchComponent{
			Name: name, Image: "registry.example.com/platform/" + name + ":v2.14.3",
			Command: []string{"/bin/" + name}, Args: []string{"--port", fmt.Sprint(port), "--log-level=info", "--config=/etc/" + name + "/config.yaml"},
			Env:   env,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + name}, {Name: "cache", MountPath: "/var/cache/" + name}},
			Probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(port)}},
				PeriodSeconds: 10, FailureThreshold: 3},
		}
	}
	w := benchWorkload{
		TypeMeta: metav1.TypeMeta{APIVersion: "platform.example.com/v1", Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("checkout-%05d", i), Namespace: "team-payments", UID: "5f0c6b1e-4c1a-4d7e-9b7c-2f0d9e1a3b4c",
			ResourceVersion: fmt.Sprint(100000 + i), Generation: 4, CreationTimestamp: t,
			Labels: map[string]string{"app.kubernetes.io/name": "checkout", "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/managed-by": "platform-operator",
				"team": "payments", "tier": "backend", "environment": "production", "region": "eu-west-1", "instance": fmt.Sprint(i)},
			Annotations: map[string]string{"platform.example.com/owner": "payments@example.com", "platform.example.com/revision": "17",
				"platform.example.com/change-cause": "rollout of v2.14.3 after the incident review"},
			Finalizers: []string{"platform.example.com/cleanup"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "platform-operator", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "platform.example.com/v1",
				Time: &t, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:components":{},"f:replicas":{},"f:volumes":{}}}`)}},
		},
		Spec: benchWorkloadSpec{
			Replicas:   &replicas,
			Selector:   metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "checkout"}},
			Strategy:   benchStrategy{Type: "RollingUpdate", MaxSurge: &surge},
			Components: []benchComponent{comp("api", 8080), comp("worker", 8081), comp("sidecar", 8082), comp("proxy", 8083)},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "checkout-config"}}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "checkout-tls"}}},
			},
			Config:     map[string]string{"featureFlags": "a,b,c", "timeout": "30s", "retries": "3", "currency": "EUR"},
			Parameters: runtime.RawExtension{Raw: []byte(`{"batchSize":100,"queues":["orders","refunds"],"limits":{"rps":250.5}}`)},
		},
		Status: benchWorkloadStatus{ObservedGeneration: 4, ReadyReplicas: 3, Endpoints: []string{"10.0.1.4:8080", "10.0.2.9:8080", "10.0.3.2:8080"},
			Conditions: []metav1.Condition{
				{Type: "Available", Status: metav1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Workload has minimum availability.", LastTransitionTime: t, ObservedGeneration: 4},
				{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "NewRevisionAvailable", Message: "Revision 17 has successfully progressed.", LastTransitionTime: t, ObservedGeneration: 4},
			}},
	}
	return mustJSON(tb, &w)
}

// benchPodJSON is a pod as the server sends it, with its managedFields.
func benchPodJSON(tb testing.TB, i int) []byte {
	p := seedPod(i, "web")
	t := p.CreationTimestamp
	p.ManagedFields = append(p.ManagedFields,
		metav1.ManagedFieldsEntry{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"rs\"}":{}}},` +
				`"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{},"f:image":{},"f:livenessProbe":{},"f:name":{},"f:ports":{},"f:readinessProbe":{},"f:resources":{},"f:volumeMounts":{}}},` +
				`"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{},"f:volumes":{}}}`)},
		metav1.ManagedFieldsEntry{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},` +
				`"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.0.0.7\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)})
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t}}
	return mustJSON(tb, p)
}

// BenchmarkDecodeJSON compares the JSON plan with sigs.k8s.io/json on a
// custom resource and on a pod, strings shared and managedFields dropped:
// "plan"; the same with spec subtrees shared (the source's default; every
// decode after the second finds them, as the pods of one Deployment do):
// "plan-subtrees"; sigs.k8s.io/json then ShareStrings, the path the plan
// replaces: "sigs"; and each without sharing ("plan-noshare",
// "sigs-noshare"). The shared table is warm, as in a relist.
//
//	go test ./source/k8s/internal/wire -run '^$' -bench DecodeJSON -benchmem
func BenchmarkDecodeJSON(b *testing.B) {
	benchDecodeJSON[benchWorkload](b, "crd", benchWorkloadJSON(b, 1))
	benchDecodeJSON[corev1.Pod](b, "pod", benchPodJSON(b, 1))
}

func benchDecodeJSON[E any, T interface {
	*E
	metav1.Object
}](b *testing.B, name string, raw []byte) {
	shared := NewJSONPlan[E](PlanOptions{ShareStrings: true})
	subtrees := NewJSONPlan[E](PlanOptions{ShareStrings: true, ShareSubtrees: true})
	plain := NewJSONPlan[E](PlanOptions{})
	var check E
	require.NoError(b, shared.Decode(raw, &check))
	decoders := []struct {
		name   string
		decode func(o *E) error
	}{
		{"plan", func(o *E) error { return shared.Decode(raw, o) }},
		{"plan-subtrees", func(o *E) error { return subtrees.Decode(raw, o) }},
		{"sigs", func(o *E) error {
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, o); err != nil {
				return err
			}
			T(o).SetManagedFields(nil)
			ShareStrings(o)
			return nil
		}},
		{"plan-noshare", func(o *E) error { return plain.Decode(raw, o) }},
		{"sigs-noshare", func(o *E) error {
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, o); err != nil {
				return err
			}
			T(o).SetManagedFields(nil)
			return nil
		}},
	}
	for _, d := range decoders {
		b.Run(fmt.Sprintf("%s-%dB/%s", name, len(raw), d.name), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				var o E
				if err := d.decode(&o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
