package slim_test

import (
	"encoding/json"
	"fmt"

	"github.com/ginformer/ginformer/source/k8s/k8stest/slim"
)

// A Pod decodes from a full pod's JSON (or protobuf), keeping only its
// fields; DeepCopyObject shares nothing mutable with the original.
func ExamplePod() {
	full := `{"metadata":{"name":"web-0","namespace":"shop","labels":{"app":"web"}},
		"spec":{"nodeName":"node-1","containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80}]}]},
		"status":{"phase":"Running","podIP":"10.0.0.7"}}`
	var p slim.Pod
	if err := json.Unmarshal([]byte(full), &p); err != nil {
		panic(err)
	}
	c := p.DeepCopyObject().(*slim.Pod)
	c.Labels["app"] = "changed"
	fmt.Println(p.Namespace+"/"+p.Name, p.Spec.NodeName, p.Spec.Containers[0].Image, p.Status.Phase, p.Labels["app"])
	// Output: shop/web-0 node-1 nginx:1.27 Running web
}
