package k8s

import (
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ginformer/ginformer/informer"
)

// Options configures a [Source]. The zero value is valid: every object the
// client can see, bookmarks and streaming lists on.
type Options struct {
	// LabelSelector restricts the source to objects whose labels match, in
	// the syntax of metav1.ListOptions.LabelSelector ("app=web,tier!=db").
	// It is passed to every list and watch. Zero: no restriction.
	LabelSelector string
	// FieldSelector restricts the source to objects whose fields match
	// ("spec.nodeName=node-1"); which fields are selectable depends on the
	// resource. Zero: no restriction.
	FieldSelector string
	// DisableBookmarks stops watches from asking for bookmarks
	// (AllowWatchBookmarks). A streaming list needs them, so it then answers
	// errors.ErrUnsupported. Zero: bookmarks requested.
	DisableBookmarks bool
	// DisableStreamingList makes Watch refuse
	// [informer.WatchOptions.SendInitialEvents] with errors.ErrUnsupported
	// without contacting the server, for servers that do not serve it well.
	// Zero: streaming lists are sent to the server, which may still refuse.
	DisableStreamingList bool
	// WatchBuffer is the number of converted events held between the
	// client-go watch and the consumer. Zero: 100. Negative: unbuffered.
	WatchBuffer int
}

// validate checks the selectors and applies the defaults.
func (o *Options) validate() error {
	if _, err := labels.Parse(o.LabelSelector); err != nil {
		return fmt.Errorf("k8s: LabelSelector %q: %w: %w", o.LabelSelector, informer.ErrInvalidOptions, err)
	}
	if _, err := fields.ParseSelector(o.FieldSelector); err != nil {
		return fmt.Errorf("k8s: FieldSelector %q: %w: %w", o.FieldSelector, informer.ErrInvalidOptions, err)
	}
	switch {
	case o.WatchBuffer == 0:
		o.WatchBuffer = 100
	case o.WatchBuffer < 0:
		o.WatchBuffer = 0
	}
	return nil
}
