package anthropic

import "fmt"

// apiName is the wire format name stamped on the replay state this adapter
// issues (llm.Reasoning.API) and on its errors (llm.APIError.API).
const apiName = "anthropic"

// minThinkingBudget is the API's lower bound for thinking.budget_tokens.
const minThinkingBudget = 1024

// thinkingConfig is the extended-thinking setting of a provider.
type thinkingConfig struct {
	budget   int
	perModel map[string]int
}

// budgetFor is the thinking budget for model, 0 when thinking is off.
func (c thinkingConfig) budgetFor(model string) int {
	if b, ok := c.perModel[model]; ok {
		return max(b, 0)
	}
	return max(c.budget, 0)
}

// applyThinking turns extended thinking on for w, after checking the rules
// the API would otherwise reject the call for: a budget of at least 1024,
// below max_tokens. Temperature is dropped because thinking only runs at
// the default temperature.
//
// One case sends the request without thinking: a tool loop whose calling
// assistant message carries no thinking block (it was stripped after a
// signature rejection, or it came from another provider after a fallback).
// With thinking on the API requires that message to start with thinking,
// and a signature cannot be made up, so this call goes without it; the next
// turn thinks again.
func applyThinking(w *wireRequest, budget int) error {
	if budget <= 0 {
		return nil
	}
	if budget < minThinkingBudget {
		return fmt.Errorf("%w: thinking budget_tokens %d is below the minimum of %d", ErrInvalidRequest, budget, minThinkingBudget)
	}
	if w.MaxTokens <= budget {
		return fmt.Errorf("%w: max_tokens %d must be greater than the thinking budget_tokens %d", ErrInvalidRequest, w.MaxTokens, budget)
	}
	if toolLoopWithoutThinking(w.Messages) {
		return nil
	}
	w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: budget}
	w.Temperature = nil
	return nil
}

// toolLoopWithoutThinking reports whether the conversation ends in tool
// results answering an assistant message that does not start with thinking.
func toolLoopWithoutThinking(msgs []*wireMessage) bool {
	n := len(msgs)
	if n < 2 || msgs[n-1].Role != "user" || msgs[n-2].Role != "assistant" {
		return false
	}
	asst := msgs[n-2].Content
	calls := false
	for _, b := range asst {
		if _, ok := b.(*toolUseBlock); ok {
			calls = true
		}
	}
	if !calls {
		return false
	}
	switch asst[0].(type) {
	case *thinkingBlock, *redactedThinkingBlock:
		return false
	}
	return true
}
