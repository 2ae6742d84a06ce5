package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SplitJSONList splits a JSON list ({"kind":…,"metadata":{…},"items":[…]}) into
// its metadata and the raw bytes of each item, without decoding any item.
// The item slices alias body.
func SplitJSONList(body []byte) (meta metav1.ListMeta, items [][]byte, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := expectDelim(dec, '{'); err != nil {
		return meta, nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return meta, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch tok {
		case "metadata":
			if err := dec.Decode(&meta); err != nil {
				return meta, nil, fmt.Errorf("%w: list metadata: %w", ErrMalformed, err)
			}
		case "items":
			if items, err = jsonItems(dec, body); err != nil {
				return meta, nil, err
			}
		default:
			var skip jsonSpan
			if err := dec.Decode(&skip); err != nil {
				return meta, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
			}
		}
	}
	return meta, items, nil
}

// jsonItems reads a JSON array of objects from dec, returning each element
// as a slice of body (found from the decoder's offsets, so not copied).
func jsonItems(dec *json.Decoder, body []byte) ([][]byte, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: items: %w", ErrMalformed, err)
	}
	if tok == nil { // "items": null
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("%w: items is not an array", ErrMalformed)
	}
	var items [][]byte
	for dec.More() {
		var el jsonSpan
		if err := dec.Decode(&el); err != nil {
			return nil, fmt.Errorf("%w: item %d: %w", ErrMalformed, len(items), err)
		}
		// The element ends at the decoder's offset and is n bytes long.
		end := int(dec.InputOffset())
		items = append(items, body[end-el.n:end:end])
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, fmt.Errorf("%w: items: %w", ErrMalformed, err)
	}
	return items, nil
}

// jsonSpan measures a JSON value without copying it (the decoder hands
// UnmarshalJSON the value's exact bytes).
type jsonSpan struct{ n int }

func (s *jsonSpan) UnmarshalJSON(b []byte) error { s.n = len(b); return nil }

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: want %q, got %v", ErrMalformed, want, tok)
	}
	return nil
}

// SplitJSONWatchEvent splits one event of a JSON watch stream
// ({"type":…,"object":{…}}) into its type and the raw bytes of its object,
// which alias frame, with the JSON plan's scanner: the frame is read once
// and checked as encoding/json checks it (a frame that is not one valid
// JSON object is an error wrapping [ErrMalformed]), but keys match
// exactly, as the apiserver writes them (encoding/json would also take
// "Type"); the last of a repeated key wins. A missing key leaves its
// result empty; "object": null is returned as the bytes null, as a
// json.RawMessage would hold them.
func SplitJSONWatchEvent(frame []byte) (typ string, object []byte, err error) {
	d := jsonDec{data: frame}
	if c, err := d.peek(); err != nil {
		return "", nil, err
	} else if c != '{' {
		return "", nil, d.malformed("a watch event that is not an object")
	}
	if err := d.enter(); err != nil {
		return "", nil, err
	}
	for first := true; ; first = false {
		k, end, err := d.objKey(first)
		if err != nil {
			return "", nil, err
		}
		if end {
			break
		}
		switch string(k) {
		case "type":
			if c, err := d.peek(); err != nil {
				return "", nil, err
			} else if c != '"' {
				if _, err := d.skip(); err != nil { // null, or a value encoding/json refuses
					return "", nil, err
				}
				if c != 'n' {
					return "", nil, d.malformed("a watch event type that is not a string")
				}
				typ = ""
				continue
			}
			t, err := d.str()
			if err != nil {
				return "", nil, err
			}
			typ = string(t)
		case "object":
			v, err := d.skip()
			if err != nil {
				return "", nil, err
			}
			object = v
		default:
			if _, err := d.skip(); err != nil {
				return "", nil, err
			}
		}
	}
	if err := d.end(); err != nil {
		return "", nil, err
	}
	return typ, object, nil
}
