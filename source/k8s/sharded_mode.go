package k8s

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ginformer/ginformer/informer"
)

// echoedSelector returns the shardInfo.selector of a list response, and
// whether it had one: typed and metadata lists carry it in ListMeta,
// unstructured lists in their metadata map.
func echoedSelector(l metav1.ListInterface) (string, bool) {
	switch l := l.(type) {
	case metav1.ShardedListInterface:
		if info := l.GetShardInfo(); info != nil {
			return info.Selector, true
		}
		return "", false
	case *unstructured.UnstructuredList:
		sel, ok, err := unstructured.NestedString(l.Object, "metadata", "shardInfo", "selector")
		return sel, ok && err == nil
	}
	return "", false
}

// checkEcho sets the mode from a list response to selector sel: server if
// the apiserver echoed sel in shardInfo, client otherwise.
func (s *Sharded[T]) checkEcho(sel string, meta metav1.ListInterface, via string) {
	echo, ok := echoedSelector(meta)
	switch {
	case ok && echo == sel:
		s.setMode(FilterServer, "the apiserver applies the shard selector (shardInfo echoed on a "+via+")")
	case ok:
		// The server filtered by something else than what was asked:
		// keep filtering on the client, say so.
		s.setMode(FilterClient, "the apiserver echoed another shard selector ("+echo+") on a "+via)
	default:
		s.setMode(FilterClient, "the apiserver ignored the shard selector (no shardInfo on a "+via+
			"): feature gate ShardedListAndWatch off or a server older than v1.36; filtering on the client")
	}
}

// probe checks for server-side filtering before a streaming list, whose
// events carry no list metadata: a list of one object with the selector.
// A failed probe leaves the mode as it was.
func (s *Sharded[T]) probe(ctx context.Context, sel string) {
	_, meta, err := s.src.listPage(ctx, informer.ListOptions{Limit: 1}, sel)
	if err != nil {
		s.log.V(1).Info("shard filter probe failed; mode unchanged", "mode", s.Mode(), "err", err)
		return
	}
	s.checkEcho(sel, meta, "probe list")
}

// setMode records m and logs the change, if it is one.
func (s *Sharded[T]) setMode(m FilterMode, why string) {
	if old := FilterMode(s.mode.Swap(int32(m))); old != m {
		s.log.Info("shard filter mode changed", "mode", m, "was", old, "reason", why)
	}
}
