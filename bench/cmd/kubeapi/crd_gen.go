package main

import (
	"fmt"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/bench/internal/kubepods"
)

// The workloads' world: teams own workloads over namespaces (those of
// kubepods) and target clusters.
const (
	crdClusters = 40
	crdPerApp   = 8 // workloads of one application share its template
)

var crdComponents = []string{"api", "worker", "ingest", "scheduler", "reporter"}

// crdName is the namespace and name of workload i.
func crdName(i int) (ns, name string) {
	app := i / crdPerApp
	return kubepods.NamespaceName(app % kubepods.Namespaces),
		fmt.Sprintf("%s-%s-%d-%05d", kubepods.Teams[app%len(kubepods.Teams)], crdComponents[app%len(crdComponents)], app, i)
}

// newWorkload is workload i as its operator creates it: spec and
// metadata, no status (see setWorkloadStatus). Workloads of one
// application (crdPerApp of them) share most of their template, as the
// pods of a Deployment do. Every call returns a new object.
func newWorkload(i int) *workload {
	app := i / crdPerApp
	team := kubepods.Teams[app%len(kubepods.Teams)]
	comp := crdComponents[app%len(crdComponents)]
	ns, name := crdName(i)
	appName := fmt.Sprintf("%s-%s-%d", team, comp, app)
	version := fmt.Sprintf("v2.%d.%d", app%13, app%7)
	registry := "registry.example.com/" + team + "/"
	w := &workload{
		TypeMeta: metav1.TypeMeta{APIVersion: crdGroup + "/" + crdVersion, Kind: crdKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{
				"app.kubernetes.io/name":       appName,
				"app.kubernetes.io/component":  comp,
				"app.kubernetes.io/version":    version,
				"app.kubernetes.io/managed-by": "workload-operator",
				"team":                         team,
				"instance":                     strconv.Itoa(i),
			},
			Annotations: map[string]string{
				"workloads.bench.ginformer.io/revision":  strconv.Itoa(1 + i%9),
				"workloads.bench.ginformer.io/change-id": "CHG-" + strconv.Itoa(100000+app),
			},
		},
		Spec: workloadSpec{
			Owner:             team,
			Cluster:           fmt.Sprintf("cluster-%02d.%s.example.com", (i*7919)%crdClusters, []string{"eu-west-1", "us-east-1", "ap-south-1"}[i%3]),
			Replicas:          int32(2 + app%5),
			Priority:          ptrTo(int32(100 * (app % 4))),
			Template:          workloadTemplateOf(app, appName, version, registry, team),
			Rollout:           workloadRollout{Strategy: "Canary", MaxSurge: "25%", MaxUnavailable: "0", Steps: []rolloutStep{{Weight: 10, PauseSeconds: 300, Analysis: "error-rate"}, {Weight: 50, PauseSeconds: 600, Analysis: "latency-p99"}, {Weight: 100}}},
			ProviderConfigRef: objectRef{Name: team + "-provider", Namespace: "crossplane-system"},
			Parameters: &apiextensionsv1.JSON{Raw: fmt.Appendf(nil,
				`{"featureFlags":{"newCheckout":%t,"darkMode":false,"betaSearch":%t},"limits":{"qps":%d,"burst":%d},"owners":["%s-oncall@example.com","%s-lead@example.com"],"notes":"generated for workload %d"}`,
				i%2 == 0, i%3 == 0, 100+app%50, 200+app%50, team, team, i)},
		},
	}
	if i%2 == 0 {
		w.Spec.Schedule = &workloadSchedule{Cron: fmt.Sprintf("%d */6 * * *", i%60), TimeZone: "Europe/Berlin", ConcurrencyPolicy: "Forbid", StartingDeadlineSeconds: ptrTo(int64(120))}
	}
	return w
}

