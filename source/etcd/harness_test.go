package etcd_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
	"github.com/ginformer/ginformer/source/sourcetest"
)

// obj is the test value: a name, a generation and a tier.
type obj struct {
	Name string `json:"name"`
	Gen  int    `json:"gen"`
	Tier string `json:"tier,omitempty"`
}

var prefixN atomic.Int64

// newPrefix returns a prefix no other test uses.
func newPrefix(t testing.TB) string {
	return fmt.Sprintf("/test/%s/%d/", t.Name(), prefixN.Add(1))
}

// client returns a client of the shared member, closed after the test.
func client(t testing.TB) *clientv3.Client {
	t.Helper()
	return srv.NewTestClient(t)
}

func newSource(t testing.TB, opts etcd.Options[obj]) *etcd.Source[obj] {
	t.Helper()
	s, err := etcd.New(opts)
	require.NoError(t, err)
	return s
}

// writer writes objs under a prefix.
type writer struct {
	c      *clientv3.Client
	prefix string
}

func (w writer) key(name string) string { return w.prefix + name }

func (w writer) put(ctx context.Context, o obj) (string, error) {
	b, _ := json.Marshal(o)
	resp, err := w.c.Put(ctx, w.key(o.Name), string(b))
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(resp.Header.Revision, 10), nil
}

// seed puts n objects named fmt.Sprintf(format, i) for i in [0, n), all at
// generation gen, in transactions of 100 puts.
func (w writer) seed(t *testing.T, n int, format string, gen int) {
	t.Helper()
	for i := 0; i < n; i += 100 {
		ops := make([]clientv3.Op, 0, 100)
		for j := i; j < min(i+100, n); j++ {
			b, _ := json.Marshal(obj{Name: fmt.Sprintf(format, j), Gen: gen})
			ops = append(ops, clientv3.OpPut(w.key(fmt.Sprintf(format, j)), string(b)))
		}
		_, err := w.c.Txn(t.Context()).Then(ops...).Commit()
		require.NoError(t, err)
	}
}

func (w writer) putRaw(ctx context.Context, name, value string) (string, error) {
	resp, err := w.c.Put(ctx, w.key(name), value)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(resp.Header.Revision, 10), nil
}

func (w writer) get(ctx context.Context, name string) (obj, bool, error) {
	resp, err := w.c.Get(ctx, w.key(name))
	if err != nil || len(resp.Kvs) == 0 {
		return obj{}, false, err
	}
	var o obj
	return o, true, json.Unmarshal(resp.Kvs[0].Value, &o)
}

func (w writer) create(ctx context.Context, name string) (string, error) {
	b, _ := json.Marshal(obj{Name: name, Gen: 1})
	k := w.key(name)
	resp, err := w.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).Then(clientv3.OpPut(k, string(b))).Commit()
	if err != nil {
		return "", err
	}
	if !resp.Succeeded {
		return "", fmt.Errorf("create %s: exists", name)
	}
	return strconv.FormatInt(resp.Header.Revision, 10), nil
}

func (w writer) update(ctx context.Context, name string) (string, error) {
	o, ok, err := w.get(ctx, name)
	if err != nil || !ok {
		return "", fmt.Errorf("update %s: not found (%v)", name, err)
	}
	o.Gen++
	return w.put(ctx, o)
}

func (w writer) del(ctx context.Context, name string) (string, error) {
	resp, err := w.c.Delete(ctx, w.key(name))
	if err != nil {
		return "", err
	}
	if resp.Deleted == 0 {
		return "", fmt.Errorf("delete %s: not found", name)
	}
	return strconv.FormatInt(resp.Header.Revision, 10), nil
}

func compareVersions(a, b string) int {
	x, err1 := strconv.ParseInt(a, 10, 64)
	y, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		panic(fmt.Sprintf("bad versions %q %q", a, b))
	}
	return cmp.Compare(x, y)
}

// objName is the name of o, read from its key when it carries only the key
// (Object.ValueUnknown).
func objName(o *etcd.Object[obj], w writer) string {
	if o.ValueUnknown {
		return strings.TrimPrefix(o.Key, w.prefix)
	}
	return o.Value.Name
}

// harness builds a conformance harness for a source over w's prefix.
func harness(src *etcd.Source[obj], w writer) sourcetest.Harness[*etcd.Object[obj]] {
	return sourcetest.Harness[*etcd.Object[obj]]{
		Source:          src,
		Create:          w.create,
		Update:          w.update,
		Delete:          w.del,
		Name:            func(o *etcd.Object[obj]) string { return objName(o, w) },
		Generation:      func(o *etcd.Object[obj]) int { return o.Value.Gen },
		Compact:         func(ctx context.Context) error { _, err := etcdtest.Compact(ctx, w.c); return err },
		Bookmark:        src.RequestProgress,
		CompareVersions: compareVersions,
	}
}
