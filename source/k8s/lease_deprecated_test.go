//lint:file-ignore SA1019 the deprecated names are what is tested

package k8s_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/lease"
)

// TestDeprecatedLeaseMembership: the names the lease membership had in
// this package still compile and reach package lease.
func TestDeprecatedLeaseMembership(t *testing.T) {
	require.Equal(t, lease.GroupLabel, k8s.LeaseGroupLabel)
	require.Equal(t, lease.ClaimsAnnotation, k8s.LeaseClaimsAnnotation)
	var opts k8s.LeaseMembershipOptions = lease.Options{Group: "g", Name: "pod-0"}
	_, err := k8s.NewLeaseMembership(opts)
	require.ErrorIs(t, err, informer.ErrInvalidOptions, "no Client")
	opts.Client = fake.NewClientset().CoordinationV1().Leases("ns")
	var m *lease.Membership
	m, err = k8s.NewLeaseMembership(opts)
	require.NoError(t, err)
	var _ *k8s.LeaseMembership = m
	require.Equal(t, "pod-0", m.Name())
}
