package debughttp

import (
	"fmt"
	"iter"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Browsing keys: ?informer=N lists informer N's keys a page at a time,
// sorted (byte-wise) by their %v form, with a search. The cache keeps its
// keys in no order, so each page is one pass over every key
// ([informer.Inspector.FormattedKeys]) that keeps only the page: the
// limit+1 smallest matching keys after the cursor (or largest before it),
// in a sorted buffer. See [keysPage] for the cost.

// Limits of a key page.
const (
	// defaultKeysLimit is the number of keys per page without ?limit=.
	defaultKeysLimit = 100
	// maxKeysLimit is the largest ?limit= honoured; more is cut to it.
	maxKeysLimit = 1000
	// maxSearchLen is the longest ?q= accepted, in bytes.
	maxSearchLen = 256
)

// keysPage is the JSON document of ?informer=N&format=json (its schema is
// in the package doc, which must change with it: schema_test.go): one page of
// informer N's keys, sorted byte-wise by their %v form (the form
// ?informer=N&key=K takes), as of one pass over the cache.
//
// Cost: the cache keeps its keys in no order, so every page (the first, a
// later one, a search) is one pass over all n keys of the informer that
// keeps only the page: O(n) time and O(limit) memory, whatever n is. On a
// busy 2-core machine that is 0.12 s per million string keys (no
// allocation per key) and 0.26 s per million [informer.NamespacedKey]s
// (one short-lived string each; keys of other types are formatted with
// fmt). Passes run one at a time per [Handler]: a request waits for the
// one in progress (or for its own context to end: 503), so a burst of
// requests keeps one core busy, not one each. The cache is read without
// locks and weakly consistent: a key written during the pass may or may
// not be seen, and pages read at different times may skip or repeat a key
// that was added or deleted in between.
type keysPage struct {
	// Informer is the informer's name.
	Informer string `json:"informer"`
	// Search is the ?q= the keys match, empty for every key; Match is
	// "contains" (the key contains Search) or "prefix" (it starts with it).
	// Both are case-sensitive.
	Search string `json:"q,omitempty"`
	Match  string `json:"match"`
	// Limit is the most keys a page holds.
	Limit int `json:"limit"`
	// Keys is the page, sorted; empty (not null) when nothing matches.
	Keys []string `json:"keys"`
	// Matched is the number of keys that match the search (all of them
	// without one); Offset how many of those sort before Keys[0], so the
	// page holds matches Offset+1 to Offset+len(Keys).
	Matched int `json:"matched"`
	Offset  int `json:"offset"`
	// HasPrev and HasNext say whether matches sort before and after the
	// page: the previous page is ?before=Keys[0], the next ?after= the
	// last key (with the same informer, q, match and limit).
	HasPrev bool `json:"hasPrev"`
	HasNext bool `json:"hasNext"`
}

// keyQuery is a parsed request for a page of keys.
type keyQuery struct {
	search string
	prefix bool // match by prefix, not substring
	limit  int
	// The cursor: the first page (none set), the page after a key, the
	// page before a key, or the last page.
	after, before string
	hasAfter      bool
	hasBefore     bool
	last          bool
}

// parseKeyQuery reads ?q=, ?match=, ?limit=, ?after=, ?before= and ?last=.
func parseKeyQuery(q url.Values) (keyQuery, error) {
	kq := keyQuery{search: q.Get("q"), limit: defaultKeysLimit}
	if len(kq.search) > maxSearchLen {
		return kq, fmt.Errorf("q: at most %d bytes", maxSearchLen)
	}
	switch m := q.Get("match"); m {
	case "", "contains":
	case "prefix":
		kq.prefix = true
	default:
		return kq, fmt.Errorf("match: %q is neither contains nor prefix", m)
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return kq, fmt.Errorf("limit: %q is not a positive number", s)
		}
		kq.limit = min(n, maxKeysLimit)
	}
	kq.after, kq.hasAfter = q.Get("after"), q.Has("after")
	kq.before, kq.hasBefore = q.Get("before"), q.Has("before")
	kq.last = q.Get("last") != ""
	if kq.hasAfter && (kq.hasBefore || kq.last) || kq.hasBefore && kq.last {
		return kq, fmt.Errorf("after, before and last are exclusive")
	}
	return kq, nil
}

// matches reports whether key matches the search.
func (kq *keyQuery) matches(key string) bool {
	if kq.prefix {
		return strings.HasPrefix(key, kq.search)
	}
	return strings.Contains(key, kq.search)
}

// scanKeys makes the page kq asks for out of one pass over keys, keeping
// at most kq.limit+1 of them (see the comment at the top of the file).
func scanKeys(keys iter.Seq[string], kq keyQuery) keysPage {
	p := keysPage{Search: kq.search, Match: "contains", Limit: kq.limit}
	if kq.prefix {
		p.Match = "prefix"
	}
	backward := kq.hasBefore || kq.last
	buf := make([]string, 0, kq.limit+1)
	outside := 0 // matches on the far side of the cursor
	for k := range keys {
		if !kq.matches(k) {
			continue
		}
		p.Matched++
		switch {
		case kq.hasAfter && k <= kq.after, kq.hasBefore && k >= kq.before:
			outside++
			continue
		case len(buf) == cap(buf) && !backward && k >= buf[len(buf)-1]:
			continue // not among the limit+1 smallest
		case len(buf) == cap(buf) && backward && k <= buf[0]:
			continue // not among the limit+1 largest
		}
		i, _ := slices.BinarySearch(buf, k)
		if len(buf) < cap(buf) {
			buf = slices.Insert(buf, i, k)
			continue
		}
		if backward { // drop the smallest
			copy(buf, buf[1:i])
			buf[i-1] = k
		} else { // drop the largest
			copy(buf[i+1:], buf[i:len(buf)-1])
			buf[i] = k
		}
	}
	more := len(buf) > kq.limit
	if backward {
		if more {
			buf = buf[1:]
		}
		p.HasPrev, p.HasNext = more, outside > 0
		p.Offset = p.Matched - outside - len(buf)
	} else {
		if more {
			buf = buf[:kq.limit]
		}
		p.HasPrev, p.HasNext = outside > 0, more
		p.Offset = outside
	}
	p.Keys = buf
	return p
}

// keysLinks are the hrefs of a key page's navigation, "" where there is
// nowhere to go.
type keysLinks struct {
	First, Prev, Next, Last string
}

// links returns p's navigation: first and last pages, and the pages before
// and after it, keeping the search, the limit and the refresh of base.
func (p *keysPage) links(base url.Values) keysLinks {
	nav := func(set func(url.Values)) string {
		v := url.Values{}
		for _, name := range []string{"informer", "q", "match", "limit", "refresh"} {
			if base.Has(name) {
				v.Set(name, base.Get(name))
			}
		}
		set(v)
		return "?" + v.Encode()
	}
	first := nav(func(url.Values) {})
	last := nav(func(v url.Values) { v.Set("last", "1") })
	var l keysLinks
	if p.HasPrev {
		l.First, l.Prev = first, last // an empty page past the end: back to the last one
		if len(p.Keys) > 0 {
			l.Prev = nav(func(v url.Values) { v.Set("before", p.Keys[0]) })
		}
	}
	if p.HasNext {
		l.Last, l.Next = last, first // an empty page before the start: on to the first one
		if len(p.Keys) > 0 {
			l.Next = nav(func(v url.Values) { v.Set("after", p.Keys[len(p.Keys)-1]) })
		}
	}
	return l
}

// keyHref is the link to one key's object.
func keyHref(informerName, key string) string {
	return "?" + url.Values{"informer": {informerName}, "key": {key}}.Encode()
}
