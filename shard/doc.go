// Package shard splits a keyspace among the replicas of a program so that
// each caches and acts on a slice of it, and moves as little as possible
// when replicas come and go.
//
// # The space and its shards
//
// Every object is placed by a 64-bit hash of a string: [Hash], FNV-1a 64,
// the hash the Kubernetes apiserver's sharded list and watch (KEP-5866)
// applies to metadata.uid or metadata.namespace, where the client must agree
// with the server; [HashKey], FNV-1a 64 followed by a finalizer, where the
// client hashes by itself (etcd keys): FNV-1a alone puts keys that differ
// only in their last characters (web-1, web-2, …) into a few shards. The
// hash space is
// cut into a fixed number of virtual shards ([DefaultShards], 256),
// contiguous ranges of equal size ([ShardOf], [ShardRange]). A [Set] of
// shards renders as merged [Range] values and as an apiserver selector
// ([Selector]): shardRange(object.metadata.uid, '0x…', '0x…') terms joined
// by " || ".
//
// # Assignment
//
// [Assign] gives each shard to one live member by rendezvous hashing:
// deterministic from the member names alone, balanced within a stated
// bound, and minimal in movement (a join or a leave moves only the shards
// taken by or held by the changed member, about 1/N). See [Assignment].
//
// # Membership and ownership
//
// A [Membership] is implemented by a backend built on a system the users
// already run (etcd leases: lease.Membership in source/etcd/lease;
// Kubernetes coordination.k8s.io Leases: lease.Membership in
// source/k8s/lease): it registers this replica under a lease, keeps the
// lease alive, publishes the live members with the shards each holds, and records
// this member's holdings with a compare-and-swap against the view it was
// based on. An [Owner] runs the handoff rule on top of it, so that two
// replicas never both believe they own a key; see [Owner] for the rule and
// the exact guarantee with its timing assumptions.
//
// What a replica caches follows the assignment at once ([Owner.Slice]);
// what it acts on ([Owner.Owns]) follows the handoff. After a join a new
// owner's cache is usually filled by the time it may act; after a crash or
// a leave it is filled one relist after the shards are acquired, which the
// sharded sources' WaitLoaded waits for (see [Owner], "Timing").
package shard