// workloadTemplateOf is the template of application app: five
// containers, three volumes, a node selector and tolerations.
func workloadTemplateOf(app int, appName, version, registry, team string) workloadTemplate {
	cs := []workloadContainer{
		crdContainer("app", registry+appName+":"+version, 8080, "500m", "512Mi", "2", "1Gi", []envVar{
			{Name: "LOG_LEVEL", Value: "info"},
			{Name: "APP_NAME", Value: appName},
			{Name: "DATABASE_URL", ValueFrom: &envSource{SecretKeyRef: &keyRef{Name: appName + "-db", Key: "url"}}},
			{Name: "POD_NAME", ValueFrom: &envSource{FieldPath: "metadata.name"}},
			{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability:4317"},
		}),
		crdContainer("migrate", registry+appName+"-migrate:"+version, 0, "100m", "128Mi", "500m", "256Mi", []envVar{
			{Name: "DATABASE_URL", ValueFrom: &envSource{SecretKeyRef: &keyRef{Name: appName + "-db", Key: "url"}}},
		}),
		crdContainer("proxy", "docker.io/envoyproxy/envoy:v1.36.2", 15090, "100m", "128Mi", "1", "512Mi", []envVar{
			{Name: "ENVOY_UID", Value: "0"},
			{Name: "NODE_NAME", ValueFrom: &envSource{FieldPath: "spec.nodeName"}},
		}),
		crdContainer("logs", "docker.io/fluent/fluent-bit:4.0.3", 2020, "50m", "64Mi", "200m", "128Mi", []envVar{
			{Name: "HOST_NAME", ValueFrom: &envSource{FieldPath: "spec.nodeName"}},
		}),
		crdContainer("metrics", "quay.io/prometheus/statsd-exporter:v0.28.0", 9102, "20m", "32Mi", "100m", "64Mi", []envVar{}),
	}
	cs[0].VolumeMounts = append(cs[0].VolumeMounts, volumeMount{Name: "scratch", MountPath: "/tmp"})
	cs[1].Command = []string{"/bin/migrate"}
	cs[1].Args = []string{"--dir=/migrations", "--timeout=5m", "up"}
	cs[0].Args = []string{"--config=/etc/app/config.yaml", "--listen=:8080", "--shutdown-grace=30s"}
	return workloadTemplate{
		Metadata: templateMeta{
			Labels:      map[string]string{"app.kubernetes.io/name": appName, "team": team, "sidecar.istio.io/inject": "false"},
			Annotations: map[string]string{"prometheus.io/scrape": "true"},
		},
		ServiceAccountName: appName,
		NodeSelector:       map[string]string{"kubernetes.io/os": "linux", "node.kubernetes.io/pool": []string{"general", "compute", "memory"}[app%3]},
		Containers:         cs,
		Volumes: []workloadVolume{
			{Name: "config", ConfigMap: &objectRef{Name: appName + "-config"}},
			{Name: "tls", Secret: &secretVolume{SecretName: appName + "-tls", DefaultMode: ptrTo(int32(0o440))}},
			{Name: "scratch", EmptyDir: &emptyDirVolume{SizeLimit: ptrTo(resource.MustParse("1Gi"))}},
		},
		Tolerations: []toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: ptrTo(int64(300))},
			{Key: "dedicated", Operator: "Equal", Effect: "NoSchedule"},
		},
	}
}

// crdContainer is a container with env, a port (none if port is 0),
// requests and limits, a mount and, with a port, a probe.
func crdContainer(name, image string, port int32, reqCPU, reqMem, limCPU, limMem string, env []envVar) workloadContainer {
	c := workloadContainer{
		Name:  name,
		Image: image,
		Env:   env,
		Resources: resources{
			Requests: map[string]resource.Quantity{"cpu": resource.MustParse(reqCPU), "memory": resource.MustParse(reqMem)},
			Limits:   map[string]resource.Quantity{"cpu": resource.MustParse(limCPU), "memory": resource.MustParse(limMem)},
		},
		VolumeMounts: []volumeMount{
			{Name: "config", MountPath: "/etc/" + name, ReadOnly: true},
		},
	}
	if port != 0 {
		c.Ports = []containerPort{{Name: "http-" + name, ContainerPort: port, Protocol: "TCP"}}
		c.Probe = &probe{Path: "/healthz", Port: port, PeriodSeconds: 10, TimeoutSeconds: 1, FailureThreshold: 3}
	}
	return c
}

// setWorkloadStatus fills w's status as its controller reports a running
// workload at time at.
func setWorkloadStatus(w *workload, at time.Time) {
	t := metav1.NewTime(at.Truncate(time.Second))
	cond := func(ty, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: ty, Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: t, Reason: reason, Message: msg}
	}
	w.Status = workloadStatus{
		ObservedGeneration: 1,
		Phase:              "Running",
		Replicas:           w.Spec.Replicas,
		ReadyReplicas:      w.Spec.Replicas,
		Message:            "all replicas ready",
		LastProbe:          &t,
		Conditions: []metav1.Condition{
			cond("Ready", "AllReplicasReady", fmt.Sprintf("%d of %d replicas are ready", w.Spec.Replicas, w.Spec.Replicas)),
			cond("Synced", "ReconcileSuccess", "the workload's resources match its spec"),
		},
		Endpoints: []endpoint{
			{Name: "http", URL: fmt.Sprintf("http://%s.%s.svc:8080", w.Name, w.Namespace)},
		},
	}
}

// workloadStatusPatch is the JSON merge patch its controller sends when a
// probe runs: the status's probe time and message. Patches with different
// seq differ, so none is a no-op.
func workloadStatusPatch(seq int, at time.Time) []byte {
	return fmt.Appendf(nil, `{"status":{"lastProbe":%q,"message":"probe %d ok"}}`, at.UTC().Format(time.RFC3339), seq)
}

func ptrTo[T any](v T) *T { return &v }
