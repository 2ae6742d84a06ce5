//go:build tools

// Package tools pins k8s.io/kubernetes so that
// scripts/kube-apiserver-binary.sh can build cmd/kube-apiserver from the Go
// module proxy. This module is not part of go.work.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
