package k8s

import (
	"context"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
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
// It returns false if the server refused the selector (then it must not be
// sent); another failure leaves the mode as it was.
func (s *Sharded[T]) probe(ctx context.Context, sl shard.Slice, sel string) bool {
	_, meta, err := s.src.listPage(ctx, informer.ListOptions{Limit: 1}, sel)
	if err != nil {
		if s.refusedSelector(sl, sel, err) {
			return false
		}
		s.log.V(1).Info("shard filter probe failed; mode unchanged", "mode", s.Mode(), "err", err)
		return true
	}
	s.checkEcho(sel, meta, "probe list")
	return true
}

// refusedSelector reports whether err is the apiserver's refusal of
// selector sel, sent for slice sl; if so, the selector is not sent again
// until the slice changes, and the mode turns to client.
func (s *Sharded[T]) refusedSelector(sl shard.Slice, sel string, err error) bool {
	if sel == "" || !isSelectorRefusal(err) {
		return false
	}
	s.mu.Lock()
	if s.selGen == sl.Gen {
		s.refused = true
	}
	s.mu.Unlock()
	s.setMode(FilterClient, "the apiserver refused the shard selector ("+err.Error()+
		"); filtering on the client until the slice changes")
	return true
}

// isSelectorRefusal reports whether err is a 400, 422 or 500 whose
// message names the shard selector (v1.37 answers "invalid shard selector:
// …").
func isSelectorRefusal(err error) bool {
	if !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) && !apierrors.IsInternalError(err) &&
		statusCode(err) != http.StatusInternalServerError {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "shard selector") || strings.Contains(msg, "shardselector") || strings.Contains(msg, "shardrange")
}

// setMode records m and logs the change, if it is one.
func (s *Sharded[T]) setMode(m FilterMode, why string) {
	if old := FilterMode(s.mode.Swap(int32(m))); old != m {
		s.log.Info("shard filter mode changed", "mode", m, "was", old, "reason", why)
	}
}
