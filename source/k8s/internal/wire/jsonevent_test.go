package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// SplitJSONWatchEvent agrees with encoding/json reading the event into
// {Type string; Object json.RawMessage} on what the apiserver sends and on
// what it does not, and refuses what encoding/json refuses. (A frame of
// null, which encoding/json reads as an event of no type, is refused too:
// either way the watch ends with an error.)
func TestSplitJSONWatchEvent(t *testing.T) {
	type event struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	for _, frame := range []string{
		`{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"7"}}}`,
		` { "object" : {"a":[1,2,{"b":null}]} , "type" : "MODIFIED" } `,
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"ERROR","object":{"kind":"Status","code":410}}`,
		`{"type":"DELETED","object":{"x":"\u00e9\"q"},"extra":[true,false,null,-1.5e3]}`,
		`{"type":"ADDED","type":"DELETED","object":{},"object":{"n":1}}`,
		`{"object":{}}`,
		`{"type":null,"object":null}`,
		`{"type":"A\u0042C","object":"str"}`,
		`{}`,
	} {
		var want event
		require.NoError(t, json.Unmarshal([]byte(frame), &want), frame)
		typ, obj, err := SplitJSONWatchEvent([]byte(frame))
		require.NoError(t, err, frame)
		require.Equal(t, want.Type, typ, frame)
		require.Equal(t, string(want.Object), string(obj), frame)
	}
	for _, frame := range []string{
		``, `[]`, `{"type":"ADDED"`, `{"type":"ADDED","object":{}}x`, `{"type":1,"object":{}}`,
		`{"type":"ADDED","object":{"a":}}`, `{"type":"ADDED","object":{"a":tru}}`, `{"type":"ADDED" "object":{}}`,
		`{"type":"ADDED","object":{},}`, `{"type":"\x01","object":{}}`,
	} {
		var ev event
		require.Error(t, json.Unmarshal([]byte(frame), &ev), "encoding/json accepts %q", frame)
		_, _, err := SplitJSONWatchEvent([]byte(frame))
		require.ErrorIs(t, err, ErrMalformed, frame)
	}
}
