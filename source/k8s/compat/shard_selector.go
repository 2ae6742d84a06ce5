//go:build !clientgo_next

package compat

import "k8s.io/client-go/tools/cache"

// shardLW is the ListerWatcher an [Informer]'s source lists and watches
// through. Against client-go v0.37, which has no shard selectors, it is the
// caller's own; the build of scripts/clientgo-next.sh (tag clientgo_next,
// client-go v0.38) has one that [Informer.SetShardSelector] can point at a
// shard (shard_selector_next.go).
type shardLW = cache.ListerWatcher

// newShardLW returns the ListerWatcher of an informer over lw: lw itself.
func newShardLW(lw cache.ListerWatcher) shardLW { return lw }
