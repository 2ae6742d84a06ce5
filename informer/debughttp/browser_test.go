//go:build unix

package debughttp_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer/debughttp"
)

// TestBrowser renders the page in headless Chromium (`make test` sets
// CHROMIUM to the one scripts/chromium-binary.sh finds; CI and `make
// test-browser` have the script install Debian's package first) at
// 1280 px and checks what a person would see: nothing wider than the
// window, the unsynced informer and the stuck handler flagged in colour,
// and the links (keys, pages, objects, metrics) leading somewhere. With
// DEBUGHTTP_SCREENSHOTS set to a directory it leaves its screenshots there.
func TestBrowser(t *testing.T) {
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		t.Skip("CHROMIUM is not set: the browser test needs headless Chromium; run `make test-browser` (it installs Debian's chromium with apt-get if none is found), or set CHROMIUM to a Chromium binary")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("CHROMIUM=%s is not installed (%v): run `make test-browser` (it installs Debian's chromium with apt-get), or set CHROMIUM to a Chromium binary", bin, err)
	}
	shots := os.Getenv("DEBUGHTTP_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	srv := richFixture(t)
	base := srv.URL + "/debug/informers"
	b := startBrowser(t, bin, 1280, 900)

	t.Run("overview", func(t *testing.T) {
		b.t = t
		b.navigate(base)
		b.screenshot(filepath.Join(shots, "overview-1280.png"))
		var got overviewState
		b.eval(overviewJS, &got)
		checkNoOverflow(t, got.layout)
		cards := map[string]cardState{}
		for _, c := range got.Cards {
			cards[c.Name] = c
		}
		require.Len(t, cards, 5)
		assert.Contains(t, cards[richPods].Class, "error", "the unsynced informer's card")
		assert.Contains(t, cards[richEndpoints].Class, "error", "the card of the informer with a stuck handler")
		assert.Contains(t, cards[richConfigs].Class, "warning", "the restored informer's card")
		assert.Equal(t, "card ok", cards[richServices].Class)
		assert.NotEqual(t, cards[richServices].Border, cards[richPods].Border, "an unsynced informer's card is coloured")
		assert.NotEqual(t, cards[richPods].Border, cards[richConfigs].Border, "errors and warnings differ")

		// The flags are visible: their computed colours differ from the
		// healthy ones.
		require.NotEmpty(t, got.Unsynced, "a .flag-unsynced badge")
		assert.NotEqual(t, got.Synced, got.Unsynced, "not synced vs synced badge background")
		require.NotEmpty(t, got.StuckRow, "a stuck handler row")
		assert.NotEqual(t, got.IdleRow, got.StuckRow, "stuck vs idle handler row background")
		require.NotEmpty(t, got.StuckBadge)
		assert.NotEqual(t, got.Synced, got.StuckBadge)
		require.NotEmpty(t, got.Restored)
		assert.NotEqual(t, got.Synced, got.Restored)
		require.NotEmpty(t, got.Stale, "a .flag-stale badge: the source down, the cache synced")
		assert.NotEqual(t, got.Synced, got.Stale)
		assert.Regexp(t, `^synced · source down [0-9.hms]+, stale up to [0-9.hms]+$`, got.StaleText)
		assert.Contains(t, cards[richSecrets].Class, "error", "the card of the informer whose source is down")
		assert.GreaterOrEqual(t, got.Attention, 3, "problems listed at the top")

		// The links resolve.
		links := map[string]string{}
		for _, l := range got.Links {
			links[l.Text] = l.Href
		}
		for _, text := range []string{"metrics", "JSON", fmt.Sprintf("browse %d keys →", richServiceCount), "30 s"} {
			require.Contains(t, links, text, "a link %q", text)
			status, _, _ := get(t, links[text])
			assert.Equal(t, http.StatusOK, status, "%s → %s", text, links[text])
		}
		b.resize(800, 900)
		b.eval(overviewJS, &got)
		checkNoOverflow(t, got.layout)
		b.screenshot(filepath.Join(shots, "overview-800.png"))
		b.resize(1280, 900)
	})

	t.Run("keys", func(t *testing.T) {
		b.t = t
		keys := base + "?informer=" + richServices
		b.navigate(keys)
		b.screenshot(filepath.Join(shots, "keys-1280.png"))
		var got keysState
		b.eval(keysJS, &got)
		checkNoOverflow(t, got.layout)
		require.Len(t, got.Keys, debughttp.DefaultKeysLimit)
		assert.Equal(t, 1, got.Start)
		require.NotEmpty(t, got.Next, "a next page")
		assert.Empty(t, got.Prev, "no page before the first")

		// A key's link opens its object.
		status, ctype, body := get(t, got.Keys[0].Href)
		require.Equal(t, http.StatusOK, status, got.Keys[0].Href)
		assert.Equal(t, "application/json", ctype)
		ns, name, _ := strings.Cut(got.Keys[0].Text, "/")
		assert.Contains(t, body, fmt.Sprintf(`"Namespace":%q,"Name":%q`, ns, name))

		// The next page follows on, and links back.
		b.navigate(got.Next)
		var next keysState
		b.eval(keysJS, &next)
		require.Len(t, next.Keys, debughttp.DefaultKeysLimit)
		assert.Equal(t, debughttp.DefaultKeysLimit+1, next.Start)
		assert.Less(t, got.Keys[len(got.Keys)-1].Text, next.Keys[0].Text)
		require.NotEmpty(t, next.Prev)
		status, _, body = get(t, next.Prev)
		require.Equal(t, http.StatusOK, status)
		assert.Contains(t, body, ">"+got.Keys[0].Text+"<", "previous of the second page is the first")

		// A search, then the last page of it.
		b.navigate(keys + "&" + url.Values{"q": {"averyvery"}}.Encode())
		b.screenshot(filepath.Join(shots, "keys-search-1280.png"))
		var found keysState
		b.eval(keysJS, &found)
		checkNoOverflow(t, found.layout)
		assert.Len(t, found.Keys, richServiceCount/500)
		for _, k := range found.Keys {
			assert.Contains(t, k.Text, "averyvery")
		}
	})
	t.Logf("screenshots in %s", shots)
}

