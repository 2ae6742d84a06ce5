// Package lease is a [shard.Membership] on coordination.k8s.io/v1 Leases:
// the replicas of a sharded program that talk to a Kubernetes apiserver
// register, renew and claim shards through it ([Membership], made by
// [New]; [shard.NewOwner] runs it). It does not use the k8s source, and
// the source does not use it: a sharded source takes its slices from any
// [shard.Owner].
//
// It was part of package k8s (k8s.LeaseMembership,
// k8s.NewLeaseMembership, k8s.LeaseMembershipOptions, k8s.LeaseGroupLabel,
// k8s.LeaseClaimsAnnotation); those names remain there as deprecated
// aliases for a deprecation period.
package lease
