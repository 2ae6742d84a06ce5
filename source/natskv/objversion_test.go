package natskv_test

import (
	"testing"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
	"github.com/stretchr/testify/assert"
)

func TestObjectVersion(t *testing.T) {
	var src *natskv.Source[obj] // ObjectVersion reads only the object
	var ov informer.ObjectVersioner[*natskv.Object[obj]] = src
	assert.Equal(t, "42", ov.ObjectVersion(&natskv.Object[obj]{Key: "k", Revision: 42}))
	assert.Equal(t, "", ov.ObjectVersion(&natskv.Object[obj]{Key: "k"}), "no revision")
	assert.Equal(t, "", ov.ObjectVersion(nil))
}
