// Package lease is a [shard.Membership] on etcd leases: the replicas of a
// sharded program register, keep their leases alive and claim shards with
// transactions under one key prefix ([Membership], made by [New];
// [shard.NewOwner] runs it). It does not use the etcd source, and the
// source does not use it: a sharded source takes its slices from any
// [shard.Owner]. It is named as the Kubernetes one is
// (source/k8s/lease), which is built on coordination.k8s.io Leases.
//
// It was part of package etcd (etcd.Membership, etcd.NewMembership,
// etcd.MembershipOptions); those names remain there as deprecated aliases
// for a deprecation period.
package lease
