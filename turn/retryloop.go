package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/transcript"
)

// retryLoop makes the API call and recovers from failures: it classifies
// each one and takes the one recovery the failover policy names — wait and
// retry, rotate the key, clamp the output cap, repair the request shape,
// compress, fall back to the next route (leaving the loop so the preflight
// gate runs again for the new model), or stop with a failure that says why.
func (e *Engine) retryLoop(ctx context.Context, st *state) (*llm.Response, verdict) {
	retries := 0
	sameClass := 0
	var lastClass failover.Class
	for attempt := 1; ; attempt++ {
		r := e.route(st)
		if v := e.allowed(ctx, st); v != proceed {
			return nil, v
		}
		if v := e.pickCredential(ctx, st); v != proceed {
			return nil, v
		}
		req := *st.req
		req.APIKey = st.cred.Key
		req.MaxTokens = e.maxTokens(st)
		st.res.APICalls++
		st.currentRoute().Calls++
		if st.obs != nil {
			e.observe(st, &Event{Kind: EventRequest, Attempt: st.res.APICalls, Request: st.req, EstimatedTokens: st.estimate})
		}
		if st.hooks.listening() {
			st.hooks.Emit(CallStarted{Provider: r.Provider.Name(), Model: r.Model, Attempt: st.res.APICalls, EstimatedTokens: st.estimate})
		}
		resp, partial, shown, cut, err := e.call(ctx, st, &req)
		if err == nil {
			if r.Pool != nil {
				r.Pool.Succeeded(st.cred)
			}
			st.currentRoute().Outcome = "ok"
			return resp, proceed
		}
		if ctx.Err() != nil {
			e.interruptStream(ctx, st, partial)
			e.observeStopped(st, err)
			return nil, finish
		}
		if shown {
			// Whatever the dead stream showed (text or thinking) is void:
			// the retry starts the answer afresh.
			st.hooks.emit(Discard{})
		}

		st.cutCall = cut
		c := e.classify(st, err)
		if c.Class == lastClass {
			sameClass++
		} else {
			lastClass, sameClass = c.Class, 1
		}
		canRotate := false
		if r.Pool != nil && st.hasCred {
			rotate, perr := r.Pool.Failed(ctx, st.cred, c)
			if perr != nil {
				e.log.Warn("could not record credential cooldown", "error", perr)
			}
			canRotate = rotate && r.Pool.Len() > 1
			if b, ok := r.Pool.Bench(st.cred); ok {
				st.bench = b
			}
		}
		a := failover.Attempt{
			Retries:        retries,
			MaxRetries:     e.cfg.Limits.MaxRetries,
			NoRetries:      e.cfg.Limits.NoRetries,
			SameClassFails: sameClass,
			CanRotate:      canRotate,
			CanFallback:    st.routeIdx+1 < len(e.cfg.Routes),
			Clamped:        st.clamped,
			Repaired:       st.repaired[c.Class],
			CanCompress:    e.cfg.Compressor != nil && st.budget.Allow(),
		}
		// Refused or unresolvable, nothing listens there: backoff does not
		// outlast that. One retry covers a server that is restarting; more
		// only delay the error (three cost ~11s at the default backoff).
		if c.Transport == llm.TransportConnect {
			a.MaxRetries = min(a.MaxRetries, 1)
		}
		// A bound that holds whatever the policy says: retries, rotations
		// and repairs of one call can never loop forever.
		if attempt > e.cfg.Limits.MaxRetries+maxRotations(r)+4 {
			e.decided(st, c, err, CallFailed{Decision: DecisionStop})
			e.fail(st, c, "Gave up after too many attempts")
			return nil, finish
		}
		action := failover.Decide(c, a)
		switch action {
		case failover.ActionRetry:
			retries++
			e.noteCutCall(ctx, st)
			d := e.cfg.Limits.Backoff.Delay(retries, c)
			e.decided(st, c, err, CallFailed{Decision: DecisionRetry, Wait: d, Retry: retries, MaxRetries: e.cfg.Limits.MaxRetries})
			if err := failover.Sleep(ctx, d); err != nil {
				e.interrupted(ctx, st)
				return nil, finish
			}
		case failover.ActionRotate:
			e.noteCutCall(ctx, st)
			st.hasCred = false
			e.decided(st, c, err, CallFailed{Decision: DecisionRotate})
		case failover.ActionClamp:
			st.clamped = true
			st.maxTokens = clampTo(c.OutputCapLimit, req.MaxTokens)
			e.decided(st, c, err, CallFailed{Decision: DecisionClamp, MaxTokens: st.maxTokens})
		case failover.ActionRepair:
			st.repaired[c.Class] = true
			e.repairShape(st, c.Class)
			e.decided(st, c, err, CallFailed{Decision: DecisionRepair})
			e.assemble(st)
		case failover.ActionCompress:
			e.decided(st, c, err, CallFailed{Decision: DecisionCompress})
			return nil, e.recoverOverflow(ctx, st, c)
		case failover.ActionFallback:
			e.decided(st, c, err, CallFailed{Decision: DecisionFallback})
			if e.fallback(st, c) {
				return nil, restart
			}
			e.fail(st, c, "")
			return nil, finish
		default: // ActionTerminate
			e.decided(st, c, err, CallFailed{Decision: DecisionStop})
			if c.Class == failover.ClassContextOverflow || c.Class == failover.ClassPayloadTooLarge {
				// No compression left: end compression_exhausted, saying why.
				return nil, e.recoverOverflow(ctx, st, c)
			}
			note := ""
			if c.Retryable && retries > 0 {
				note = fmt.Sprintf("Gave up after %d %s", retries, plural(retries, "retry", "retries"))
			}
			e.fail(st, c, note)
			return nil, finish
		}
	}
}

