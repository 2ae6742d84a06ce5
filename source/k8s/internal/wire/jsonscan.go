package wire

import (
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON scanner of the planned decoder (jsondecode.go): it reads one
// token at a time from the input, checking the grammar of RFC 8259 as
// encoding/json's scanner does (the same strings, numbers and literals are
// accepted, the same nesting limit applies), so that an input the standard
// decoder refuses as malformed is refused here too.

// maxJSONDepth is encoding/json's nesting limit (its maxNestingDepth).
const maxJSONDepth = 10000

// jsonDec is one decoding: the input, the position and a scratch buffer
// for strings that need unquoting.
type jsonDec struct {
	data  []byte
	off   int
	depth int
	buf   []byte // unquoted strings; valid until the next str call
}

// malformed returns the error of input that is not JSON at d.off.
func (d *jsonDec) malformed(what string) error {
	if d.off >= len(d.data) {
		return fmt.Errorf("%w: json: unexpected end of input (%s)", ErrMalformed, what)
	}
	return fmt.Errorf("%w: json: %s at offset %d (%q)", ErrMalformed, what, d.off, d.data[d.off])
}

// ws skips white space.
func (d *jsonDec) ws() {
	for d.off < len(d.data) {
		switch d.data[d.off] {
		case ' ', '\t', '\n', '\r':
			d.off++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte; an error at the end.
func (d *jsonDec) peek() (byte, error) {
	d.ws()
	if d.off >= len(d.data) {
		return 0, d.malformed("want a value")
	}
	return d.data[d.off], nil
}

// enter counts one more level of nesting ('{' or '[' at d.off, consumed).
func (d *jsonDec) enter() error {
	d.depth++
	if d.depth > maxJSONDepth {
		return fmt.Errorf("%w: json: exceeded max depth", ErrMalformed)
	}
	d.off++
	return nil
}

// objKey reads the next key of the object being read, and the colon after
// it: first is true right after '{'. end is true at the closing '}'
// (consumed). key is valid until the next str call.
func (d *jsonDec) objKey(first bool) (key []byte, end bool, err error) {
	c, err := d.peek()
	if err != nil {
		return nil, false, err
	}
	if c == '}' { // after '{' or after a value
		d.off++
		d.depth--
		return nil, true, nil
	}
	if !first {
		if c != ',' {
			return nil, false, d.malformed("want ',' or '}' in an object")
		}
		d.off++
		if c, err = d.peek(); err != nil {
			return nil, false, err
		}
	}
	if c != '"' {
		return nil, false, d.malformed("want a string key")
	}
	if key, err = d.str(); err != nil {
		return nil, false, err
	}
	if c, err = d.peek(); err != nil {
		return nil, false, err
	}
	if c != ':' {
		return nil, false, d.malformed("want ':' after a key")
	}
	d.off++
	return key, false, nil
}

// arrNext moves to the next element of the array being read: first is true
// right after '['. end is true at the closing ']' (consumed).
func (d *jsonDec) arrNext(first bool) (end bool, err error) {
	c, err := d.peek()
	if err != nil {
		return false, err
	}
	switch {
	case c == ']':
		d.off++
		d.depth--
		return true, nil
	case first:
		return false, nil
	case c == ',':
		d.off++
		return false, nil
	}
	return false, d.malformed("want ',' or ']' in an array")
}

// str reads the string at d.off (its opening quote) and returns its
// unquoted bytes, as encoding/json unquotes them (invalid UTF-8 and lone
// surrogates become U+FFFD): a slice of the input when nothing needs
// changing, else of d.buf.
func (d *jsonDec) str() ([]byte, error) {
	raw, simple, err := d.scanStr()
	if err != nil || simple {
		return raw, err
	}
	d.buf = unquote(d.buf[:0], raw)
	return d.buf, nil
}

// scanStr reads the string at d.off (its opening quote), checking its
// grammar; raw is its bytes between the quotes, simple is whether they
// are its value (no escape, valid UTF-8).
func (d *jsonDec) scanStr() (raw []byte, simple bool, err error) {
	start := d.off + 1
	simple = true
	for i := start; i < len(d.data); {
		c := d.data[i]
		switch {
		case c == '"':
			d.off = i + 1
			return d.data[start:i], simple, nil
		case c == '\\':
			simple = false
			if i+1 >= len(d.data) {
				d.off = len(d.data)
				return nil, false, d.malformed("in a string")
			}
			switch d.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d.data) || hex4(d.data[i+2:i+6]) < 0 {
					d.off = i
					return nil, false, d.malformed("bad \\u escape in a string")
				}
				i += 6
			default:
				d.off = i
				return nil, false, d.malformed("bad escape in a string")
			}
		case c < 0x20:
			d.off = i
			return nil, false, d.malformed("control character in a string")
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && size == 1 {
				simple = false
			}
			i += size
		}
	}
	d.off = len(d.data)
	return nil, false, d.malformed("unterminated string")
}

// hex4 returns the value of 4 hex digits, -1 if b is not.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// unquote appends the value of the string bytes s (between the quotes,
// grammar checked by scanStr) to dst, as encoding/json's unquote does.
func unquote(dst, s []byte) []byte {
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			e := s[r+1]
			r += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := hex4(s[r:])
				r += 4
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:])); dec != unicode.ReplacementChar {
							dst = utf8.AppendRune(dst, dec)
							r += 6
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, rr)
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			dst = utf8.AppendRune(dst, rr)
			r += size
		}
	}
	return dst
}

