package wire

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// seedPod is a Deployment's pod (app names the Deployment) with the fields
// the decoder treats specially: managedFields, labels, containers with
// env, resources, ports, mounts and probes (shared spec subtrees),
// tolerations, volumes, a status with container IDs.
func seedPod(i int, app string) *corev1.Pod {
	t := metav1.Unix(1_750_000_000+int64(i), 0)
	yes := true
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: "HTTP"}},
		InitialDelaySeconds: 5, PeriodSeconds: 10, FailureThreshold: 3}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%05x", app, i), Namespace: "team-" + app, UID: types.UID(fmt.Sprintf("uid-%d", i)),
			ResourceVersion: fmt.Sprint(1000 + i), CreationTimestamp: t,
			Labels:          map[string]string{"app": app, "tier": "backend", "instance": fmt.Sprint(i)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-rs", UID: "rs", Controller: &yes}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
				Time: &t, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)}},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app}}}}},
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/" + app + ":v1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: "TCP"}},
				Env:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "SERVICE", Value: app}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}},
				VolumeMounts:  []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true}},
				LivenessProbe: probe, ReadinessProbe: probe,
			}},
			NodeName:    fmt.Sprintf("node-%d", i%7),
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.0.%d", i%250), StartTime: &t,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, ContainerID: fmt.Sprintf("containerd://%d", i)}}},
	}
}

func marshal(t testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	b, err := m.Marshal()
	require.NoError(t, err)
	return b
}