// call streams one API call, forwarding deltas to the hooks. partial is the
// text shown before a failure, which callers discard or keep (interrupt);
// shown says whether any delta, text or thinking, reached the hooks; cut is
// the large tool call a failed stream died inside, if any.
func (e *Engine) call(ctx context.Context, st *state, req *llm.Request) (resp *llm.Response, partial string, shown bool, cut *cutCall, err error) {
	var text strings.Builder
	var watch callWatch
	start := time.Now()
	st.lastTTFT = 0
	defer func() { st.lastLatency = time.Since(start) }()
	resp, err = llm.Collect(e.route(st).Provider.Stream(ctx, req), func(ev llm.Event) {
		watch.observe(ev)
		if st.lastTTFT == 0 && (ev.Type == llm.EventTextDelta || ev.Type == llm.EventReasoningDelta || ev.Type == llm.EventToolCallDelta) {
			st.lastTTFT = time.Since(start)
		}
		switch ev.Type {
		case llm.EventTextDelta:
			text.WriteString(ev.Text)
			shown = shown || ev.Text != ""
			st.hooks.textDelta(ev.Text)
		case llm.EventReasoningDelta:
			shown = shown || ev.Text != ""
			st.hooks.reasoningDelta(ev.Text)
		}
	})
	if err != nil {
		cut = watch.cut()
	}
	return resp, text.String(), shown, cut, err
}

// pickCredential chooses the key for the next call. With every key of the
// provider cooling down it falls back, or ends the turn saying when the
// first key returns.
// allowed asks Config.Allow about the next call; a refusal ends the turn
// before it is made.
func (e *Engine) allowed(ctx context.Context, st *state) verdict {
	if e.cfg.Allow == nil {
		return proceed
	}
	r := e.route(st)
	a := Allowance{Provider: r.Provider.Name(), Model: r.Model}
	if !r.Subscription {
		if usd, ok := st.model.Cost(llm.Usage{InputTokens: int64(st.estimate)}); ok {
			a.EstimatedUSD = usd
		}
	}
	err := e.cfg.Allow(ctx, a)
	if err == nil {
		return proceed
	}
	st.setExit(ExitSpendLimit, &Failure{Provider: a.Provider, Model: a.Model,
		Message: "Stopped before a model call: " + err.Error(), Detail: err.Error()})
	return finish
}

