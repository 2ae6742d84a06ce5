package natskv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/informer"
)

// List returns one page of the bucket's keys with their decoded values, in
// key order, at one revision (see the package doc, Lists, for how the
// snapshot is made consistent and how modes map onto it).
//
// Possible errors: [informer.ErrInvalidOptions] (a bad version, a negative
// Limit, an unknown mode); [informer.ErrVersionTooLarge] (a version newer
// than the stream's last revision); [informer.ErrExpired] (ReadExact at a
// revision older than the stream's first, an expired or unknown continue
// token); errors.ErrUnsupported (ReadExact at a revision that is not the
// latest: the stream cannot rebuild an older state); the client's,
// classified (see the package doc); ctx.Err().
func (s *Source[T]) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[*Object[T]], error) {
	if opts.Limit < 0 {
		return informer.ListPage[*Object[T]]{}, fmt.Errorf("natskv source: negative Limit: %w", informer.ErrInvalidOptions)
	}
	if opts.Continue != "" {
		return s.next(ctx, opts)
	}
	var want uint64
	exact := false
	switch opts.Mode {
	case informer.ReadLatest, informer.ReadAny:
	case informer.ReadNotOlderThan, informer.ReadExact:
		v, err := parseRev(opts.Version)
		if err != nil {
			return informer.ListPage[*Object[T]]{}, err
		}
		want, exact = v, opts.Mode == informer.ReadExact
	default:
		return informer.ListPage[*Object[T]]{}, fmt.Errorf("natskv source: unknown read mode %d: %w", opts.Mode, informer.ErrInvalidOptions)
	}
	snap, err := s.snapshot(ctx, want, exact)
	if err != nil {
		return informer.ListPage[*Object[T]]{}, err
	}
	if exact && snap.version != want {
		return informer.ListPage[*Object[T]]{}, fmt.Errorf("natskv source: ReadExact at revision %d: the bucket is at %d and a stream cannot rebuild an older state: %w", want, snap.version, errors.ErrUnsupported)
	}
	return s.page(snap.version, snap.items, opts.Limit), nil
}

// snap is the state of the bucket at one revision.
type snap[T any] struct {
	version uint64
	items   []*Object[T] // sorted by key
	bad     []string     // keys whose value did not decode
}

// snapshot reads the bucket's state at one revision not older than want
// (see the package doc, Lists). A want newer than the stream's last
// revision gives ErrVersionTooLarge; with exact, one older than its first
// gives ErrExpired.
func (s *Source[T]) snapshot(ctx context.Context, want uint64, exact bool) (snap[T], error) {
	// A lost connection fails the list with ErrTransient (see bindConn).
	ctx, release := s.bindConn(ctx)
	defer release()
	b, err := s.bounds(ctx)
	if err != nil {
		return snap[T]{}, err
	}
	if err := b.check(want); err != nil && (exact || want > b.last) {
		return snap[T]{}, err
	}
	if b.direct {
		out, ok, err := s.directSnapshot(ctx)
		if err != nil || ok {
			return out, err
		}
	}
	cons, err := s.opts.JetStream.OrderedConsumer(ctx, s.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.prefix + ">"},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	})
	if err != nil {
		return snap[T]{}, classify(ctx, "list: create consumer", err)
	}
	defer s.deleteConsumer(cons)
	if info := cons.CachedInfo(); info == nil || info.NumPending == 0 {
		// Nothing in the stream when the consumer was created: the
		// bucket was empty at b.last.
		return snap[T]{version: b.last}, nil
	}
	// The server sends the last message of each key as of the consumer's
	// creation, then every message after the stream's last sequence at
	// that point, in order; the two may overlap, so a message is applied
	// only over an older one of its key. The list stops at a message after
	// which nothing was pending. after bounds the version when pending
	// messages vanish instead (see listIdle).
	after, err := s.bounds(ctx)
	if err != nil {
		return snap[T]{}, err
	}
	it, err := cons.Messages()
	if err != nil {
		return snap[T]{}, classify(ctx, "list: consume", err)
	}
	defer it.Stop()
	state := make(map[string]entry)
	var version uint64
	for {
		nctx, ncancel := context.WithTimeout(ctx, listIdle)
		m, err := it.Next(jetstream.NextContext(nctx))
		ncancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			// Nothing for a while: the messages still pending may have
			// been removed (history limits, max age) before delivery.
			info, ierr := cons.Info(ctx)
			if ierr != nil {
				return snap[T]{}, classify(ctx, "list: consumer info", ierr)
			}
			if info.NumPending == 0 {
				// Everything after the last delivered message up to
				// after.last was removed: it changes no key.
				version = max(version, after.last)
				break
			}
			continue
		}
		if err != nil {
			return snap[T]{}, classify(ctx, "list: next message", err)
		}
		e, err := s.entryOf(m)
		if err != nil {
			return snap[T]{}, err
		}
		if e.seq > state[e.key].seq { // never an older message over a newer one
			state[e.key] = e
		}
		version = max(version, e.seq)
		meta, _ := m.Metadata() // entryOf read it
		if meta.NumPending == 0 {
			break
		}
	}
	out := snap[T]{version: version}
	for _, key := range slices.Sorted(maps.Keys(state)) {
		if state[key].op != opPut {
			continue // deleted or purged
		}
		obj, v := s.decode(ctx, state[key], true)
		if v == bad {
			out.bad = append(out.bad, key)
			continue
		}
		out.items = append(out.items, obj)
	}
	return out, nil
}

