package llm_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	msg := func(model, content string) agent.Request {
		return agent.Request{Model: model, Messages: []agent.Message{{Role: agent.RoleUser, Content: content}}}
	}
	// "hello world" is two tokens in both of OpenAI's current tokenizers; "user" one; 3 for
	// the message's framing and 3 for the reply's.
	require.Equal(t, 2+1+3+3, llm.Tokens(msg("gpt-4o-mini", "hello world")))
	require.Equal(t, 2+1+3+3, llm.Tokens(msg("gpt-4", "hello world")))
	require.Equal(t, 2+1+3+3, llm.Tokens(msg("openai/gpt-5", "hello world")))
	// The families tokenize differently: a long German text differs between them.
	text := strings.Repeat("Die Abstimmung der Kontoauszüge mit dem Hauptbuch ergab Differenzen. ", 50)
	require.NotEqual(t, llm.Tokens(msg("gpt-4o", text)), llm.Tokens(msg("gpt-4", text)))
	// A family it does not know is estimated, conservatively: more than the real count.
	unknown := llm.Tokens(msg("llama3.1:8b", text))
	require.Equal(t, agent.EstimateTokens(msg("llama3.1:8b", text)), unknown)
	require.Greater(t, unknown, llm.Tokens(msg("gpt-4o", text)), "the estimate errs high")
}
