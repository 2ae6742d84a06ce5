package k8s

import "github.com/ginformer/ginformer/source/k8s/lease"

// The lease membership moved to package [lease]; these names remain for a
// deprecation period (docs/k8s.md) and will then be removed.

const (
	// LeaseGroupLabel is [lease.GroupLabel].
	//
	// Deprecated: use lease.GroupLabel.
	LeaseGroupLabel = lease.GroupLabel
	// LeaseClaimsAnnotation is [lease.ClaimsAnnotation].
	//
	// Deprecated: use lease.ClaimsAnnotation.
	LeaseClaimsAnnotation = lease.ClaimsAnnotation
)

// LeaseMembershipOptions is [lease.Options].
//
// Deprecated: use lease.Options.
type LeaseMembershipOptions = lease.Options

// LeaseMembership is [lease.Membership].
//
// Deprecated: use lease.Membership.
type LeaseMembership = lease.Membership

// NewLeaseMembership is [lease.New].
//
// Deprecated: use lease.New.
func NewLeaseMembership(opts LeaseMembershipOptions) (*LeaseMembership, error) {
	return lease.New(opts)
}
