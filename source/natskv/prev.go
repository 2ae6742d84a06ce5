package natskv

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// keyState is what a watch knows of a key before a message: absent, present
// with a delivered object, or present with a bad value (obj nil).
type keyState[T any] struct {
	present bool
	obj     *Object[T]
}

// lookupTimeout bounds one read of a previous value.
const lookupTimeout = 5 * time.Second

// before reads the state of key just before revision seq: the key's last
// message below seq, through a direct get of the stream (batched get
// "multi_last" with "up_to_seq", nats-server 2.11 and later). known is false
// when the stream no longer holds that message (history limits, purges)
// and so the state cannot be told.
//
// Possible errors: the client's, classified (ErrTransient when the server
// does not answer).
func (s *Source[T]) before(ctx context.Context, key string, seq uint64) (st keyState[T], known bool, err error) {
	if seq <= 1 {
		return keyState[T]{}, true, nil // nothing came before the first revision
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	req, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
		UpToSeq   uint64   `json:"up_to_seq"`
	}{[]string{s.prefix + key}, seq - 1})
	if err != nil {
		return keyState[T]{}, false, err
	}
	nc := s.opts.JetStream.Conn()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return keyState[T]{}, false, classify(ctx, "previous value", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(s.direct, inbox, req); err != nil {
		return keyState[T]{}, false, classify(ctx, "previous value", err)
	}
	var last *nats.Msg
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return keyState[T]{}, false, classify(ctx, "previous value", err)
		}
		switch status := m.Header.Get("Status"); status {
		case "":
			last = m
			continue
		case "204": // end of batch
		case "404": // no message of the key up to seq-1
			return keyState[T]{}, false, nil
		case "503":
			return keyState[T]{}, false, classify(ctx, "previous value", nats.ErrNoResponders)
		default:
			return keyState[T]{}, false, fmt.Errorf("natskv source: previous value of %q: status %s %s", key, status, m.Header.Get("Description"))
		}
		break
	}
	if last == nil {
		return keyState[T]{}, false, nil
	}
	e := entry{key: key, op: opOf(last.Header), data: last.Data}
	e.seq, _ = strconv.ParseUint(last.Header.Get("Nats-Sequence"), 10, 64)
	e.time, _ = time.Parse(time.RFC3339Nano, last.Header.Get("Nats-Time-Stamp"))
	if e.op != opPut {
		return keyState[T]{}, true, nil
	}
	obj, _ := s.decode(ctx, e, false)
	return keyState[T]{present: true, obj: obj}, true, nil
}
