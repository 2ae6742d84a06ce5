package main

import (
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The custom resource of the -crd mode: Workload in group
// bench.ginformer.io, version v1, namespaced, with a status subresource.
const (
	crdGroup    = "bench.ginformer.io"
	crdVersion  = "v1"
	crdKind     = "Workload"
	crdResource = "workloads"
)

// crdGVR is the resource the -crd mode serves and lists.
var crdGVR = schema.GroupVersionResource{Group: crdGroup, Version: crdVersion, Resource: crdResource}

// workload is a realistic custom resource, shaped like an operator's
// workload (an Argo Workflow's or a Crossplane composite's weight): a spec
// of nested structs with five container-like entries (env, ports,
// resources as resource.Quantity, mounts, a probe), volumes, a template's
// labels and annotations, a rollout strategy, free-form parameters
// (apiextensionsv1.JSON, preserved unknown fields in the schema), and a
// status with metav1.Condition conditions written by a second field
// manager. crdSchema derives the CRD's structural schema from these types.
type workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              workloadSpec   `json:"spec"`
	Status            workloadStatus `json:"status,omitempty"`
}

type workloadSpec struct {
	Owner    string `json:"owner"`
	Cluster  string `json:"cluster"`
	Replicas int32  `json:"replicas"`
	Paused   bool   `json:"paused,omitempty"`
	Priority *int32 `json:"priority,omitempty"`
	// Schedule is set on about half of the objects.
	Schedule          *workloadSchedule     `json:"schedule,omitempty"`
	Template          workloadTemplate      `json:"template"`
	Rollout           workloadRollout       `json:"rollout"`
	ProviderConfigRef objectRef             `json:"providerConfigRef"`
	Parameters        *apiextensionsv1.JSON `json:"parameters,omitempty"`
}

type workloadSchedule struct {
	Cron                    string `json:"cron"`
	TimeZone                string `json:"timeZone,omitempty"`
	ConcurrencyPolicy       string `json:"concurrencyPolicy,omitempty"`
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
}

type workloadTemplate struct {
	Metadata           templateMeta        `json:"metadata"`
	ServiceAccountName string              `json:"serviceAccountName,omitempty"`
	NodeSelector       map[string]string   `json:"nodeSelector,omitempty"`
	Containers         []workloadContainer `json:"containers"`
	Volumes            []workloadVolume    `json:"volumes,omitempty"`
	Tolerations        []toleration        `json:"tolerations,omitempty"`
}

type templateMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type workloadContainer struct {
	Name         string          `json:"name"`
	Image        string          `json:"image"`
	Command      []string        `json:"command,omitempty"`
	Args         []string        `json:"args,omitempty"`
	Env          []envVar        `json:"env,omitempty"`
	Ports        []containerPort `json:"ports,omitempty"`
	Resources    resources       `json:"resources"`
	VolumeMounts []volumeMount   `json:"volumeMounts,omitempty"`
	Probe        *probe          `json:"probe,omitempty"`
}

type envVar struct {
	Name      string     `json:"name"`
	Value     string     `json:"value,omitempty"`
	ValueFrom *envSource `json:"valueFrom,omitempty"`
}

type envSource struct {
	SecretKeyRef *keyRef `json:"secretKeyRef,omitempty"`
	FieldPath    string  `json:"fieldPath,omitempty"`
}

type keyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

