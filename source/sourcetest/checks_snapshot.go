package sourcetest

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// checkSnapshotSource checks the parts of [informer.SnapshotSource] a
// source controls, for a source that implements it (skipped otherwise):
//
//   - SnapshotIdentity answers, with the same identity on every call,
//     before and after writes (a snapshot must match across runs against
//     the same data);
//   - the codec's Format is set;
//   - every object the source listed or watched after the kit's writes
//     comes back from Decode(AppendEncode(obj)) equal to itself
//     (Harness.Equal), with its name and generation;
//   - AppendEncode appends: what dst held is kept;
//   - Decode keeps nothing of its input: the decoded object is unchanged
//     after the input is overwritten (the informer reuses its buffers);
//   - the codec decodes on several goroutines at once (a data race shows
//     under -race).
func checkSnapshotSource[T any](k *kit[T]) {
	ss, ok := k.h.Source.(informer.SnapshotSource[T])
	if !ok {
		k.t.Skip("the source is no informer.SnapshotSource")
	}
	id := k.snapshotIdentity(ss)
	codec := ss.SnapshotCodec()
	if v := reflect.ValueOf(codec); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		k.t.Fatalf("SnapshotCodec returned nil; a SnapshotSource provides the codec of its objects")
	}
	if codec.Format() == "" {
		k.t.Fatalf("the snapshot codec (%T) has an empty Format; it names the encoding, so that a snapshot written "+
			"in another is refused", codec)
	}

	// The objects: the watched states of every write, and the listed ones.
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	var want []change
	want = append(want, change{informer.EventAdded, "a", 1, k.create("a")})
	want = append(want, change{informer.EventAdded, "b", 1, k.create("b")})
	want = append(want, change{informer.EventModified, "a", 2, k.update("a")})
	want = append(want, change{informer.EventAdded, "c", 1, k.create("c")})
	want = append(want, change{informer.EventDeleted, "b", 1, k.del("b")})
	want = append(want, change{informer.EventModified, "a", 3, k.update("a")})
	var objs []T
	var where []string
	for i, w := range want {
		ev := s.nextChange(w.String())
		if got := s.got(ev, true); got != w {
			k.t.Fatalf("%s: change %d of %d: expected %s; got %s", s.desc, i+1, len(want), w, got)
		}
		if ev.Type != informer.EventDeleted {
			objs, where = append(objs, ev.Object), append(where, "the watched "+w.String())
		}
	}
	p, err := k.list(informer.ListOptions{})
	require.NoError(k.t, err, "list")
	for _, obj := range p.Items {
		name, gen := k.describeObject(obj, "a listed item")
		objs, where = append(objs, obj), append(where, fmt.Sprintf("the listed %s gen %d", name, gen))
	}

	// Encode them one after the other into one buffer, after a prefix.
	const prefix = "sourcetest: kept by AppendEncode"
	buf := []byte(prefix)
	ends := make([]int, len(objs))
	for i, obj := range objs {
		before := bytes.Clone(buf)
		buf, err = codec.AppendEncode(buf, obj)
		require.NoError(k.t, err, "AppendEncode of %s", where[i])
		if len(buf) < len(before) || !bytes.Equal(buf[:len(before)], before) {
			k.t.Fatalf("AppendEncode of %s changed the %d bytes of dst it was given (the encodings before it); the "+
				"contract: it appends to dst", where[i], len(before))
		}
		ends[i] = len(buf)
	}

	start := len(prefix)
	for i, obj := range objs {
		data := bytes.Clone(buf[start:ends[i]])
		start = ends[i]
		got, err := codec.Decode(data)
		require.NoError(k.t, err, "Decode of the encoding of %s", where[i])
		k.requireSame(obj, got, "Decode(AppendEncode(%s))", where[i])
		for j := range data {
			data[j] ^= 0xA5
		}
		k.requireSame(obj, got, "Decode(AppendEncode(%s)), after Decode's input was overwritten (so the decoded "+
			"object retains its input; the contract: data is reused after Decode returns, copy what the object keeps)",
			where[i])
	}
	k.decodeConcurrently(codec, buf[len(prefix):], ends, len(prefix), objs)

	if again := k.snapshotIdentity(ss); again != id {
		k.t.Fatalf("SnapshotIdentity returned %q before the kit's writes and %q after; the contract requires an "+
			"identity stable across runs against the same data, or every snapshot is refused", id, again)
	}
}

// snapshotIdentity calls SnapshotIdentity twice, and checks the two answers
// agree and are not empty.
func (k *kit[T]) snapshotIdentity(ss informer.SnapshotSource[T]) string {
	k.t.Helper()
	var ids [2]string
	for i := range ids {
		ctx, cancel := context.WithTimeout(k.ctx, k.h.wait())
		id, err := ss.SnapshotIdentity(ctx)
		cancel()
		require.NoError(k.t, err, "SnapshotIdentity (call %d)", i+1)
		ids[i] = id
	}
	if ids[0] == "" {
		k.t.Fatalf("SnapshotIdentity returned \"\"; it names the collection the source serves")
	}
	if ids[0] != ids[1] {
		k.t.Fatalf("SnapshotIdentity returned %q, then %q; the contract requires an identity stable across calls "+
			"and runs against the same data, or every snapshot is refused", ids[0], ids[1])
	}
	return ids[0]
}

// requireSame fails the check when got is not the same state as want: by
// Harness.Equal (reflect.DeepEqual by default), and by name and generation.
func (k *kit[T]) requireSame(want, got T, format string, args ...any) {
	k.t.Helper()
	what := fmt.Sprintf(format, args...)
	wantName, wantGen := k.describeObject(want, "the encoded object")
	name, gen, problem := k.objectOf(got)
	if problem != "" {
		k.t.Fatalf("%s %s; the contract requires the encoded object back", what, problem)
	}
	if name != wantName || gen != wantGen || !k.equal(want, got) {
		k.t.Fatalf("%s is %s gen %d (%+v), not the encoded %s gen %d (%+v) (by Harness.Equal, or reflect.DeepEqual "+
			"without it); the snapshot codec must round-trip every object", what, name, gen, got, wantName, wantGen, want)
	}
}

// equal compares two objects with Harness.Equal or reflect.DeepEqual.
func (k *kit[T]) equal(a, b T) bool {
	if k.h.Equal != nil {
		return k.h.Equal(a, b)
	}
	return reflect.DeepEqual(a, b)
}

// decodeConcurrently decodes every encoding on four goroutines at once and
// checks each result; a codec with shared state races (-race shows it).
func (k *kit[T]) decodeConcurrently(codec informer.Codec[T], buf []byte, ends []int, offset int, objs []T) {
	k.t.Helper()
	got := make([][]T, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			start := 0
			for _, end := range ends {
				obj, err := codec.Decode(bytes.Clone(buf[start : end-offset]))
				if err != nil {
					errs[g] = err
					return
				}
				got[g] = append(got[g], obj)
				start = end - offset
			}
		})
	}
	wg.Wait()
	for g := range got {
		require.NoError(k.t, errs[g], "Decode on goroutine %d of 4 decoding at once", g+1)
		for i := range objs {
			k.requireSame(objs[i], got[g][i], "Decode of encoding %d on goroutine %d of 4 decoding at once", i+1, g+1)
		}
	}
}