func (e *Engine) pickCredential(ctx context.Context, st *state) verdict {
	r := e.route(st)
	if r.Pool == nil || st.hasCred {
		return proceed
	}
	cred, err := r.Pool.Pick(ctx)
	if err == nil {
		st.cred, st.hasCred = cred, true
		return proceed
	}
	var cool *failover.AllCoolingDownError
	if !errors.As(err, &cool) {
		st.setExit(ExitCredentialsFailed, &Failure{Message: "Could not choose an API key: " + err.Error(), Detail: err.Error()})
		return finish
	}
	class, unverified := failover.CooldownClass(cool.Reason)
	c := failover.Classified{
		Class:    class,
		Provider: r.Provider.Name(),
		Model:    r.Model,
		Summary:  fmt.Sprintf("every %s key is cooling down until %s", r.Provider.Name(), cool.Until.Local().Format(time.TimeOnly)),
	}
	if e.fallback(st, c) {
		return restart
	}
	st.setExit(outcomeOf(class), &Failure{
		Class: class,
		// Only a rate limit clears by itself; a refused key or an empty
		// account is still refused when its cooldown ends.
		Retryable:         class == failover.ClassRateLimit || unverified,
		Provider:          r.Provider.Name(),
		Model:             r.Model,
		BillingUnverified: unverified,
		Message:           "No request was sent. " + coolingMessage(r.Provider.Name(), class, unverified, cool.Until),
		Bench:             &KeyBench{Until: cool.Until, SetAt: cool.SetAt, NotSent: true},
	})
	return finish
}

// coolingMessage tells a person what to do when every key of a provider is
// benched: when the first returns, and whether waiting for it helps.
func coolingMessage(provider string, class failover.Class, unverified bool, until time.Time) string {
	at := until.Local().Format(time.DateTime)
	switch {
	case unverified:
		return fmt.Sprintf("Every %s API key is briefly benched after a usage-exhausted answer that may also have been a content filter; the first returns at %s. Check your usage page, and if quota remains suspect the prompt content.", provider, at)
	case class == failover.ClassAuth || class == failover.ClassAuthPermanent:
		return fmt.Sprintf("Every %s API key was refused recently and is benched until %s; waiting will not fix a bad key. Check or replace the keys, or configure a fallback provider.", provider, at)
	case class == failover.ClassBilling:
		return fmt.Sprintf("Every %s API key hit an out-of-credit error and is benched until %s. Add credit and run again after that time, add a key of another account, or configure a fallback provider.", provider, at)
	}
	return fmt.Sprintf("Every %s API key is cooling down after %s failures; the first one returns at %s. Wait until then, add another key, or configure a fallback provider.", provider, class, at)
}

// classify turns a failed call into a classified error, with the session
// size the overflow heuristics need.
func (e *Engine) classify(st *state, err error) failover.Classified {
	r := e.route(st)
	// The adapter's error names its wire API and base URL itself.
	in := failover.InputFromError(err)
	if in.Provider == "" {
		in.Provider = r.Provider.Name()
	}
	if in.Model == "" {
		in.Model = r.Model
	}
	in.NoKeyHint = r.NoKeyHint
	in.ContextTokens = st.estimate
	in.ContextWindow = st.model.Window
	in.Messages = len(st.req.Messages)
	return failover.Classify(in)
}

// fallback switches to the next route of the chain. The caller leaves the
// retry loop so the preflight gate measures the request against the new
// model's window.
func (e *Engine) fallback(st *state, c failover.Classified) bool {
	if st.routeIdx+1 >= len(e.cfg.Routes) {
		return false
	}
	st.currentRoute().Outcome = string(c.Class)
	from := e.route(st).Name()
	e.useRoute(st, st.routeIdx+1)
	if st.obs != nil {
		e.observe(st, &Event{Kind: EventFallback, From: from, To: e.route(st).Name(), Class: string(c.Class)})
	}
	st.hooks.emit(Fallback{From: from, To: e.route(st).Name(), Class: string(c.Class), Summary: c.Summary})
	return true
}

