package llm

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
)

type failing struct{ err error }

func (f failing) Name() string { return "f" }
func (f failing) Stream(context.Context, *Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) { yield(Event{}, f.err) }
}

// Every text of a provider's error is scrubbed; the cause still matches.
func TestRedactProviderErrors(t *testing.T) {
	scrub := func(s string) string { return strings.ReplaceAll(s, "SECRET", "[REDACTED]") }
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"api error", &APIError{Provider: "p", StatusCode: 400, Message: "you sent SECRET", Body: []byte(`{"k":"SECRET"}`),
			Err: errors.New("raw SECRET")}},
		{"transport", &APIError{Provider: "p", Transport: TransportCanceled, Err: errors.Join(context.Canceled, errors.New("SECRET"))}},
		{"plain", errors.Join(context.Canceled, errors.New("dial SECRET"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got error
			for _, err := range Redact(failing{tc.err}, scrub).Stream(context.Background(), &Request{}) {
				got = err
			}
			if got == nil || strings.Contains(got.Error(), "SECRET") {
				t.Fatalf("error = %v", got)
			}
			var ae *APIError
			if errors.As(got, &ae) && (strings.Contains(string(ae.Body), "SECRET") || strings.Contains(ae.Message, "SECRET")) {
				t.Fatalf("APIError keeps the secret: %+v", ae)
			}
			if errors.Is(tc.err, context.Canceled) != errors.Is(got, context.Canceled) {
				t.Fatal("the cause no longer matches context.Canceled")
			}
		})
	}
}