type containerPort struct {
	Name          string `json:"name"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
}

type resources struct {
	Requests map[string]resource.Quantity `json:"requests,omitempty"`
	Limits   map[string]resource.Quantity `json:"limits,omitempty"`
}

type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type probe struct {
	Path             string `json:"path"`
	Port             int32  `json:"port"`
	PeriodSeconds    int32  `json:"periodSeconds,omitempty"`
	TimeoutSeconds   int32  `json:"timeoutSeconds,omitempty"`
	FailureThreshold int32  `json:"failureThreshold,omitempty"`
}

type workloadVolume struct {
	Name      string          `json:"name"`
	ConfigMap *objectRef      `json:"configMap,omitempty"`
	Secret    *secretVolume   `json:"secret,omitempty"`
	EmptyDir  *emptyDirVolume `json:"emptyDir,omitempty"`
}

type secretVolume struct {
	SecretName  string `json:"secretName"`
	DefaultMode *int32 `json:"defaultMode,omitempty"`
}

type emptyDirVolume struct {
	Medium    string             `json:"medium,omitempty"`
	SizeLimit *resource.Quantity `json:"sizeLimit,omitempty"`
}

type toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

type workloadRollout struct {
	Strategy       string        `json:"strategy"`
	MaxSurge       string        `json:"maxSurge,omitempty"`
	MaxUnavailable string        `json:"maxUnavailable,omitempty"`
	Steps          []rolloutStep `json:"steps,omitempty"`
}

type rolloutStep struct {
	Weight       int32  `json:"weight"`
	PauseSeconds int32  `json:"pauseSeconds,omitempty"`
	Analysis     string `json:"analysis,omitempty"`
}

type objectRef struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

type workloadStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Phase              string             `json:"phase,omitempty"`
	Replicas           int32              `json:"replicas,omitempty"`
	ReadyReplicas      int32              `json:"readyReplicas,omitempty"`
	Message            string             `json:"message,omitempty"`
	LastProbe          *metav1.Time       `json:"lastProbe,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Endpoints          []endpoint         `json:"endpoints,omitempty"`
}

type endpoint struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// workloadList is the list type client-go's REST client decodes a LIST
// into.
type workloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []workload `json:"items"`
}

// workloadSlim is what a typical controller of workloads reads: the
// metadata, the cluster, the containers' names and images and the phase.
// Both libraries cache it in the projection rows: ginformer decodes it
// straight from the wire (NewForConfig[workloadSlim]), client-go's
// projecting transform builds it from the decoded workload.
type workloadSlim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Cluster  string `json:"cluster"`
		Template struct {
			Containers []slimContainer `json:"containers"`
		} `json:"template"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase,omitempty"`
	} `json:"status,omitempty"`
}

type slimContainer struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// DeepCopyObject makes workload a runtime.Object. Neither library calls
// it while syncing, so a JSON round trip serves (a generated DeepCopy
// would be faster).
func (w *workload) DeepCopyObject() runtime.Object { return jsonCopy(w) }

// DeepCopyObject makes workloadList a runtime.Object.
func (l *workloadList) DeepCopyObject() runtime.Object { return jsonCopy(l) }

// DeepCopyObject makes workloadSlim a runtime.Object.
func (w *workloadSlim) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.Template.Containers = append(c.Spec.Template.Containers[:0:0], w.Spec.Template.Containers...)
	return &c
}

// jsonCopy is a deep copy of v through JSON.
func jsonCopy[T any, P interface {
	*T
	runtime.Object
}](v P) runtime.Object {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the types marshal by construction
	}
	c := P(new(T))
	if err := json.Unmarshal(b, c); err != nil {
		panic(err)
	}
	return c
}

// crdFielder is what the handler and the cluster index read of a cached
// object, whichever type the informer caches.
type crdFielder interface {
	crdFields() podFields
}

func (w *workload) crdFields() podFields {
	return podFields{node: w.Spec.Cluster, labels: w.Labels, rv: w.ResourceVersion}
}

func (w *workloadSlim) crdFields() podFields {
	return podFields{node: w.Spec.Cluster, labels: w.Labels, rv: w.ResourceVersion}
}

// slimWorkload is client-go's projecting transform: a new workloadSlim
// with w's metadata (without managedFields), cluster, containers' names
// and images, and phase.
func slimWorkload(w *workload) *workloadSlim {
	s := &workloadSlim{TypeMeta: w.TypeMeta, ObjectMeta: w.ObjectMeta}
	s.ManagedFields = nil
	s.Spec.Cluster = w.Spec.Cluster
	s.Spec.Template.Containers = make([]slimContainer, len(w.Spec.Template.Containers))
	for i, c := range w.Spec.Template.Containers {
		s.Spec.Template.Containers[i] = slimContainer{Name: c.Name, Image: c.Image}
	}
	s.Status.Phase = w.Status.Phase
	return s
}
