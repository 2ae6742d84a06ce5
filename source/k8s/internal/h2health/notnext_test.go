//go:build !clientgo_next

package h2health_test

const clientgoNext = false
