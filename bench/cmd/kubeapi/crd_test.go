package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// TestWorkloadRoundTrip checks that a workload with its status survives
// JSON (encoding/json, and the scheme's codecs client-go's REST client
// decodes with) unchanged, that its slim form reads the same fields as
// client-go's projecting transform, and that its size as served (its JSON
// plus an estimate of the managedFields of its two managers) is about
// 10 KB.
func TestWorkloadRoundTrip(t *testing.T) {
	codecs := serializer.NewCodecFactory(crdScheme())
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	for _, i := range []int{0, 1, 7, 12345, 19999} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			w := newWorkload(i)
			setWorkloadStatus(w, time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC))
			want, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			var back workload
			if err := json.Unmarshal(want, &back); err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(&back); !bytes.Equal(got, want) {
				t.Errorf("encoding/json round trip differs:\n got %s\nwant %s", got, want)
			}
			obj, _, err := info.Serializer.Decode(want, nil, &workload{})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(obj); !bytes.Equal(got, want) {
				t.Errorf("scheme codec round trip differs:\n got %s\nwant %s", got, want)
			}
			if got, _ := json.Marshal(w.DeepCopyObject()); !bytes.Equal(got, want) {
				t.Errorf("DeepCopyObject differs:\n got %s\nwant %s", got, want)
			}
			var slim workloadSlim
			if err := json.Unmarshal(want, &slim); err != nil {
				t.Fatal(err)
			}
			if fromTransform := slimWorkload(&back); !reflect.DeepEqual(&slim, fromTransform) {
				t.Errorf("slim decode %+v, slim transform %+v", slim, *fromTransform)
			}
			served := len(want) + managedFieldsEstimate(t, w)
			if served < 9000 || served > 12000 {
				t.Errorf("workload %d: about %d B as served (%d B of JSON), want about 10 KB", i, served, len(want))
			}
			t.Logf("workload %d: %d B JSON, about %d B as served", i, len(want), served)
		})
	}
}

// managedFieldsEstimate is about the size of the managedFields the server
// keeps for w: the operator's fields (metadata labels and annotations,
// spec) and the controller's (status), each in the FieldsV1 form
// server-side apply writes, map lists keyed as crdSchema keys them.
func managedFieldsEstimate(t *testing.T, w *workload) int {
	t.Helper()
	toMap := func(v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	meta := map[string]any{"labels": w.Labels, "annotations": w.Annotations}
	operator := map[string]any{"f:metadata": fieldSet(toMap(meta)), "f:spec": fieldSet(toMap(w.Spec))}
	controller := map[string]any{"f:status": fieldSet(toMap(w.Status))}
	entry := func(manager, sub string, fields map[string]any) map[string]any {
		e := map[string]any{"manager": manager, "operation": "Update", "apiVersion": crdGroup + "/" + crdVersion,
			"time": "2026-11-28T19:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields}
		if sub != "" {
			e["subresource"] = sub
		}
		return e
	}
	b, err := json.Marshal(map[string]any{"managedFields": []any{
		entry(fieldManagerCreate, "", operator), entry(fieldManagerStatus, "status", controller),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return len(b) - len(`{"managedFields":}`) + len(`,"managedFields":`)
}

// fieldSet is the FieldsV1 set of the fields of m: "f:name" per field,
// "k:{...}" per entry of a list of objects with a name or type, "." for
// an entry itself; other lists are atomic.
func fieldSet(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out["f:"+k] = fieldValue(v)
	}
	return out
}

func fieldValue(v any) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		s := fieldSet(v)
		s["."] = map[string]any{}
		return s
	case []any:
		s := map[string]any{}
		for _, e := range v {
			o, ok := e.(map[string]any)
			if !ok {
				return map[string]any{}
			}
			for _, key := range []string{"name", "type"} {
				if kv, ok := o[key]; ok {
					b, _ := json.Marshal(map[string]any{key: kv})
					es := fieldSet(o)
					es["."] = map[string]any{}
					s["k:"+string(b)] = es
					break
				}
			}
		}
		return s
	}
	return map[string]any{}
}

// TestWorkloadCRDSchema checks the derived schema's shape: map lists
// where entries have a name or a type (with the key required), the
// parameters preserved as unknown fields, quantities int-or-string.
func TestWorkloadCRDSchema(t *testing.T) {
	crd := workloadCRD()
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec := s.Properties["spec"]
	containers := spec.Properties["template"].Properties["containers"]
	if containers.XListType == nil || *containers.XListType != "map" || !reflect.DeepEqual(containers.XListMapKeys, []string{"name"}) {
		t.Errorf("containers: list type %v keys %v, want a map list keyed by name", containers.XListType, containers.XListMapKeys)
	}
	if !strings.Contains(strings.Join(containers.Items.Schema.Required, ","), "name") {
		t.Errorf("containers' items require %v, want name among them", containers.Items.Schema.Required)
	}
	conds := s.Properties["status"].Properties["conditions"]
	if !reflect.DeepEqual(conds.XListMapKeys, []string{"type"}) {
		t.Errorf("conditions keyed by %v, want type", conds.XListMapKeys)
	}
	if p := spec.Properties["parameters"]; p.XPreserveUnknownFields == nil || !*p.XPreserveUnknownFields || p.Type != "" {
		t.Errorf("parameters: %+v, want preserved unknown fields", p)
	}
	cpu := containers.Items.Schema.Properties["resources"].Properties["limits"].AdditionalProperties.Schema
	if !cpu.XIntOrString {
		t.Errorf("limits' values: %+v, want int-or-string", cpu)
	}
	if steps := spec.Properties["rollout"].Properties["steps"]; steps.XListType != nil {
		t.Errorf("rollout steps: list type %q, want atomic", *steps.XListType)
	}
}

// TestCRDSmoke runs the -crd mode small: 200 workloads, one run per
// column, 50 updates. It needs a kube-apiserver (KUBEBUILDER_ASSETS).
// Every child must sync (run fails otherwise) and see only updates the
// parent wrote; how many it sees before its 30 s grace runs out depends
// on how starved the machine is, so that is not asserted.
func TestCRDSmoke(t *testing.T) {
	if os.Getenv(k8stest.AssetsEnv) == "" {
		t.Skip(k8stest.ErrNoAssets)
	}
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var out strings.Builder
	rep, err := runCRD(ctx, config{CRD: true, Pods: 200, Runs: 1, Updates: 50, Writers: 16, UpdateWriters: 8,
		Timeout: 3 * time.Minute, Exe: os.Args[0]}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, p := range crdParticipants(config{}) {
		ms := rep.results[p.name]
		if len(ms) != 1 {
			t.Fatalf("%s: %d results, want 1", p.name, len(ms))
		}
		if m := ms[0]; m.seen == 0 || m.matched != m.seen {
			t.Errorf("%s: watch phase saw %d updates, %d of them written by the test; want some, all written by the test", p.name, m.seen, m.matched)
		}
	}
	if rep.jsonSize < 9000 || rep.jsonSize > 12000 {
		t.Errorf("served workload: %.0f B JSON, want about 10 KB", rep.jsonSize)
	}
	if !strings.Contains(out.String(), "| heap kept per cached object | B |") {
		t.Errorf("report has no per-object heap row:\n%s", out.String())
	}
}
