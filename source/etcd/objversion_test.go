package etcd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
)

func TestObjectVersion(t *testing.T) {
	var src *etcd.Source[obj] // ObjectVersion reads only the object
	var ov informer.ObjectVersioner[*etcd.Object[obj]] = src
	assert.Equal(t, "42", ov.ObjectVersion(&etcd.Object[obj]{Key: "k", ModRevision: 42}))
	assert.Equal(t, "", ov.ObjectVersion(&etcd.Object[obj]{Key: "k"}), "no revision")
	assert.Equal(t, "", ov.ObjectVersion(nil))
}
