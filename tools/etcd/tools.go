//go:build tools

// Package tools pins the etcd server version that scripts/etcd-binary.sh
// builds: `go build go.etcd.io/etcd/server/v3` from this module. It is not
// in go.work, so it does not slow the workspace's builds and tests.
package tools

import _ "go.etcd.io/etcd/server/v3"