// fail ends the turn with a classified provider failure.
func (e *Engine) fail(st *state, c failover.Classified, note string) {
	st.currentRoute().Outcome = string(c.Class)
	x := outcomeOf(c.Class)
	if x == ExitInterrupted {
		st.setExit(x, nil)
		return
	}
	msg := c.Advice
	if msg == "" {
		msg = c.Summary
	}
	if note != "" {
		msg = note + ". " + msg
	}
	// The provider's own words often say exactly what to change (which
	// parameter, which limit); the person should not need --json to see them.
	if pm := clipWords(c.ProviderMessage, maxQuoted); pm != "" {
		who := c.Who()
		if strings.HasPrefix(who, "the ") {
			who = "The" + who[3:]
		}
		msg += " " + who + " said: \"" + pm + "\""
	}
	var bench *KeyBench
	if b := st.bench; benches(c.Class) && b.Provider == c.Provider && !b.Until.IsZero() {
		bench = &KeyBench{Until: b.Until, SetAt: b.SetAt}
		msg += " " + bench.sentence()
	}
	st.setExit(x, &Failure{
		Bench:             bench,
		Class:             c.Class,
		RetryAfter:        c.RetryAfter,
		Transport:         c.Transport,
		Connect:           c.Connect,
		BaseURL:           c.BaseURL,
		Retryable:         c.Retryable,
		Provider:          c.Provider,
		Model:             c.Model,
		Status:            c.Status,
		Message:           msg,
		BillingUnverified: c.BillingUnverified,
		Detail:            c.ProviderMessage,
	})
}

// repairShape records which request-shape repair a rejection asks for;
// assemble applies it.
func (e *Engine) repairShape(st *state, class failover.Class) {
	switch class {
	case failover.ClassImageTooLarge, failover.ClassImageCorrupt, failover.ClassMultimodalToolContent, failover.ClassImageUnsupported:
		st.stripped["images"] = true
	case failover.ClassThinkingSignature, failover.ClassInvalidEncryptedContent:
		st.stripped["reasoning"] = true
	case failover.ClassLlamaCppGrammar:
		st.stripped["patterns"] = true
	}
	// role_alternation: the projection already repairs alternation, so a
	// retry resends the repaired sequence once.
}

// interruptStream keeps what the user was shown of an answer cut by an
// interrupt, as an interrupted assistant row. An empty one replays the
// neutral placeholder, never an empty or scaffold text.
func (e *Engine) interruptStream(ctx context.Context, st *state, partial string) {
	e.interrupted(ctx, st)
	if st.res.Exit == ExitLeaseLost {
		return // the fence would refuse the write anyway
	}
	row := &store.Message{
		Message:  llm.NewText(llm.RoleAssistant, transcript.CleanText(partial)),
		Kind:     store.RowInterrupted,
		Provider: e.route(st).Provider.Name(),
		Model:    e.route(st).Model,
	}
	if strings.TrimSpace(partial) == "" {
		row.APIContent = transcript.InterruptedPlaceholder
	}
	if err := e.appendRows(ctx, st, row); err != nil {
		e.log.Warn("could not save the interrupted answer", "session", st.sessionID(), "error", err)
	}
	st.res.FinalText = partial
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxQuoted bounds how much of the provider's message a failure quotes.
const maxQuoted = 300

// clipWords shortens s to about n bytes at a word boundary.
func clipWords(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut <= 0 {
		cut = n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	return s[:cut] + "…"
}

func maxRotations(r *Route) int {
	if r.Pool == nil {
		return 0
	}
	return r.Pool.Len()
}

// clampTo picks the new output cap: the limit the error named, else half
// of what was asked.
func clampTo(limit, asked int) int {
	if limit > 0 {
		return limit
	}
	if asked > 1 {
		return asked / 2
	}
	return 4096
}

func roundDelay(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	// Sub-second waits (a retry-after-ms hint) keep their milliseconds so
	// a status line never says "retrying in 0s".
	return d.Round(time.Millisecond)
}
