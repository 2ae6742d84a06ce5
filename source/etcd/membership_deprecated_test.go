//lint:file-ignore SA1019 the deprecated names are what is tested

package etcd_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/lease"
)

// TestDeprecatedMembership: the names the membership had in this package
// still compile and reach package lease.
func TestDeprecatedMembership(t *testing.T) {
	var opts etcd.MembershipOptions = lease.Options{Prefix: "/p/", Name: "a"}
	_, err := etcd.NewMembership(opts)
	require.ErrorIs(t, err, informer.ErrInvalidOptions, "no Client")
	opts.Client = client(t)
	var m *lease.Membership
	m, err = etcd.NewMembership(opts)
	require.NoError(t, err)
	var _ *etcd.Membership = m
	require.Equal(t, "a", m.Name())
}
