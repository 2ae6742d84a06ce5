package sourcekit

// DefaultWatchBuffer is the number of events a watch buffers when a source's
// Options leave WatchBuffer zero.
const DefaultWatchBuffer = 100

// WatchBuffer returns the buffer size a source's Options.WatchBuffer asks
// for: [DefaultWatchBuffer] when n is zero, no buffer (0) when n is
// negative, n otherwise.
func WatchBuffer(n int) int {
	if n == 0 {
		return DefaultWatchBuffer
	}
	return max(n, 0)
}
