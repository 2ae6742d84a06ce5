package natskv

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// directSnapshot reads the last message of every key in one batched direct
// get ("multi_last" over the bucket's subjects, nats-server 2.11 and
// later), which the server answers under the stream's read lock: the
// exact state at the sequence it reports. The server answers at most 1024
// keys (counting deleted ones) and a bounded number of bytes; ok is false
// when the bucket is larger, the stream has no direct gets or the answer is
// otherwise unusable, and the caller reads the snapshot from a consumer.
//
// Possible errors: the client's, classified; ctx.Err().
func (s *Source[T]) directSnapshot(ctx context.Context) (out snap[T], ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	req, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
	}{[]string{s.prefix + ">"}})
	if err != nil {
		return out, false, err
	}
	nc := s.opts.JetStream.Conn()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return out, false, classify(ctx, "list", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(s.direct, inbox, req); err != nil {
		return out, false, classify(ctx, "list", err)
	}
	state := make(map[string]entry)
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return out, false, classify(ctx, "list", err)
		}
		switch m.Header.Get("Status") {
		case "":
			key, found := strings.CutPrefix(m.Header.Get("Nats-Subject"), s.prefix)
			seq, perr := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
			if !found || perr != nil {
				return out, false, nil
			}
			t, _ := time.Parse(time.RFC3339Nano, m.Header.Get("Nats-Time-Stamp"))
			state[key] = entry{key: key, seq: seq, op: opOf(m.Header), data: m.Data, time: t}
			continue
		case "204": // end of batch
		default: // 404 (no message), 413 (too many keys), 503 (no direct gets), ...
			return out, false, nil
		}
		if m.Header.Get("Nats-Num-Pending") != "0" { // cut short (bytes)
			return out, false, nil
		}
		upTo, perr := strconv.ParseUint(m.Header.Get("Nats-UpTo-Sequence"), 10, 64)
		if perr != nil {
			return out, false, nil
		}
		out.version = upTo
		break
	}
	for _, key := range slices.Sorted(maps.Keys(state)) {
		e := state[key]
		if e.op != opPut {
			continue
		}
		obj, v := s.decode(ctx, e, true)
		if v == bad {
			out.bad = append(out.bad, key)
			continue
		}
		out.items = append(out.items, obj)
	}
	return out, true, nil
}
