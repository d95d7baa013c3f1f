package agent

import "encoding/json"

// TokenCounter counts the input tokens a request will cost before it is sent: the loop
// refuses to send a prompt that would go over the input budget.
type TokenCounter func(req Request) int

// EstimateTokens is the conservative count used when no tokenizer for the model's family
// is known: one token per 3 bytes of every message's content and tool calls and of the
// tool declarations, plus 4 a message. BPE tokenizers of the common model families give
// about 4 bytes of English a token and one token per CJK character (3 bytes in UTF-8), so
// this overcounts English prose by about a third and rarely undercounts anything: a budget
// refuses a little early rather than late.
func EstimateTokens(req Request) int {
	bytes := 0
	for _, m := range req.Messages {
		bytes += len(m.Content) + len(m.Role) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			bytes += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		b, _ := json.Marshal(t)
		bytes += len(b)
	}
	return (bytes+2)/3 + 4*len(req.Messages)
}
