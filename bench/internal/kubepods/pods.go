// Package kubepods is the cluster side of the Kubernetes benchmarks
// (bench/cmd/kubeapi, bench/cmd/kubewarm). It generates realistic pods:
// Deployment pods with three containers (env, resources, ports, mounts,
// probes), twelve labels, an owner, tolerations and a running status
// written by a second field manager, about 11.8 KB of JSON and 8.5 KB of
// protobuf each as served; pod i is the same in every run. It creates them
// in a cluster ([Populate]) and writes the kubeconfig the benchmarks'
// child processes connect with ([WriteKubeconfig]).
package kubepods

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The cluster the generator describes: pods of Deployments (replicasPer
// replicas each) over namespaces and nodes.
const (
	replicasPer = 10
	numNodes    = 500
	// Namespaces is the number of namespaces the pods are spread over
	// ([NamespaceName]).
	Namespaces = 20
)

// Teams are the teams namespaces and Deployments belong to (label "team").
var Teams = []string{"payments", "search", "checkout", "identity", "catalog"}

var components = []string{"api", "worker", "frontend", "gateway"}

// NamespaceName is namespace j of the cluster, j in [0, Namespaces).
func NamespaceName(j int) string {
	return fmt.Sprintf("%s-%s", Teams[j%len(Teams)], []string{"prod", "staging", "dev", "canary"}[(j/len(Teams))%4])
}

// hexOf is the first n hex digits of the SHA-256 of s: deterministic
// "random" identifiers.
func hexOf(s string, n int) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:n]
}

// suffix is a pod-name suffix of 5 lowercase alphanumerics, distinct for
// every i below 36^5 (multiplying by a number prime to 36^5 permutes the
// residues).
func suffix(i int) string {
	const alpha = "bcdfghjklmnpqrstvwxz0123456789aeiouy"
	v := (i*7_368_787 + 1_234_567) % 60_466_176
	var b [5]byte
	for k := range b {
		b[k] = alpha[v%36]
		v /= 36
	}
	return string(b[:])
}

// deployment describes the Deployment a pod belongs to.
type deployment struct {
	ns, name, hash, team, component, version string
}

func deploymentOf(i int) deployment {
	d := i / replicasPer
	comp := components[d%len(components)]
	return deployment{
		ns:        NamespaceName(d % Namespaces),
		name:      fmt.Sprintf("%s-%s-%d", Teams[d%len(Teams)], comp, d),
		hash:      hexOf("rs"+strconv.Itoa(d), 10),
		team:      Teams[d%len(Teams)],
		component: comp,
		version:   fmt.Sprintf("v1.%d.%d", d%17, d%5),
	}
}

// Name is the namespace and name of pod i ("<deployment>-<hash>-<suffix>").
func Name(i int) (ns, name string) {
	d := deploymentOf(i)
	return d.ns, d.name + "-" + d.hash + "-" + suffix(i)
}

