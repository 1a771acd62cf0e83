package failover

import "github.com/talaria-agent/talaria/internal/setting"

// Action is the one recovery the retry loop takes after a failure.
type Action int

// Recovery actions.
const (
	ActionRetry     Action = iota // wait (Backoff.Delay) and send again
	ActionRotate                  // switch to another key of the provider, then retry
	ActionFallback                // activate the next fallback route, re-run preflight
	ActionCompress                // compress the conversation, restart the iteration
	ActionClamp                   // lower max_tokens to the model's limit, retry
	ActionRepair                  // repair the request shape once, retry
	ActionTerminate               // stop with a failure result
)

// String is the action's lower-case name.
func (a Action) String() string {
	switch a {
	case ActionRetry:
		return "retry"
	case ActionRotate:
		return "rotate"
	case ActionFallback:
		return "fallback"
	case ActionCompress:
		return "compress"
	case ActionClamp:
		return "clamp"
	case ActionRepair:
		return "repair"
	case ActionTerminate:
		return "terminate"
	}
	return "action(?)"
}

// DefaultMaxRetries applies when Attempt.MaxRetries is zero.
const DefaultMaxRetries = 3

// fallbackAfterFails is how many consecutive failures of a transient class
// (the first try and two retries) make a fallback worth more than waiting.
const fallbackAfterFails = 3

// Attempt is the retry loop's state for one call.
type Attempt struct {
	Retries        int  // retries already made for this call on this route
	MaxRetries     int  // default 3
	NoRetries      bool // MaxRetries 0 means none, not the default
	SameClassFails int  // consecutive failures of this class on this route, including this one
	CanRotate      bool // another key of this provider is available (for rate limits: Pool.Failed said rotate)
	CanFallback    bool // a fallback route is left
	Clamped        bool // output cap already clamped once this turn
	Repaired       bool // request shape already repaired once for this class this turn
	CanCompress    bool // compression attempts are left
}

// Decide maps a classified failure to the one right recovery (DESIGN.md,
// "Failure and recovery"):
//   - retryable classes retry with backoff until MaxRetries, then fall back
//     if possible, else terminate; overloaded and timeout fall back early,
//     after two failed retries, when a fallback exists;
//   - auth and billing rotate when a key is left, else fall back, else
//     terminate; a rate limit rotates when the pool said so, else waits;
//   - an upstream rate limit falls back without rotating;
//   - output_cap clamps once (never a fallback), then terminates;
//   - context_overflow and payload_too_large compress when possible;
//   - shape classes repair once, then fall back (when the class allows it)
//     or terminate; format_error falls back only when another route could
//     accept the request;
//   - model_not_found, endpoint_not_found and content_policy_blocked fall
//     back; long_context_unavailable falls back, else compresses;
//   - provider_policy_blocked, ssl_cert_verification, auth_permanent and
//     canceled terminate.
func Decide(c Classified, a Attempt) Action {
	maxRetries := a.MaxRetries
	maxRetries = setting.Or(maxRetries, DefaultMaxRetries)
	if a.NoRetries {
		maxRetries = 0
	}
	retriesLeft := a.Retries < maxRetries
	fallbackOr := func(otherwise Action) Action {
		if a.CanFallback {
			return ActionFallback
		}
		return otherwise
	}
	retryThenFallback := func() Action {
		if retriesLeft {
			return ActionRetry
		}
		return fallbackOr(ActionTerminate)
	}

	switch c.Class {
	case ClassCanceled, ClassProviderPolicyBlocked, ClassSSLCert, ClassAuthPermanent:
		return ActionTerminate
	case ClassAuth, ClassBilling:
		if a.CanRotate {
			return ActionRotate
		}
		return fallbackOr(ActionTerminate)
	case ClassRateLimit:
		if a.CanRotate {
			return ActionRotate
		}
		return retryThenFallback()
	case ClassUpstreamRateLimit:
		return fallbackOr(retryThenFallback())
	case ClassOverloaded, ClassTimeout:
		if a.CanFallback && a.SameClassFails >= fallbackAfterFails {
			return ActionFallback
		}
		return retryThenFallback()
	case ClassServerError, ClassUnknown:
		return retryThenFallback()
	case ClassOutputCap:
		if !a.Clamped {
			return ActionClamp
		}
		return ActionTerminate
	case ClassContextOverflow, ClassPayloadTooLarge:
		if a.CanCompress {
			return ActionCompress
		}
		return ActionTerminate
	case ClassModelNotFound, ClassContentPolicyBlocked, ClassEndpointNotFound:
		return fallbackOr(ActionTerminate)
	case ClassLongContextUnavailable:
		// Another route keeps the whole conversation; without one, shrink
		// it to the standard window.
		if a.CanFallback {
			return ActionFallback
		}
		if a.CanCompress {
			return ActionCompress
		}
		return ActionTerminate
	case ClassFormatError:
		if c.Fallback {
			return fallbackOr(ActionTerminate)
		}
		return ActionTerminate
	}
	if c.Class.ShapeRepairable() {
		if !a.Repaired {
			return ActionRepair
		}
		if c.Fallback {
			return fallbackOr(ActionTerminate)
		}
		return ActionTerminate
	}
	// A class this switch does not know: trust its flags.
	if c.Retryable {
		return retryThenFallback()
	}
	if c.Fallback {
		return fallbackOr(ActionTerminate)
	}
	return ActionTerminate
}
