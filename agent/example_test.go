package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/svcflow/svcflow/agent"
)

// A program embedding svcflow can bring its own Model: anything with a Chat method.
// Here a function echoes the user's message back, upper-cased.
func ExampleModel() {
	var m agent.Model = agent.ModelFunc(func(ctx context.Context, req agent.Request) (*agent.Response, error) {
		if err := req.Validate(); err != nil {
			return nil, err
		}
		last := req.Messages[len(req.Messages)-1]
		return &agent.Response{
			Message:      agent.Message{Role: agent.RoleAssistant, Content: strings.ToUpper(last.Content)},
			Usage:        agent.Usage{InputTokens: 3, OutputTokens: 3, TotalTokens: 6},
			FinishReason: agent.FinishStop,
			Model:        req.Model,
		}, nil
	})

	res, err := m.Chat(context.Background(), agent.Request{
		Model:    "echo",
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "hello"}},
	})
	fmt.Println(res.Message.Content, res.Usage.TotalTokens, err)

	_, err = m.Chat(context.Background(), agent.Request{Model: "echo"})
	fmt.Println(err, errors.Is(err, agent.ErrModelBadRequest))
	// Output:
	// HELLO 6 <nil>
	// model bad_request: request has no messages true
}

// What a caller does with a failed call: errors.Is for the class, errors.As for the
// details such as how long the provider asked to wait.
func ExampleModelError() {
	err := fmt.Errorf("llm action: %w", &agent.ModelError{
		Kind: agent.ModelErrorRateLimited, Status: 429, RetryAfter: 20e9, Message: "Rate limit reached",
	})

	var me *agent.ModelError
	switch {
	case errors.Is(err, agent.ErrModelUnauthorized):
		fmt.Println("fix the organization's api:llm_api_key")
	case errors.As(err, &me) && me.Retryable():
		fmt.Println("try again in", me.RetryAfter)
	}
	fmt.Println(err)
	// Output:
	// try again in 20s
	// llm action: model rate_limited (HTTP 429, retry after 20s): Rate limit reached
}