// New is pod i as a ReplicaSet controller creates it: spec only (see
// [SetStatus]). Every call returns a new object.
func New(i int) *corev1.Pod {
	d := deploymentOf(i)
	ns, name := Name(i)
	rs := d.name + "-" + d.hash
	ctrl, no := true, false
	grace := int64(30)
	node := fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", (i*7919)%numNodes/250, (i*7919)%numNodes%250, 17)
	registry := "registry.example.com/" + d.team + "/"
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:         name,
			Namespace:    ns,
			GenerateName: rs + "-",
			Labels: map[string]string{
				"app":               d.name,
				"component":         d.component,
				"tier":              []string{"backend", "frontend"}[btoi(d.component == "frontend")],
				"version":           d.version,
				"team":              d.team,
				"env":               strings.TrimPrefix(ns[strings.LastIndexByte(ns, '-'):], "-"),
				"release":           d.name,
				"chart":             d.component + "-1.4.2",
				"managed-by":        "helm",
				"cost-center":       "cc-" + strconv.Itoa(len(d.team)*100),
				"pod-template-hash": d.hash,
				"instance":          suffix(i), // one value per pod
			},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt":       "2026-03-14T09:26:53Z",
				"kubectl.kubernetes.io/default-container": "app",
				"prometheus.io/scrape":                    "true",
				"prometheus.io/port":                      "9090",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: types.UID(uuidOf("rs" + rs)), Controller: &ctrl, BlockOwnerDeletion: &ctrl,
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			AutomountServiceAccountToken:  &no,
			SchedulerName:                 "default-scheduler",
			PriorityClassName:             "",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: d.name + "-config"}, DefaultMode: ptr(int32(420)),
				}}},
				{Name: "kube-api-access-" + suffix(i+7), VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: ptr(int32(420)),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
						{ConfigMap: &corev1.ConfigMapProjection{
							LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
						}},
					},
				}}},
			},
		},
	}
	api := "kube-api-access-" + suffix(i+7)
	p.Spec.Containers = []corev1.Container{
		container("app", registry+d.name+":"+d.version, 2, 8080, "500m", "512Mi", "2", "1Gi", api, []corev1.EnvVar{
			{Name: "LOG_LEVEL", Value: "info"},
			{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
			{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
		}),
		container("proxy", "docker.io/istio/proxyv2:1.27.3", 1, 15090, "100m", "128Mi", "1", "512Mi", api, []corev1.EnvVar{
			{Name: "NODE_NAME", ValueFrom: fieldRef("spec.nodeName")},
		}),
		container("logs", "docker.io/fluent/fluent-bit:4.0.3", 1, 2020, "50m", "64Mi", "200m", "128Mi", api, []corev1.EnvVar{
			{Name: "HOST_NAME", ValueFrom: fieldRef("spec.nodeName")},
		}),
	}
	return p
}

// container is a container with env, resources, a port, two volume mounts
// and probes: liveness and readiness if probes is 2, readiness if 1.
func container(name, image string, probes int, port int32, reqCPU, reqMem, limCPU, limMem, apiVol string, env []corev1.EnvVar) corev1.Container {
	probe := func(path string, delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP,
			}},
			InitialDelaySeconds: delay, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	c := corev1.Container{
		Name:  name,
		Image: image,
		Ports: []corev1.ContainerPort{{Name: "http-" + name, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
		Env:   env,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limCPU), corev1.ResourceMemory: resource.MustParse(limMem)},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/" + name, ReadOnly: true},
			{Name: apiVol, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		ReadinessProbe:           probe("/readyz", 5),
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
	}
	if probes > 1 {
		c.LivenessProbe = probe("/healthz", 10)
	}
	return c
}

// SetStatus fills p's status as a kubelet reports a running pod. at is the
// time of the report.
func SetStatus(p *corev1.Pod, i int, at time.Time) {
	t := metav1.NewTime(at.Truncate(time.Second))
	cond := func(ty corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: ty, Status: corev1.ConditionTrue, LastTransitionTime: t}
	}
	host := fmt.Sprintf("10.%d.%d.17", (i*7919)%numNodes/250, (i*7919)%numNodes%250)
	podIP := fmt.Sprintf("10.%d.%d.%d", 64+i/65536%64, i/256%256, i%256)
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond("PodReadyToStartContainers"), cond(corev1.PodInitialized), cond(corev1.PodReady),
			cond(corev1.ContainersReady), cond(corev1.PodScheduled),
		},
		HostIP:    host,
		HostIPs:   []corev1.HostIP{{IP: host}},
		PodIP:     podIP,
		PodIPs:    []corev1.PodIP{{IP: podIP}},
		StartTime: &t,
		QOSClass:  corev1.PodQOSBurstable,
	}
	for k, c := range p.Spec.Containers {
		started := true
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:        c.Name,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
			Ready:       true,
			Image:       c.Image,
			ImageID:     c.Image + "@sha256:" + hexOf(c.Image, 64),
			ContainerID: "containerd://" + hexOf(p.Name+strconv.Itoa(k), 64),
			Started:     &started,
		})
	}
}

// StatusPatch is the strategic merge patch a kubelet sends when a readiness
// probe result changes: the Ready condition's probe time and message.
// Patches with different seq differ, so none is a no-op (which would
// write nothing and send no event).
func StatusPatch(seq int, at time.Time) []byte {
	return fmt.Appendf(nil, `{"status":{"conditions":[{"type":"Ready","status":"True","lastProbeTime":%q,"message":"probe %d ok"}]}}`,
		at.UTC().Format(time.RFC3339), seq)
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}

func uuidOf(s string) string {
	h := hexOf(s, 32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

func ptr[T any](v T) *T { return &v }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
