package agent

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Budget bounds one agent run. A zero field takes its default (DefaultBudget).
type Budget struct {
	InputTokens  int           `json:"input_tokens"`
	OutputTokens int           `json:"output_tokens"`
	TotalTokens  int           `json:"total_tokens"`
	ModelCalls   int           `json:"model_calls"`
	Wall         time.Duration `json:"wall"`
}

// DefaultBudget is the spec's: 100,000 input tokens, 50,000 output, 150,000 in all, 100
// model calls, 5 minutes of wall time.
func DefaultBudget() Budget {
	return Budget{InputTokens: 100_000, OutputTokens: 50_000, TotalTokens: 150_000, ModelCalls: 100, Wall: 5 * time.Minute}
}

func (b Budget) orDefaults() Budget {
	d := DefaultBudget()
	if b.InputTokens > 0 {
		d.InputTokens = b.InputTokens
	}
	if b.OutputTokens > 0 {
		d.OutputTokens = b.OutputTokens
	}
	if b.TotalTokens > 0 {
		d.TotalTokens = b.TotalTokens
	}
	if b.ModelCalls > 0 {
		d.ModelCalls = b.ModelCalls
	}
	if b.Wall > 0 {
		d.Wall = b.Wall
	}
	return d
}

// Budget keys of config.llm_budget, and the most each may say.
var budgetKeys = map[string]float64{
	"input_tokens":  10_000_000,
	"output_tokens": 10_000_000,
	"total_tokens":  20_000_000,
	"model_calls":   10_000,
	"wall_seconds":  24 * 3600,
}

// BudgetProblem is one thing wrong with config.llm_budget: the key (its JSON pointer under
// the object) and what.
type BudgetProblem struct {
	Key     string
	Message string
}

// ParseBudget reads config.llm_budget: each of input_tokens, output_tokens, total_tokens,
// model_calls and wall_seconds raises or lowers its default. A negative, fractional or
// unknown entry is a problem; an absent one keeps the default.
func ParseBudget(raw map[string]any) (Budget, []BudgetProblem) {
	b := DefaultBudget()
	var ps []BudgetProblem
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		limit, known := budgetKeys[k]
		if !known {
			ps = append(ps, BudgetProblem{k, "not a budget: input_tokens, output_tokens, total_tokens, model_calls or wall_seconds"})
			continue
		}
		n, isNumber := raw[k].(float64)
		if !isNumber || n < 1 || n != math.Trunc(n) || n > limit {
			ps = append(ps, BudgetProblem{k, fmt.Sprintf("a whole number from 1 to %.0f", limit)})
			continue
		}
		switch k {
		case "input_tokens":
			b.InputTokens = int(n)
		case "output_tokens":
			b.OutputTokens = int(n)
		case "total_tokens":
			b.TotalTokens = int(n)
		case "model_calls":
			b.ModelCalls = int(n)
		case "wall_seconds":
			b.Wall = time.Duration(n) * time.Second
		}
	}
	return b, ps
}
