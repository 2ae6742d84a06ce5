package keepalive

import (
	"cmp"
	"slices"

	"github.com/ginformer/ginformer/shard"
)

// Changes is the channel a membership's Current returns: closed when a
// newer view is available, then replaced. The membership's lock guards
// it. The zero value is ready to use.
type Changes struct {
	ch chan struct{}
}

// C returns the channel the next [Changes.Publish] closes.
func (c *Changes) C() <-chan struct{} {
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// Publish tells the holders of the channel [Changes.C] returned that the
// view changed.
func (c *Changes) Publish() {
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// SortMembers sorts the members of a view by name, as [shard.View]
// requires.
func SortMembers(ms []shard.Member) {
	slices.SortFunc(ms, func(a, b shard.Member) int { return cmp.Compare(a.Name, b.Name) })
}
