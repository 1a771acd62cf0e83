package failover

import "testing"

func TestDecide(t *testing.T) {
	cls := classified
	fmtFallback := Classified{Class: ClassFormatError, Fallback: true}
	fmtAbort := Classified{Class: ClassFormatError}
	tests := []struct {
		name string
		c    Classified
		a    Attempt
		want Action
	}{
		// Terminal classes.
		{"canceled stops even with everything left", cls(ClassCanceled), Attempt{CanRotate: true, CanFallback: true, CanCompress: true}, ActionTerminate},
		{"provider policy stops, no fallback", cls(ClassProviderPolicyBlocked), Attempt{CanFallback: true}, ActionTerminate},
		{"ssl fails fast", cls(ClassSSLCert), Attempt{CanFallback: true}, ActionTerminate},
		{"auth_permanent aborts", cls(ClassAuthPermanent), Attempt{CanRotate: true, CanFallback: true}, ActionTerminate},

		// Credentials.
		{"auth rotates when a key is left", cls(ClassAuth), Attempt{CanRotate: true, CanFallback: true}, ActionRotate},
		{"auth falls back without a key", cls(ClassAuth), Attempt{CanFallback: true}, ActionFallback},
		{"auth stops with nothing left", cls(ClassAuth), Attempt{}, ActionTerminate},
		{"billing rotates", cls(ClassBilling), Attempt{CanRotate: true}, ActionRotate},
		{"billing falls back", cls(ClassBilling), Attempt{CanFallback: true}, ActionFallback},
		{"billing is never retried", cls(ClassBilling), Attempt{}, ActionTerminate},

		// Rate limits.
		{"rate limit rotates when the pool says so", cls(ClassRateLimit), Attempt{CanRotate: true, CanFallback: true}, ActionRotate},
		{"rate limit waits on the same key first", cls(ClassRateLimit), Attempt{Retries: 0, CanFallback: true}, ActionRetry},
		{"rate limit falls back when retries run out", cls(ClassRateLimit), Attempt{Retries: 3, CanFallback: true}, ActionFallback},
		{"rate limit stops when nothing is left", cls(ClassRateLimit), Attempt{Retries: 3}, ActionTerminate},
		{"upstream rate limit falls back without rotating", cls(ClassUpstreamRateLimit), Attempt{CanRotate: true, CanFallback: true}, ActionFallback},
		{"upstream rate limit waits without a fallback", cls(ClassUpstreamRateLimit), Attempt{CanRotate: true}, ActionRetry},
		{"upstream rate limit stops after retries", cls(ClassUpstreamRateLimit), Attempt{Retries: 3}, ActionTerminate},

		// Transient failures.
		{"overloaded retries on the same key", cls(ClassOverloaded), Attempt{SameClassFails: 1, CanRotate: true, CanFallback: true}, ActionRetry},
		{"overloaded still retries after one failed retry", cls(ClassOverloaded), Attempt{Retries: 1, SameClassFails: 2, CanFallback: true}, ActionRetry},
		{"overloaded falls back after two failed retries", cls(ClassOverloaded), Attempt{Retries: 2, SameClassFails: 3, CanFallback: true}, ActionFallback},
		{"overloaded keeps retrying without a fallback", cls(ClassOverloaded), Attempt{Retries: 2, SameClassFails: 3}, ActionRetry},
		{"overloaded stops at MaxRetries without a fallback", cls(ClassOverloaded), Attempt{Retries: 3, SameClassFails: 4}, ActionTerminate},
		{"timeout falls back after two failed retries", cls(ClassTimeout), Attempt{Retries: 2, SameClassFails: 3, CanFallback: true}, ActionFallback},
		{"server error retries", cls(ClassServerError), Attempt{Retries: 2, SameClassFails: 3, CanFallback: true}, ActionRetry},
		{"server error falls back at MaxRetries", cls(ClassServerError), Attempt{Retries: 3, CanFallback: true}, ActionFallback},
		{"custom MaxRetries", cls(ClassServerError), Attempt{Retries: 5, MaxRetries: 6}, ActionRetry},
		{"NoRetries: zero means none", cls(ClassServerError), Attempt{Retries: 0, NoRetries: true}, ActionTerminate},
		{"NoRetries falls back at once", cls(ClassServerError), Attempt{Retries: 0, NoRetries: true, CanFallback: true}, ActionFallback},
		{"unknown retries", cls(ClassUnknown), Attempt{}, ActionRetry},
		{"unknown stops after retries", cls(ClassUnknown), Attempt{Retries: 3}, ActionTerminate},

		// Request size and shape.
		{"output cap clamps once", cls(ClassOutputCap), Attempt{CanFallback: true}, ActionClamp},
		{"output cap never falls back", cls(ClassOutputCap), Attempt{Clamped: true, CanFallback: true}, ActionTerminate},
		{"overflow compresses", cls(ClassContextOverflow), Attempt{CanCompress: true, CanFallback: true}, ActionCompress},
		{"overflow stops when compression is spent", cls(ClassContextOverflow), Attempt{CanFallback: true}, ActionTerminate},
		{"payload too large compresses", cls(ClassPayloadTooLarge), Attempt{CanCompress: true}, ActionCompress},
		{"thinking signature repairs once", cls(ClassThinkingSignature), Attempt{CanFallback: true}, ActionRepair},
		{"thinking signature stops after a repair", cls(ClassThinkingSignature), Attempt{Repaired: true, CanFallback: true}, ActionTerminate},
		{"role alternation repairs", cls(ClassRoleAlternation), Attempt{}, ActionRepair},
		{"image too large repairs", cls(ClassImageTooLarge), Attempt{}, ActionRepair},
		{"grammar repairs", cls(ClassLlamaCppGrammar), Attempt{}, ActionRepair},
		{"repaired shape class that allows fallback falls back",
			Classified{Class: ClassMultimodalToolContent, Fallback: true}, Attempt{Repaired: true, CanFallback: true}, ActionFallback},
		{"format error aborts", fmtAbort, Attempt{CanFallback: true, Retries: 0}, ActionTerminate},
		{"format error another route could accept falls back", fmtFallback, Attempt{CanFallback: true}, ActionFallback},
		{"format error with fallback flag but no route stops", fmtFallback, Attempt{}, ActionTerminate},
		{"model not found falls back", cls(ClassModelNotFound), Attempt{CanFallback: true}, ActionFallback},
		{"model not found stops without a fallback", cls(ClassModelNotFound), Attempt{}, ActionTerminate},
		{"content policy falls back, never retries", cls(ClassContentPolicyBlocked), Attempt{CanFallback: true}, ActionFallback},
		{"content policy stops without a fallback", cls(ClassContentPolicyBlocked), Attempt{}, ActionTerminate},

		// A class this version does not know is handled by its flags.
		{"unknown class, retryable flags", Classified{Class: "future_thing", Retryable: true}, Attempt{}, ActionRetry},
		{"unknown class, fallback flag", Classified{Class: "future_thing", Fallback: true}, Attempt{CanFallback: true}, ActionFallback},
		{"unknown class, no flags", Classified{Class: "future_thing"}, Attempt{CanFallback: true}, ActionTerminate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.c, tt.a); got != tt.want {
				t.Errorf("Decide(%s, %+v) = %s, want %s", tt.c.Class, tt.a, got, tt.want)
			}
		})
	}
}

