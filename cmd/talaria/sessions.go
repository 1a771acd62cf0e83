package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/apiview"
	"github.com/talaria-agent/talaria/internal/slicesx"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/storeopen"
)

const sessionsUsage = `Usage:
  talaria sessions list [--limit N] [--json]
  talaria sessions show ID [--all] [--json]     messages, lineage and child sessions (--all: archived rows too)
  talaria sessions search QUERY [--session ID] [--limit N] [--json]
  talaria sessions delete ID [--force]
  talaria sessions compact ID                   compress the session's context now

'talaria sessions COMMAND --help' shows one command's flags and examples.
`

var sessionsHelp = cmdHelp{
	name:  "sessions",
	usage: "list|show|search|delete|compact ...",
	about: strings.TrimPrefix(sessionsUsage, "Usage:\n"),
	examples: []string{
		"talaria sessions list",
		"talaria sessions show 20260801-101500-a1b2c3d4e5 --json",
	},
}

// sessionsSub is one sessions subcommand: its help and what it needs.
var sessionsSubs = map[string]cmdHelp{
	"list": {name: "sessions list", usage: "[--limit N] [--json]",
		about:    "Lists sessions, most recently updated first.",
		examples: []string{"talaria sessions list --limit 5", "talaria sessions list --json | jq '.[0].id'"}},
	"show": {name: "sessions show", usage: "ID [--all] [--json]",
		about:    "Shows a session's messages, usage, cost and compression lineage. --all includes rows compressed away.",
		examples: []string{"talaria sessions show 20260801-101500-a1b2c3d4e5", "talaria sessions show 20260801-101500-a1b2c3d4e5 --all --json"}},
	"search": {name: "sessions search", usage: "QUERY [--session ID] [--limit N] [--json]",
		about:    "Full-text search over every message (archived ones too), newest first.",
		examples: []string{`talaria sessions search "failing test"`, "talaria sessions search lease --session 20260801-101500-a1b2c3d4e5"}},
	"delete": {name: "sessions delete", usage: "ID [--force]",
		about: `Deletes a session and its messages. A session with a running turn is not
deleted (exit 8) unless --force, which interrupts that turn first.`,
		examples: []string{"talaria sessions delete 20260801-101500-a1b2c3d4e5"}},
	"compact": {name: "sessions compact", usage: "ID [flags]",
		about: `Compresses the session's context now (see "Long sessions" in the README).
The provider flags choose the model that writes the summary.`,
		examples: []string{"talaria sessions compact 20260801-101500-a1b2c3d4e5"}},
}

var sessionsAliases = map[string]string{"ls": "list", "rm": "delete"}

func (c *cli) sessionsCmd(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, sessionsUsage)
		return exitUsage
	}
	if wantsHelp(args) {
		c.printHelp(sessionsHelp.flags(), sessionsHelp)
		return exitOK
	}
	sub, h, code, done := c.subcommand(sessionsHelp, sessionsSubs, sessionsAliases, args[0])
	if done {
		return code
	}
	fs := h.flags()
	var (
		jsonOut       *bool
		limit         *int
		all, force    *bool
		sessionFilter *string
		rf            routeFlags
	)
	switch sub {
	case "list":
		limit = fs.Int("limit", 0, "how many to list (default 50)")
	case "show":
		all = fs.Bool("all", false, "show archived (compressed-away) rows too")
	case "search":
		limit = fs.Int("limit", 0, "how many matches (default 20)")
		sessionFilter = fs.String("session", "", "search only this session")
	case "delete":
		force = fs.Bool("force", false, "interrupt a running turn of the session, then delete it")
	case "compact":
		rf.register(fs)
	}
	if sub != "compact" {
		databaseFlag(fs, &rf.database)
	}
	if sub != "delete" && sub != "compact" {
		jsonOut = fs.Bool("json", false, "print JSON")
	}
	if code, done := c.parseFlags(fs, h, interleaved(args[1:])); done {
		return code
	}
	pos := fs.Args()
	// A missing argument is said before the database is looked for.
	if len(pos) == 0 && sub != "list" {
		what := "a session id"
		if sub == "search" {
			what = "a query"
		}
		return c.usageError(h, "needs %s", what)
	}
	if sub == "compact" {
		return c.compactCmd(ctx, &rf, strings.Join(pos, " "))
	}
	st, code, ok := c.sessionsStore(ctx, sub, rf.database, jsonOut != nil && *jsonOut)
	if !ok {
		return code
	}
	defer st.Close()

	arg := strings.Join(pos, " ")
	switch sub {
	case "list":
		return c.sessionsList(ctx, st, *limit, *jsonOut)
	case "show":
		return c.sessionsShow(ctx, st, arg, *all, *jsonOut)
	case "search":
		return c.sessionsSearch(ctx, st, arg, *sessionFilter, *limit, *jsonOut)
	}
	return c.deleteSession(ctx, st, arg, *force)
}

