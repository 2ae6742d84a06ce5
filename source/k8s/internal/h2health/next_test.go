//go:build clientgo_next

package h2health_test

// clientgoNext is true in the build against the next client-go
// (scripts/clientgo-next.sh).
const clientgoNext = true