// layout is what checkNoOverflow reads.
type layout struct {
	ScrollWidth, ClientWidth int
	Wide                     []string // elements past the right edge
}

func checkNoOverflow(t *testing.T, l layout) {
	t.Helper()
	assert.LessOrEqual(t, l.ScrollWidth, l.ClientWidth, "no horizontal scrolling")
	assert.Empty(t, l.Wide, "elements past the window's right edge")
}

type cardState struct {
	Name, Class, Border string
}

type link struct{ Text, Href string }

type overviewState struct {
	layout
	Cards                               []cardState
	Unsynced, Synced, StuckRow, IdleRow string
	StuckBadge, Restored                string
	Stale, StaleText                    string
	Attention                           int
	Links                               []link
}

type keysState struct {
	layout
	Keys       []link
	Start      int
	Next, Prev string
}

// layoutJS measures the document: its widths, and the elements that
// stick out past the right edge of the window.
const layoutJS = `
const de = document.documentElement;
const wide = [...document.querySelectorAll("body *")]
	.filter(e => e.getBoundingClientRect().right > de.clientWidth + 0.5)
	.map(e => e.tagName.toLowerCase() + (e.className ? "." + e.className : "")).slice(0, 10);
const layout = {ScrollWidth: de.scrollWidth, ClientWidth: de.clientWidth, Wide: wide};
const bg = sel => { const e = document.querySelector(sel); return e ? getComputedStyle(e).backgroundColor : ""; };
const links = sel => [...document.querySelectorAll(sel)].map(a => ({Text: a.textContent.trim(), Href: a.href}));
`

const overviewJS = `(() => {` + layoutJS + `
return Object.assign(layout, {
	Cards: [...document.querySelectorAll("section.card")].map(c => ({
		Name: c.dataset.informer, Class: c.className, Border: getComputedStyle(c).borderLeftColor})),
	Unsynced: bg(".flag-unsynced"), Synced: bg(".badge.ok"),
	StuckRow: bg("tr.stuck td"), IdleRow: bg("tr:not(.stuck) td"),
	StuckBadge: bg(".flag-stuck"), Restored: bg(".flag-restored"),
	Stale: bg(".flag-stale"), StaleText: (document.querySelector(".flag-stale") || {}).textContent || "",
	Attention: document.querySelectorAll("#attention li").length,
	Links: links("a[href]"),
});
})()`

const keysJS = `(() => {` + layoutJS + `
const ol = document.querySelector("ol.keys");
const href = sel => { const a = document.querySelector(sel); return a ? a.href : ""; };
return Object.assign(layout, {
	Keys: links("ol.keys a"), Start: ol ? ol.start : 0,
	Next: href("a.next-link"), Prev: href("a.prev-link"),
});
})()`
