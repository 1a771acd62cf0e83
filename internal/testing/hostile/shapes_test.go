package hostile

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/gateway/client"
)

// One session, read three ways — the HTTP API, the Go client and the
// operator's `talaria sessions show --json` on the same database — gives
// the same public shape (api.Session): the same keys with the same
// values, save workspace, which is the workspace's name over the API and
// its path in the CLI. The CLI's earlier keys stay beside it for one
// release.
func TestOneSessionShape(t *testing.T) {
	s := startServe(t, options{Principals: []string{"alice"}})
	tok := s.Tokens["alice"]
	sid := s.newSession(tok)
	s.finished(tok, sid, "hello")

	code, raw := s.do("GET", "v1/sessions/"+sid, tok, "")
	if code != 200 {
		t.Fatalf("GET session: %d %s", code, raw)
	}
	var overAPI api.Session
	mustDecode(t, raw, &overAPI)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &client.Client{BaseURL: strings.TrimSuffix(s.URL, "/"), Token: tok}
	viaClient, err := cl.Session(ctx, sid)
	if err != nil {
		t.Fatalf("client: %v", err)
	}

	out, err := s.cli("sessions", "show", sid, "--json")
	if err != nil {
		t.Fatalf("sessions show --json: %v\n%s", err, out)
	}
	var shown struct {
		Session json.RawMessage `json:"session"`
	}
	mustDecode(t, []byte(out), &shown)
	var inCLI api.Session
	mustDecode(t, shown.Session, &inCLI)

	if overAPI.ID != sid || overAPI.Messages < 2 || overAPI.Usage.APICalls != 1 || overAPI.Usage.InputTokens == 0 {
		t.Fatalf("the API's session is not this turn's: %s", raw)
	}
	if viaClient.UpdatedAt.Equal(overAPI.UpdatedAt) {
		viaClient.UpdatedAt = overAPI.UpdatedAt // same instant, maybe another zone
	}
	if !sameSession(viaClient, overAPI) {
		t.Errorf("the Go client's session differs from the API's:\n%+v\n%+v", viaClient, overAPI)
	}
	cli := inCLI
	cli.Workspace, cli.Busy, cli.Queued = overAPI.Workspace, overAPI.Busy, overAPI.Queued
	if !sameSession(cli, overAPI) {
		t.Errorf("the CLI's session differs from the API's:\nCLI %s\nAPI %s", shown.Session, raw)
	}
	if inCLI.Workspace != s.WS {
		t.Errorf("the CLI's workspace = %q, want the path %q", inCLI.Workspace, s.WS)
	}

	// Every key the API sends is in the CLI's object; the CLI adds only
	// its deprecated aliases (and keys the API leaves empty).
	var apiKeys, cliKeys map[string]json.RawMessage
	mustDecode(t, raw, &apiKeys)
	mustDecode(t, shown.Session, &cliKeys)
	for k := range apiKeys {
		if _, ok := cliKeys[k]; !ok {
			t.Errorf("the CLI's session lacks the API's key %q", k)
		}
	}
	extra := []string{}
	for k := range cliKeys {
		if _, ok := apiKeys[k]; !ok {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if want := []string{"api_calls", "cost_usd", "cwd", "message_count", "parent_session_id"}; !slices.Equal(extra, want) {
		t.Errorf("the CLI's keys beyond the API's = %v, want the deprecated aliases %v", extra, want)
	}
	if got := slices.Sorted(maps.Keys(apiKeys)); !slices.Contains(got, "usage") || !slices.Contains(got, "messages") {
		t.Errorf("API keys = %v", got)
	}
}

func sameSession(a, b api.Session) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func mustDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, b)
	}
}
