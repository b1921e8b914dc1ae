// Package console is Saucer's web console: one page, embedded in the
// binary, over the server's HTTP API and event streams (package server).
// It holds no logic of its own beyond showing what the API says and
// sending what a person decides: anything it needs, the API offers to
// programs too.
//
// The page is a small Preact application written in TypeScript and
// bundled by esbuild (web/, `npm ci && npm run build`); the bundle in
// web/dist is committed and embedded, so the binary needs no network and
// no Node.js. docs/console.md says why this stack.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed web/dist
var dist embed.FS

// asset is one embedded file with its validator.
type asset struct {
	body  []byte
	etag  string
	ctype string
}

var assets = func() map[string]asset {
	out := map[string]asset{}
	sub, err := fs.Sub(dist, "web/dist")
	if err != nil {
		panic(err)
	}
	fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ctype := "application/octet-stream"
		switch path.Ext(p) {
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".html":
			ctype = "text/html; charset=utf-8"
		}
		out[p] = asset{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: ctype}
		return nil
	})
	return out
}()

// Size is the embedded assets' size in bytes.
func Size() int {
	n := 0
	for _, a := range assets {
		n += len(a.body)
	}
	return n
}

// policy is the page's Content-Security-Policy: only its own script and
// styles (style attributes place the click marks on screenshots), images
// from the API or inline, nothing framed, no form posts elsewhere.
const policy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Handler serves the console at / (its assets under /assets/) and passes
// everything else to api: the server's Handler, whose /api/ the page
// calls and whose /ws devices connect to.
func Handler(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := ""
		switch {
		case r.URL.Path == "/" || r.URL.Path == "/index.html":
			name = "index.html"
		case strings.HasPrefix(r.URL.Path, "/assets/"):
			name = strings.TrimPrefix(r.URL.Path, "/assets/")
			if name == "index.html" {
				name = ""
			}
		default:
			api.ServeHTTP(w, r)
			return
		}
		a, ok := assets[name]
		if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.ctype)
		h.Set("ETag", a.etag)
		h.Set("Cache-Control", "no-cache") // revalidated: a new binary serves new assets at once
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if name == "index.html" {
			h.Set("Content-Security-Policy", policy)
			h.Set("X-Frame-Options", "DENY")
		}
		if r.Header.Get("If-None-Match") == a.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		w.Write(a.body)
	})
}
