package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/ginformer/ginformer/source/etcd"
)

// svc is the value stored under every key: a service record of about 1 KB
// of JSON (what a registry or a controller keeps in etcd), decoded into
// maps, slices and nested structs like a real one. It is the value of the
// etcd source's own benchmarks (source/etcd/benchvalue_test.go) with one
// more annotation, the time a write was sent, which the throughput phase
// reads back in the handler.
type svc struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	UID         string            `json:"uid"`
	Generation  int64             `json:"generation"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Spec        svcSpec           `json:"spec"`
	Status      svcStatus         `json:"status"`
}

type svcSpec struct {
	Image    string    `json:"image"`
	Replicas int       `json:"replicas"`
	Ports    []svcPort `json:"ports"`
	Env      []svcEnv  `json:"env"`
	CPU      string    `json:"cpu"`
	Memory   string    `json:"memory"`
}

type svcPort struct {
	Name     string `json:"name"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
}

type svcEnv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type svcStatus struct {
	Phase         string    `json:"phase"`
	ReadyReplicas int       `json:"readyReplicas"`
	Conditions    []svcCond `json:"conditions"`
}

type svcCond struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Since   string `json:"since"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// sentAnnotation holds the Unix nanoseconds at which the write of a value
// was sent ("0" outside the throughput phase).
const sentAnnotation = "bench.example.com/sent-unix-nano"

// codec is the etcd source's codec for svc, used by the writers and by
// the children's sources alike (the default, encoding/json).
var codec etcd.JSONCodec[svc]

// newSvc returns the i-th value at generation gen, sent at sent (Unix ns).
func newSvc(i int, gen, sent int64) svc {
	ns := fmt.Sprintf("team-%02d", i%40)
	name := fmt.Sprintf("svc-%07d", i)
	return svc{
		Name: name, Namespace: ns, UID: fmt.Sprintf("6f1c2a9e-%04x-4b7d-9c1e-%012x", i%65536, i), Generation: gen,
		Labels: map[string]string{
			"app": name, "team": ns, "tier": []string{"frontend", "backend", "data"}[i%3],
			"region": []string{"eu-west-1", "us-east-2", "ap-south-1"}[i%3],
		},
		Annotations: map[string]string{
			"deploy.example.com/revision": strconv.FormatInt(gen, 10),
			"deploy.example.com/change":   "release pipeline",
			sentAnnotation:                strconv.FormatInt(sent, 10),
		},
		Spec: svcSpec{
			Image: fmt.Sprintf("registry.example.com/%s/%s:v1.%d.%d", ns, name, i%17, gen), Replicas: 1 + i%5,
			Ports: []svcPort{{"http", 8080, "TCP"}, {"grpc", 9090, "TCP"}, {"metrics", 9100, "TCP"}},
			Env: []svcEnv{
				{"LOG_LEVEL", "info"}, {"DB_HOST", "db." + ns + ".svc.cluster.local"},
				{"UPSTREAM", "https://api.example.com/v1"},
			},
			CPU: "500m", Memory: "512Mi",
		},
		Status: svcStatus{
			Phase: "Running", ReadyReplicas: 1 + i%5,
			Conditions: []svcCond{
				{"Available", "True", "2026-11-20T10:00:00Z", "MinimumReplicasAvailable", "Deployment has minimum availability."},
			},
		},
	}
}

// svcKey is the etcd key of the i-th value under prefix.
func svcKey(prefix string, i int) string { return fmt.Sprintf("%ssvc-%07d", prefix, i) }

// byTeam is the informer's index: the value's namespace.
func byTeam(dst []string, v svc) ([]string, error) { return append(dst, v.Namespace), nil }

// digest summarizes a set of objects independently of their order: the
// count and the sum of a hash of each object's key, revisions and value
// (re-encoded as JSON, so that a value decoded from etcd's bytes and one
// restored from a snapshot compare equal when they are equal).
type digest struct {
	Objects int    `json:"objects"`
	Sum     uint64 `json:"sum"`
}

// add adds one object to d.
func (d *digest) add(key string, mod, create int64, v svc) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	_, _ = fmt.Fprintf(h, "\x00%d\x00%d\x00", mod, create)
	_, _ = h.Write(b)
	d.Objects++
	d.Sum += h.Sum64()
	return nil
}
