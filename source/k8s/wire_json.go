package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jsonList splits a JSON list ({"kind":…,"metadata":{…},"items":[…]}) into
// its metadata and the raw bytes of each item, without decoding any item.
// The item slices alias body.
func jsonList(body []byte) (meta metav1.ListMeta, items [][]byte, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := expectDelim(dec, '{'); err != nil {
		return meta, nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return meta, nil, fmt.Errorf("%w: %w", errMalformed, err)
		}
		switch tok {
		case "metadata":
			if err := dec.Decode(&meta); err != nil {
				return meta, nil, fmt.Errorf("%w: list metadata: %w", errMalformed, err)
			}
		case "items":
			if items, err = jsonItems(dec, body); err != nil {
				return meta, nil, err
			}
		default:
			var skip jsonSpan
			if err := dec.Decode(&skip); err != nil {
				return meta, nil, fmt.Errorf("%w: %w", errMalformed, err)
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
		return nil, fmt.Errorf("%w: items: %w", errMalformed, err)
	}
	if tok == nil { // "items": null
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("%w: items is not an array", errMalformed)
	}
	var items [][]byte
	for dec.More() {
		var el jsonSpan
		if err := dec.Decode(&el); err != nil {
			return nil, fmt.Errorf("%w: item %d: %w", errMalformed, len(items), err)
		}
		// The element ends at the decoder's offset and is n bytes long.
		end := int(dec.InputOffset())
		items = append(items, body[end-el.n:end:end])
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, fmt.Errorf("%w: items: %w", errMalformed, err)
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
		return fmt.Errorf("%w: %w", errMalformed, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: want %q, got %v", errMalformed, want, tok)
	}
	return nil
}

// jsonEvent is one event of a JSON watch stream, its object left raw.
type jsonEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}
