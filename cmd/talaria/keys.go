package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/store"
)

var keysHelp = cmdHelp{
	name:  "keys",
	usage: "status|reset [PROVIDER] [--json]",
	about: `Shows and lifts the cooldowns ("benches") of API keys. A key refused by a
provider (401/403: 5 minutes; out of credit: 1 hour; rate limited: until the
provider's reset) is benched for that provider and endpoint only, and the
bench survives restarts. After fixing a key or adding credit, reset lifts it.

  status [PROVIDER]   list benched keys (by fingerprint, never the key)
  reset [PROVIDER]    lift the cooldowns of PROVIDER's keys, or of every key`,
	examples: []string{
		"talaria keys status",
		"talaria keys status --json",
		"talaria keys reset openai",
	},
}

// benchedKey is one cooldown as status shows it.
type benchedKey struct {
	Provider string    `json:"provider"`
	BaseURL  string    `json:"base_url"`
	KeyID    string    `json:"key_id"`
	Key      string    `json:"key,omitempty"` // "key 2 of 3" when the key is configured
	Reason   string    `json:"reason"`
	Until    time.Time `json:"until"`
}

func (c *cli) keysCmd(ctx context.Context, args []string) int {
	fs := keysHelp.flags()
	jsonOut := fs.Bool("json", false, "print JSON")
	var dbURL string
	databaseFlag(fs, &dbURL)
	if code, done := c.parseFlags(fs, keysHelp, interleaved(args)); done {
		return code
	}
	pos := fs.Args()
	if len(pos) == 0 || len(pos) > 2 {
		return c.usageError(keysHelp, "want status or reset, and at most one provider")
	}
	sub, only := pos[0], ""
	if len(pos) == 2 {
		only = pos[1]
	}
	if sub != "status" && sub != "reset" {
		return c.usageError(keysHelp, "unknown keys command %q", sub)
	}
	cfg, err := c.loadConfig()
	if err != nil {
		return c.fail(exitUsage, "%v", err)
	}
	st, err := c.openStoreFor(ctx, cfg, dbURL, sub == "status")
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	defer st.Close()
	list, err := benched(ctx, cfg, st, c.getenv, only)
	if err != nil {
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	if _, known := cfg.Providers[only]; only != "" && !known && len(list) == 0 {
		// A typo must not read as "nothing benched".
		return c.usageError(keysHelp, "no provider %q is configured (configured: %s)", only, strings.Join(cfg.ProviderNames(), ", "))
	}
	if sub == "reset" {
		for _, b := range list {
			if err := st.ClearCooldown(ctx, b.Provider, b.KeyID); err != nil {
				return c.fail(exitOther, "%s", store.Describe(err))
			}
		}
		if *jsonOut {
			return c.printJSON(map[string]any{"reset": list})
		}
		fmt.Fprintf(c.stdout, "lifted %d cooldown(s)\n", len(list))
		return exitOK
	}
	if *jsonOut {
		if list == nil {
			list = []benchedKey{}
		}
		return c.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "no key is benched")
		return exitOK
	}
	tw := c.table("PROVIDER\tENDPOINT\tKEY\tREASON\tUNTIL")
	for _, b := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.Provider, b.BaseURL, keyLabel(b), b.Reason, b.Until.Local().Format(time.DateTime))
	}
	_ = tw.Flush()
	return exitOK
}

func keyLabel(b benchedKey) string {
	if b.Key != "" {
		return b.Key + " [" + b.KeyID + "]"
	}
	return b.KeyID
}

// benched lists the cooldowns in force for the configured providers and
// for "custom" (every --base-url server), or for provider only.
func benched(ctx context.Context, cfg *config.Config, st store.Cooldowns, getenv func(string) string, only string) ([]benchedKey, error) {
	names := append(cfg.ProviderNames(), "custom")
	if only != "" {
		names = []string{only}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	now := time.Now()
	var out []benchedKey
	for _, name := range names {
		cds, err := st.Cooldowns(ctx, name, now)
		if err != nil {
			return nil, err
		}
		labels := map[string]string{}
		keys := cfg.Providers[name].KeyList(getenv)
		for i, k := range keys {
			labels[failover.KeyID(k)] = fmt.Sprintf("key %d of %d", i+1, len(keys))
		}
		for _, cd := range cds {
			out = append(out, benchedKey{Provider: cd.Provider, BaseURL: cd.BaseURL, KeyID: cd.KeyID,
				Key: labels[cd.KeyID], Reason: cd.Reason, Until: cd.Until})
		}
	}
	return out, nil
}
