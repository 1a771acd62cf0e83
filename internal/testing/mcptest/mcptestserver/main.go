// Command mcptestserver serves the mcptest server over stdio (default) or,
// with -http ADDR, over streamable HTTP (or, adding -sse, HTTP+SSE) at
// http://ADDR/mcp; it then prints that URL on its first stdout line.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/talaria-agent/talaria/internal/testing/mcptest"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	sse := flag.Bool("sse", false, "with -http: serve the older HTTP+SSE transport instead")
	flag.Parse()
	if *addr == "" {
		if err := mcptest.NewServer(true).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	srv := mcptest.NewServer(false)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	get := func(*http.Request) *sdk.Server { return srv.Server }
	var h http.Handler = sdk.NewStreamableHTTPHandler(get, nil)
	if *sse {
		h = sdk.NewSSEHandler(get, nil)
	}
	if tok := os.Getenv(mcptest.TokenEnv); tok != "" {
		// Proves the client sends its configured headers.
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+tok {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	fmt.Fprintf(os.Stdout, "http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, h))
}
