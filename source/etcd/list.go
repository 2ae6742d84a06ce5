package etcd

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"reflect"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd/internal/classify"
)

// List returns one page of the objects under the prefix, in key order. See
// the package doc for the read modes and paging. Bad values are skipped and
// reported; filtered-out objects are skipped; so a page may hold fewer than
// Limit items (even none) and still have a Continue token.
//
// Possible errors: [informer.ErrExpired] (compacted revision or continue
// token), [informer.ErrVersionTooLarge] (future revision),
// [informer.ErrTransient] (no leader, unreachable),
// [informer.ErrInvalidOptions] (bad version or token), ctx.Err().
func (s *Source[T]) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[*Object[T]], error) {
	return s.list(ctx, opts, nil)
}

// list is List keeping only the keys keep accepts (nil: all), tested
// before their values are decoded.
func (s *Source[T]) list(ctx context.Context, opts informer.ListOptions, keep keyFilter) (informer.ListPage[*Object[T]], error) {
	limit := int64(opts.Limit)
	if p := int64(s.opts.PageSize); p > 0 && (limit <= 0 || limit > p) {
		limit = p
	}
	from := s.start
	var rev int64 // 0: pick the revision with the first request
	var getOpts []clientv3.OpOption
	if opts.Continue != "" {
		var err error
		rev, from, err = decodeContinue(opts.Continue)
		if err != nil {
			return informer.ListPage[*Object[T]]{}, err
		}
		if from < s.start || (s.end != "\x00" && from >= s.end) {
			return informer.ListPage[*Object[T]]{}, fmt.Errorf("etcd source: continue token of another prefix: %w", informer.ErrInvalidOptions)
		}
	} else {
		switch opts.Mode {
		case informer.ReadLatest:
		case informer.ReadAny:
			getOpts = append(getOpts, clientv3.WithSerializable())
		case informer.ReadNotOlderThan:
			min, err := parseRev(opts.Version)
			if err != nil {
				return informer.ListPage[*Object[T]]{}, err
			}
			return s.listNotOlderThan(ctx, min, limit, keep)
		case informer.ReadExact:
			r, err := parseRev(opts.Version)
			if err != nil {
				return informer.ListPage[*Object[T]]{}, err
			}
			rev = r
		default:
			return informer.ListPage[*Object[T]]{}, fmt.Errorf("etcd source: unknown read mode %d: %w", opts.Mode, informer.ErrInvalidOptions)
		}
	}
	return s.listPage(ctx, from, rev, limit, keep, getOpts...)
}

// listNotOlderThan reads a page not older than min: a serializable read,
// then a linearizable one if the member was behind.
func (s *Source[T]) listNotOlderThan(ctx context.Context, min, limit int64, keep keyFilter) (informer.ListPage[*Object[T]], error) {
	page, err := s.listPage(ctx, s.start, 0, limit, keep, clientv3.WithSerializable())
	if err != nil {
		return page, err
	}
	if revAtLeast(page.Version, min) {
		return page, nil
	}
	page, err = s.listPage(ctx, s.start, 0, limit, keep)
	if err != nil {
		return page, err
	}
	if !revAtLeast(page.Version, min) {
		return informer.ListPage[*Object[T]]{}, fmt.Errorf("etcd source: revision %d not reached (at %s): %w", min, page.Version, informer.ErrVersionTooLarge)
	}
	return page, nil
}

// listPage reads up to limit keys from key from at revision rev (0: the
// current one, fixed by this read), decoding those keep accepts.
func (s *Source[T]) listPage(ctx context.Context, from string, rev, limit int64, keep keyFilter, extra ...clientv3.OpOption) (informer.ListPage[*Object[T]], error) {
	getOpts := append([]clientv3.OpOption{clientv3.WithRange(s.end), clientv3.WithLimit(limit)}, extra...)
	if rev > 0 {
		getOpts = append(getOpts, clientv3.WithRev(rev))
	}
	resp, err := s.get(ctx, from, getOpts...)
	if err != nil {
		return informer.ListPage[*Object[T]]{}, fmt.Errorf("etcd source: list %q from %q at revision %d: %w", s.opts.Prefix, from, rev, classify.Error(err))
	}
	if rev == 0 {
		rev = resp.Header.Revision
	}
	page := informer.ListPage[*Object[T]]{Version: formatRev(rev), Items: make([]*Object[T], 0, len(resp.Kvs))}
	for _, kv := range resp.Kvs {
		if !s.keeps(keep, kv) {
			continue
		}
		if obj, v := s.decode(ctx, kv, true); v == visible {
			page.Items = append(page.Items, obj)
		}
	}
	if resp.More && len(resp.Kvs) > 0 {
		last := resp.Kvs[len(resp.Kvs)-1].Key
		page.Continue = encodeContinue(rev, string(last)+"\x00")
	}
	return page, nil
}

func revAtLeast(version string, min int64) bool {
	rev, err := parseRev(version)
	return err == nil && rev >= min
}

// encodeContinue makes the opaque token for the page starting at next,
// read at rev: base64url of the revision as a uvarint, then the key.
func encodeContinue(rev int64, next string) string {
	buf := binary.AppendUvarint(nil, uint64(rev))
	buf = append(buf, next...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// decodeContinue reads a token made by encodeContinue.
func decodeContinue(token string) (rev int64, next string, err error) {
	buf, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		r, n := binary.Uvarint(buf)
		if n > 0 && r > 0 && int64(r) > 0 {
			return int64(r), string(buf[n:]), nil
		}
	}
	return 0, "", fmt.Errorf("etcd source: bad continue token %q: %w", token, informer.ErrInvalidOptions)
}

// get runs one read of a list on a connection of its own to an endpoint
// that has not failed lately, closed after it: a relist after a network
// failure does not wait on the client's connections, which may still be
// dead (gRPC takes keepalive's time to notice), nor on an endpoint a watch
// has found dead. A read that fails for a reason another member may not
// share moves at once to a member that answers (see failover). A client
// without endpoints, or whose KV is not etcd's own, reads through its KV as
// it is.
//
// Possible errors: the client's, unclassified; one wrapping
// [informer.ErrTransient] when the connection was lost or did not become
// ready in time (see awaitReady).
func (s *Source[T]) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	cli := s.opts.Client
	eps := cli.Endpoints()
	if len(eps) == 0 || reflect.TypeOf(cli.KV) != etcdKV || cli.Ctx().Err() != nil {
		return cli.Get(ctx, key, opts...)
	}
	ep := s.health.pick(eps)
	for failed := 1; ; failed++ {
		c, err := s.dial(ep)
		if err != nil { // options grpc.NewClient refuses: the client's own
			return cli.Get(ctx, key, opts...)
		}
		resp, err := s.getOn(ctx, c, key, opts...)
		c.close()
		if err == nil {
			return resp, nil
		}
		var ok bool
		if ep, ok = s.failover(ctx, "list read", c.endpoint, classify.Error(err), failed, 0); !ok {
			return nil, err
		}
	}
}

// getOn runs a read on c, once c is ready (see awaitReady),
// ending it if c is lost or its endpoint fails another connection.
func (s *Source[T]) getOn(ctx context.Context, c *watchConn, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	s.health.addReader(c)
	defer s.health.removeReader(c)
	lctx, release := c.bind(ctx)
	defer release()
	if err := c.awaitReady(lctx, s.readyTimeout()); err != nil && ctx.Err() == nil {
		return nil, err
	}
	resp, err := c.kv(s.opts.Client).Get(lctx, key, opts...)
	if err != nil && lctx.Err() != nil && ctx.Err() == nil {
		return nil, c.lostErr()
	}
	return resp, err
}