// classified is c with the flags Classify gives that class by default.
func classified(c Class) Classified {
	r, _ := recoveryOf(c)
	return Classified{Class: c, Retryable: r.retryable, RotateCredential: r.rotate, Fallback: r.fallback,
		Compress: r.compress, Certain: true}
}

func TestActionString(t *testing.T) {
	tests := map[Action]string{
		ActionRetry: "retry", ActionRotate: "rotate", ActionFallback: "fallback", ActionCompress: "compress",
		ActionClamp: "clamp", ActionRepair: "repair", ActionTerminate: "terminate", Action(42): "action(?)",
	}
	for a, want := range tests {
		if got := a.String(); got != want {
			t.Errorf("Action(%d).String() = %q, want %q", int(a), got, want)
		}
	}
}

func TestRecoveryProfiles(t *testing.T) {
	// The flags DESIGN.md's class table implies, written out independently
	// of recoveryOf: retryable, rotate, fallback, compress.
	type flags struct{ retry, rotate, fallback, compress bool }
	want := map[Class]flags{
		ClassAuth: {rotate: true, fallback: true}, ClassAuthPermanent: {},
		ClassBilling:   {rotate: true, fallback: true},
		ClassRateLimit: {retry: true, rotate: true, fallback: true}, ClassUpstreamRateLimit: {retry: true, fallback: true},
		ClassOverloaded: {retry: true, fallback: true}, ClassServerError: {retry: true, fallback: true},
		ClassTimeout: {retry: true, fallback: true}, ClassSSLCert: {},
		ClassContextOverflow: {compress: true}, ClassPayloadTooLarge: {compress: true},
		ClassImageTooLarge: {}, ClassImageCorrupt: {}, ClassModelNotFound: {fallback: true},
		ClassProviderPolicyBlocked: {}, ClassContentPolicyBlocked: {fallback: true}, ClassFormatError: {},
		ClassOutputCap: {}, ClassRoleAlternation: {}, ClassThinkingSignature: {}, ClassInvalidEncryptedContent: {},
		ClassReasoningMandatory: {}, ClassMultimodalToolContent: {}, ClassLlamaCppGrammar: {},
		ClassImageUnsupported: {}, ClassToolCallTruncated: {}, ClassReasoningExhausted: {},
		ClassEndpointNotFound: {fallback: true}, ClassLongContextUnavailable: {fallback: true, compress: true},
		ClassCanceled: {}, ClassUnknown: {retry: true, fallback: true}, ClassEmptyResponse: {},
	}
	for _, c := range Classes() {
		t.Run(string(c), func(t *testing.T) {
			w, ok := want[c]
			if !ok {
				t.Fatalf("no expectation for %s", c)
			}
			got := classified(c)
			if (flags{got.Retryable, got.RotateCredential, got.Fallback, got.Compress}) != w {
				t.Errorf("%s flags = %+v, want %+v", c, flags{got.Retryable, got.RotateCredential, got.Fallback, got.Compress}, w)
			}
		})
	}
	if _, ok := recoveryOf("not_a_class"); ok {
		t.Error("recoveryOf must reject classes outside the vocabulary")
	}
}