// num reads the number at d.off, checking its grammar, and returns its
// bytes.
func (d *jsonDec) num() ([]byte, error) {
	start, i, n := d.off, d.off, len(d.data)
	digits := func() bool {
		j := i
		for i < n && '0' <= d.data[i] && d.data[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < n && d.data[i] == '-' {
		i++
	}
	switch {
	case i < n && d.data[i] == '0':
		i++
	case !digits():
		d.off = i
		return nil, d.malformed("bad number")
	}
	if i < n && d.data[i] == '.' {
		i++
		if !digits() {
			d.off = i
			return nil, d.malformed("bad number fraction")
		}
	}
	if i < n && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < n && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if !digits() {
			d.off = i
			return nil, d.malformed("bad number exponent")
		}
	}
	d.off = i
	return d.data[start:i], nil
}

// lit reads the literal word (true, false, null) at d.off.
func (d *jsonDec) lit(word string) error {
	if len(d.data)-d.off < len(word) || string(d.data[d.off:d.off+len(word)]) != word {
		return d.malformed("bad literal")
	}
	d.off += len(word)
	return nil
}

// skip reads one value, checking its grammar, and returns its bytes.
func (d *jsonDec) skip() ([]byte, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	start := d.off
	switch c {
	case '{':
		if err := d.enter(); err != nil {
			return nil, err
		}
		for first := true; ; first = false {
			_, end, err := d.objKey(first)
			if err != nil {
				return nil, err
			}
			if end {
				break
			}
			if _, err := d.skip(); err != nil {
				return nil, err
			}
		}
	case '[':
		if err := d.enter(); err != nil {
			return nil, err
		}
		for first := true; ; first = false {
			end, err := d.arrNext(first)
			if err != nil {
				return nil, err
			}
			if end {
				break
			}
			if _, err := d.skip(); err != nil {
				return nil, err
			}
		}
	case '"':
		if _, _, err := d.scanStr(); err != nil {
			return nil, err
		}
	case 't':
		err = d.lit("true")
	case 'f':
		err = d.lit("false")
	case 'n':
		err = d.lit("null")
	default:
		_, err = d.num()
	}
	if err != nil {
		return nil, err
	}
	return d.data[start:d.off], nil
}

// end checks that nothing but white space follows the top-level value.
func (d *jsonDec) end() error {
	d.ws()
	if d.off != len(d.data) {
		return d.malformed("data after the top-level value")
	}
	return nil
}