// sessionsStore opens the database for sessions command sub: list and show
// read-only; delete writes; search writes only to bring its index up to
// date (read-only when another process holds the write lock). A fresh
// install's list prints that there are no sessions and creates nothing.
// !ok: it printed what went wrong or that there is nothing (code).
func (c *cli) sessionsStore(ctx context.Context, sub, database string, jsonOut bool) (store.Store, int, bool) {
	cfg, err := c.loadConfig()
	if err != nil {
		return nil, c.fail(exitUsage, "%v", err), false
	}
	st, err := c.openStoreFor(ctx, cfg, database, sub != "delete" && sub != "search")
	if err != nil && sub == "search" {
		// Search first indexes the newest rows, which needs the write
		// lock; without it, search the index as it is.
		st, err = c.openStoreFor(ctx, cfg, database, true)
	}
	var missing *storeopen.MissingError
	if errors.As(err, &missing) && sub == "list" && defaultDatabase(cfg, database) {
		// A fresh install: nothing to list, and nothing is created. A
		// path the user named that holds no database is an error below.
		if jsonOut {
			return nil, c.printJSON([]sessionOut{}), false
		}
		fmt.Fprintf(c.stdout, "no sessions yet (no database at %s; the first `talaria run` creates it)\n", missing.Path)
		return nil, exitOK, false
	}
	if err != nil {
		return nil, c.fail(exitOther, "%v", err), false
	}
	return st, exitOK, true
}

