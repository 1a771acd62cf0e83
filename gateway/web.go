package gateway

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/talaria-agent/talaria/api"
)

//go:embed web
var webFiles embed.FS

// webHandler serves the embedded web page and its static files.
func webHandler() http.Handler {
	sub, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, errf(http.StatusMethodNotAllowed, api.CodeBadRequest, "the web page only answers GET"))
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		files.ServeHTTP(w, r)
	})
}
