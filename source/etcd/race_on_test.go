//go:build race

package etcd_test

// raceDetector is true when the tests run with -race: real-server timings
// are then several times slower (a relist of 3000 keys took 1–3 s on the
// shared 2-core machine), so the tests that measure them only log them.
const raceDetector = true