// The classes issue 11 added decide by their own recovery.
func TestDecideNewClasses(t *testing.T) {
	tests := []struct {
		class Class
		a     Attempt
		want  Action
	}{
		{ClassEndpointNotFound, Attempt{CanFallback: true}, ActionFallback},
		{ClassEndpointNotFound, Attempt{}, ActionTerminate},
		{ClassLongContextUnavailable, Attempt{CanFallback: true, CanCompress: true}, ActionFallback},
		{ClassLongContextUnavailable, Attempt{CanCompress: true}, ActionCompress},
		{ClassLongContextUnavailable, Attempt{}, ActionTerminate},
		{ClassImageUnsupported, Attempt{}, ActionRepair},
		{ClassImageUnsupported, Attempt{Repaired: true}, ActionTerminate},
		{ClassThinkingSignature, Attempt{}, ActionRepair},
		{ClassInvalidEncryptedContent, Attempt{}, ActionRepair},
		{ClassInvalidEncryptedContent, Attempt{Repaired: true, CanFallback: true}, ActionTerminate},
		{ClassToolCallTruncated, Attempt{CanFallback: true}, ActionTerminate},
		{ClassReasoningExhausted, Attempt{CanFallback: true}, ActionTerminate},
	}
	for _, tc := range tests {
		if got := Decide(classified(tc.class), tc.a); got != tc.want {
			t.Errorf("Decide(%s, %+v) = %v, want %v", tc.class, tc.a, got, tc.want)
		}
	}
}