// sessionsList prints the newest sessions (limit, default 50).
func (c *cli) sessionsList(ctx context.Context, st store.Store, limit int, jsonOut bool) int {
	list, err := st.ListSessions(ctx, store.ListOptions{Limit: limit})
	if err != nil {
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	models, err := st.SessionModels(ctx, ids)
	if err != nil {
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	if jsonOut {
		out := slicesx.Map(list, sessionJSON)
		for i := range out {
			for _, u := range models[out[i].ID] {
				out[i].Models = append(out[i].Models, api.Model(u))
			}
		}
		return c.printJSON(out)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "no sessions yet")
		return exitOK
	}
	tw := c.table("ID\tUPDATED\tMSGS\tMODEL\tTITLE")
	children := 0
	for _, s := range list {
		// Subagent and review sessions belong under their parent
		// (sessions show PARENT draws the tree), not at top level.
		if s.Kind == store.SessionSubagent || s.Kind == store.SessionReview {
			children++
			continue
		}
		title := s.Title
		if s.Kind != "" {
			title = "[" + s.Kind + " of " + s.ParentID + "] " + title
		} else if !s.Live() {
			title += " [ended: " + s.EndReason + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.ID, s.UpdatedAt.Local().Format("2006-01-02 15:04"), s.MessageCount, modelsCell(s, models[s.ID]), clip(title, 60))
	}
	_ = tw.Flush()
	if children > 0 {
		fmt.Fprintf(c.stdout, "(%d subagent/review sessions not listed: `talaria sessions show PARENT` shows them in its tree; --json lists every session)\n", children)
	}
	return exitOK
}

// sessionsShow prints session id: its lineage, subagent tree, spend and
// messages (archived ones too with all).
func (c *cli) sessionsShow(ctx context.Context, st store.Store, id string, all, jsonOut bool) int {
	s, err := st.GetSession(ctx, id)
	if err != nil {
		return c.lookupExit(id, err)
	}
	rows, err := st.Messages(ctx, id, store.MessageQuery{IncludeArchived: all})
	if err != nil {
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	chain := lineage(ctx, st, s)
	tree, err := childTree(ctx, st, s.ID)
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	spend, err := agent.SpendOf(ctx, st, s.ID)
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	hs, err := handoffsOf(ctx, st, s.ID)
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	if jsonOut {
		return c.printJSON(map[string]any{"session": sessionJSON(*s), "lineage": chain, "children": tree,
			"spend": spend, "handoffs": hs, "messages": slicesx.Map(rows, messageJSON)})
	}
	printSession(c.stdout, s, chain, rows, func(w io.Writer) { printChildren(w, spend, tree); printHandoffs(w, hs) })
	return exitOK
}

// sessionsSearch prints the full-text matches of q (in one session when
// sessionFilter is set).
func (c *cli) sessionsSearch(ctx context.Context, st store.Store, q, sessionFilter string, limit int, jsonOut bool) int {
	hits, err := st.Search(ctx, q, store.SearchOptions{SessionID: sessionFilter, Limit: limit})
	if err != nil {
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	if jsonOut {
		return c.printJSON(slicesx.Map(hits, apiview.SearchHit))
	}
	if len(hits) == 0 {
		fmt.Fprintln(c.stdout, "no matches")
	}
	for _, h := range hits {
		fmt.Fprintf(c.stdout, "%s #%d %s %s: %s\n", h.SessionID, h.Seq, h.CreatedAt.Local().Format("2006-01-02 15:04"), h.Role, oneLine(h.Snippet))
	}
	return exitOK
}

// lookupExit reports a failed session lookup: an unknown id is a usage
// mistake (exit 2), a database failure exit 1 with store.Describe's line.
func (c *cli) lookupExit(id string, err error) int {
	if errors.Is(err, store.ErrNotFound) {
		return c.fail(exitUsage, "%s", sessionLookupError(id, err))
	}
	return c.fail(exitOther, "%s", store.Describe(err))
}

// compactCmd compresses a session's context now.
func (c *cli) compactCmd(ctx context.Context, rf *routeFlags, id string) int {
	// An unknown session is said as such before any provider is needed.
	if cfg, err := c.loadConfig(); err == nil {
		st, err := c.openStoreFor(ctx, cfg, rf.database, true)
		var missing *storeopen.MissingError
		if errors.As(err, &missing) {
			return c.fail(exitUsage, "no session %q: %v", id, missing)
		}
		if err == nil {
			_, gerr := st.GetSession(ctx, id)
			_ = st.Close()
			if gerr != nil {
				return c.lookupExit(id, gerr)
			}
		}
	}
	a, err := c.setup(ctx, rf, refuseChanges{}, 5*time.Second)
	if err != nil {
		return c.setupExit(err)
	}
	defer a.Close()
	out, err := a.agent.Compact(ctx, id)
	switch {
	case errors.Is(err, compact.ErrNothingToCompress):
		fmt.Fprintf(c.stdout, "session %s: nothing to compress yet\n", id)
		return exitOK
	case isBusy(err):
		return c.fail(exitBusy, "%s", busyLine(id, err))
	case err != nil:
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	fmt.Fprintf(c.stdout, "compressed session %s: %s\n", id, compactLine(out))
	return exitOK
}

// interleaved lets flags follow positional arguments (sessions show ID --json).
func interleaved(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && takesValue(a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func takesValue(flagName string) bool {
	switch strings.TrimLeft(flagName, "-") {
	case "json", "all", "yes", "verbose", "force", "c", "continue":
		return false
	}
	return true
}

// jsonEach converts each of in to its --json form. The list is never nil,
// table starts a table on stdout under header (tab-separated columns);
// the caller flushes it.
func (c *cli) table(header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

func (c *cli) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return c.fail(exitOther, "%v", err)
	}
	return exitOK
}

func sessionLookupError(id string, err error) string {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Sprintf("there is no session %q (talaria sessions list shows them)", id)
	}
	return err.Error()
}

// lineage lists the compression chain around s (store.Lineage): ancestors,
// s, then its continuations, as "id (end reason)". A walk the store cut
// short shows what it found.
func lineage(ctx context.Context, st store.Sessions, s *store.Session) []string {
	sessions, _ := store.Lineage(ctx, st, s)
	chain := make([]string, len(sessions))
	for i, x := range sessions {
		chain[i] = describe(x)
		if x == s {
			chain[i] += " ← this one"
		}
	}
	return chain
}

func describe(s *store.Session) string {
	if s.Live() {
		return s.ID + " (live)"
	}
	return s.ID + " (ended: " + s.EndReason + ")"
}

func printSession(w io.Writer, s *store.Session, chain []string, rows []store.Message, extra ...func(io.Writer)) {
	fmt.Fprintf(w, "session %s  %q\n", s.ID, s.Title)
	if s.Kind != "" {
		fmt.Fprintf(w, "%s of session %s\n", s.Kind, s.ParentID)
	}
	fmt.Fprintf(w, "model %s/%s · started %s · workspace %s\n", s.Provider, s.Model, s.StartedAt.Local().Format("2006-01-02 15:04"), s.Cwd)
	fmt.Fprintf(w, "%d API calls · %d in / %d out tokens", s.APICalls, s.Usage.PromptTokens(), s.Usage.OutputTokens)
	if s.CostUSD > 0 {
		fmt.Fprintf(w, " · $%.4f", s.CostUSD)
	}
	fmt.Fprintln(w)
	if len(chain) > 1 {
		fmt.Fprintln(w, "lineage: "+strings.Join(chain, " → "))
	}
	for _, f := range extra {
		f(w)
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		tag := string(r.Role)
		if r.Kind != store.RowNormal {
			tag += " [" + string(r.Kind) + "]"
		}
		if r.Archived {
			tag += " [archived]"
		}
		fmt.Fprintf(w, "#%d %s", r.Seq, tag)
		if r.Role == llm.RoleTool {
			fmt.Fprintf(w, " %s (%s)", r.ToolName, r.ToolCallID)
			if r.IsError {
				fmt.Fprint(w, " error")
			}
		}
		fmt.Fprintln(w)
		text := r.Text()
		if r.Kind == store.RowTodo {
			text = r.APIContent // the plan as the model read it, not its JSON
		}
		if t := strings.TrimSpace(text); t != "" {
			fmt.Fprintln(w, indent(clipLines(t, 12)))
		}
		for _, tc := range r.ToolCalls {
			fmt.Fprintf(w, "  → %s %s (%s)\n", tc.Name, clip(compactArgs(tc.Arguments), 160), tc.ID)
		}
	}
}

func clipLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-n)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// sessionOut is a session for scripts: the public api.Session (the HTTP
// API's shape), plus the keys the CLI printed before that shape was
// shared, kept for one release.
type sessionOut struct {
	api.Session
	// Deprecated: parent_id.
	ParentSessionID string `json:"parent_session_id"`
	// Deprecated: workspace.
	Cwd string `json:"cwd"`
	// Deprecated: messages.
	MessageCount int64 `json:"message_count"`
	// Deprecated: usage.api_calls.
	APICalls int64 `json:"api_calls"`
	// Deprecated: usage.cost_usd.
	CostUSD float64 `json:"cost_usd"`
}

// modelsCell is the MODEL column of sessions list: every model the session
// answered with (provider/ prefixed when not the session's provider), or
// its configured model before any answer.
func modelsCell(s store.Session, used []store.ModelUse) string {
	if len(used) == 0 {
		return s.Model
	}
	names := make([]string, len(used))
	for i, u := range used {
		names[i] = u.Model
		if u.Provider != s.Provider {
			names[i] = u.Provider + "/" + u.Model
		}
	}
	return strings.Join(names, ", ")
}

func sessionJSON(s store.Session) sessionOut {
	return sessionOut{Session: apiview.Session(&s, s.Cwd),
		ParentSessionID: s.ParentID, Cwd: s.Cwd, MessageCount: s.MessageCount, APICalls: s.APICalls, CostUSD: s.CostUSD}
}

func messageJSON(r store.Message) api.Message { return apiview.Message(&r) }
