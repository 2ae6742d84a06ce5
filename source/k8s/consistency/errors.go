package consistency

import "errors"

// ErrStale is wrapped by the error of a read ([Writer.Get], [Writer.List],
// [Writer.WaitForWrites]) whose wait reached its bound ([Options.MaxWait],
// [MaxWait]) before the cache showed the writer's writes: the read still
// returns the cache's answer, which may not include them.
var ErrStale = errors.New("consistency: the cache has not caught up with the writes")

// errBound is the cause of a wait's context when its bound expires.
var errBound = errors.New("consistency: wait bound reached")
