package etcd

import "github.com/ginformer/ginformer/source/etcd/lease"

// The membership moved to package [lease]; these names remain for a
// deprecation period (docs/etcd.md) and will then be removed.

// MembershipOptions is [lease.Options].
//
// Deprecated: use lease.Options.
type MembershipOptions = lease.Options

// Membership is [lease.Membership].
//
// Deprecated: use lease.Membership.
type Membership = lease.Membership

// NewMembership is [lease.New].
//
// Deprecated: use lease.New.
func NewMembership(opts MembershipOptions) (*Membership, error) {
	return lease.New(opts)
}
