package llm

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/svcflow/svcflow/agent"
)

// Tokens counts the input tokens of req the way OpenAI's models do (an agent.TokenCounter):
// with the tokenizer of the model's family, o200k_base for gpt-4o, gpt-4.1, gpt-4.5, gpt-5
// and the o-series, cl100k_base for gpt-4 and gpt-3.5, plus the 3 tokens OpenAI documents
// for each message's framing and 3 for the reply's. The tools' declarations are counted as
// their JSON (the provider renders them more compactly, so this errs high). Any other model
// (a Llama served by Ollama, ...) is counted by agent.EstimateTokens. The tokenizers' tables
// ship in the binary (tiktoken-go-loader): nothing is fetched.
func Tokens(req agent.Request) int {
	enc := encoderFor(req.Model)
	if enc == nil {
		return agent.EstimateTokens(req)
	}
	n := 3
	for _, m := range req.Messages {
		n += 3 + len(enc.EncodeOrdinary(m.Content)) + len(enc.EncodeOrdinary(string(m.Role)))
		for _, c := range m.ToolCalls {
			n += len(enc.EncodeOrdinary(c.Name)) + len(enc.EncodeOrdinary(string(c.Arguments)))
		}
	}
	for _, t := range req.Tools {
		b, _ := json.Marshal(t)
		n += len(enc.EncodeOrdinary(string(b)))
	}
	return n
}

// families maps a model name's beginning to its tokenizer.
var families = []struct{ prefix, encoding string }{
	{"gpt-4o", tiktoken.MODEL_O200K_BASE}, {"gpt-4.1", tiktoken.MODEL_O200K_BASE}, {"gpt-4.5", tiktoken.MODEL_O200K_BASE},
	{"gpt-5", tiktoken.MODEL_O200K_BASE}, {"o1", tiktoken.MODEL_O200K_BASE}, {"o3", tiktoken.MODEL_O200K_BASE},
	{"o4", tiktoken.MODEL_O200K_BASE}, {"chatgpt-4o", tiktoken.MODEL_O200K_BASE},
	{"gpt-4", tiktoken.MODEL_CL100K_BASE}, {"gpt-3.5", tiktoken.MODEL_CL100K_BASE},
}

var (
	loaderOnce sync.Once
	encMu      sync.Mutex
	encoders   = map[string]*tiktoken.Tiktoken{}
)

// encoderFor returns the tokenizer of model's family, nil for a family it does not know.
func encoderFor(model string) *tiktoken.Tiktoken {
	name := strings.ToLower(model[strings.LastIndex(model, "/")+1:]) // "openai/gpt-4o" names gpt-4o
	encoding := ""
	for _, f := range families {
		if strings.HasPrefix(name, f.prefix) {
			encoding = f.encoding
			break
		}
	}
	if encoding == "" {
		return nil
	}
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	encMu.Lock()
	defer encMu.Unlock()
	if enc, ok := encoders[encoding]; ok {
		return enc
	}
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil
	}
	encoders[encoding] = enc
	return enc
}