// listIdle is how long a list waits for a message before it asks the
// server whether any is still pending.
const listIdle = 2 * time.Second

// continued is the rest of a paged list, kept for its continue token.
type continued[T any] struct {
	version uint64
	items   []*Object[T]
	expires time.Time
}

// page returns the first limit items (all with limit 0) and keeps the rest
// for the next page.
func (s *Source[T]) page(version uint64, items []*Object[T], limit int) informer.ListPage[*Object[T]] {
	p := informer.ListPage[*Object[T]]{Version: formatRev(version), Items: items}
	if limit == 0 || len(items) <= limit {
		return p
	}
	p.Items = items[:limit:limit]
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	p.Continue = token(version, id, limit)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	for len(s.continues) >= s.opts.MaxContinues { // drop the oldest
		oldest := ""
		for id, c := range s.continues {
			if oldest == "" || c.expires.Before(s.continues[oldest].expires) {
				oldest = id
			}
		}
		delete(s.continues, oldest)
	}
	s.continues[id] = &continued[T]{version: version, items: items, expires: now.Add(s.opts.ContinueTTL)}
	return p
}

// token is the continue token of the page starting at offset of the list
// kept under id at version: "version.id.offset". Tokens of one list differ
// per page, so a page can be read again with its token.
func token(version uint64, id string, offset int) string {
	return fmt.Sprintf("%d.%s.%d", version, id, offset)
}

// parseToken splits a token made by token.
func parseToken(tok string) (version uint64, id string, offset int, ok bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return 0, "", 0, false
	}
	version, err := strconv.ParseUint(parts[0], 10, 64)
	if err != nil {
		return 0, "", 0, false
	}
	offset, err = strconv.Atoi(parts[2])
	if err != nil || offset <= 0 {
		return 0, "", 0, false
	}
	return version, parts[1], offset, true
}

// sweepLocked drops the expired continues.
func (s *Source[T]) sweepLocked(now time.Time) {
	for tok, c := range s.continues {
		if now.After(c.expires) {
			delete(s.continues, tok)
		}
	}
}

// next serves the page after the continue token. The rest of the list
// is dropped once its last page is served.
func (s *Source[T]) next(ctx context.Context, opts informer.ListOptions) (informer.ListPage[*Object[T]], error) {
	tok := opts.Continue
	version, id, offset, ok := parseToken(tok)
	if !ok {
		return informer.ListPage[*Object[T]]{}, fmt.Errorf("natskv source: malformed continue token %q: %w", tok, informer.ErrExpired)
	}
	b, err := s.bounds(ctx)
	if err != nil {
		return informer.ListPage[*Object[T]]{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(time.Now())
	c := s.continues[id]
	if c == nil || c.version != version || offset > len(c.items) {
		return informer.ListPage[*Object[T]]{}, fmt.Errorf("natskv source: continue token %q unknown or expired: %w", tok, informer.ErrExpired)
	}
	if version < b.first { // the stream no longer holds the list's revision
		delete(s.continues, id)
		return informer.ListPage[*Object[T]]{}, fmt.Errorf("natskv source: continue token at revision %d: the stream's first revision is %d: %w", version, b.first, informer.ErrExpired)
	}
	p := informer.ListPage[*Object[T]]{Version: formatRev(version), Items: c.items[offset:]}
	if opts.Limit == 0 || len(p.Items) <= opts.Limit {
		delete(s.continues, id)
		return p, nil
	}
	p.Items = p.Items[:opts.Limit:opts.Limit]
	p.Continue = token(version, id, offset+opts.Limit)
	return p, nil
}
