// Package llm holds the implementations of agent.Model.
//
// Client speaks the OpenAI chat-completions API through the official SDK, so any server
// that speaks it works: OpenAI, Azure OpenAI (the v1 API), vLLM, Ollama, llama.cpp. It
// maps tool calls both ways, reports token usage, retries rate limits and server errors
// as Retry-After says, and turns failures into *agent.ModelError. It reads no
// environment variables: the key and base URL come from the caller (the engine reads
// them from org config, `api:llm_api_key` and `api:llm_base_url`).
//
// Scripted replays a recorded conversation (a Script, from Go or a JSON file) for tests
// and the offline demo; Recorder wraps a real Model and writes such a Script.
//
// This package does network and file I/O for the agent package, which does none.
package llm
