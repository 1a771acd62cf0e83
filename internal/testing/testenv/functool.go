package testenv

import (
	"context"
	"encoding/json"

	"github.com/talaria-agent/talaria/tool"
)

// MustFunc is tool.FuncOf for a test's closure: a schema or name the test
// got wrong panics at setup rather than failing later as a tool error.
func MustFunc[In, Out any](info tool.Info, fn func(context.Context, In) (Out, error)) *tool.Func[In, Out] {
	f, err := tool.FuncOf(info, fn)
	if err != nil {
		panic(err)
	}
	return f
}

// ObjectSchema is a schema with the given properties JSON and required list.
func ObjectSchema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":` + props + `,"required":` + string(req) + `}`)
}
