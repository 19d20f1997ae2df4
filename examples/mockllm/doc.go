// Package mockllm is a deterministic stand-in for OpenAI- and Anthropic-style LLM backends, so that
// budget tests can compare what the filter charged with what the "backend" reported without a
// network or a real model.
//
// Endpoints (POST, JSON body; `"stream": true` switches to server-sent events):
//
//	/v1/chat/completions               OpenAI Chat Completions
//	/v1/completions                    OpenAI legacy Completions
//	/v1/responses, /v1/responses/compact  OpenAI Responses (compact answers a response.compaction object)
//	/v1/messages, /anthropic/v1/messages  Anthropic Messages
//
// Anything else answers 404 with an OpenAI-shaped error body.
//
// # Token accounting
//
// Input tokens are counted by [InputTokens]: 4 per message plus one per whitespace-separated word of
// the message's text (see that function for what counts as a message). Output tokens are the words
// of the generated answer: the text is "tok tok tok …", one word per token, so a client can recount
// what it received. The number generated is the x-mock-output-tokens header if present, otherwise
// [Options.DefaultOutputTokens] (16 when zero), and never more than the request's output ceiling
// ([OutputCeiling]).
//
// # Control headers
//
//	x-mock-output-tokens: N      tokens to generate (capped by the request's ceiling)
//	x-mock-cached-tokens: N      input tokens reported as served from cache (capped by the input count);
//	                             OpenAI: prompt_tokens_details.cached_tokens (a subset of prompt_tokens);
//	                             Anthropic: cache_read_input_tokens, excluded from input_tokens
//	x-mock-cache-write-tokens: N Anthropic only: cache_creation_input_tokens, excluded from input_tokens
//	x-mock-tokens-per-chunk: K   tokens per streamed delta (default 1)
//	x-mock-chunk-delay-ms: N     pause before every streamed event after the first
//	x-mock-abort-after: N        streamed: reset the connection after N content deltas (a cut stream)
//	x-mock-status: N             answer status N with the API's error body instead of a completion
//
// Streams stop as soon as the client goes away (request context cancelled); [Options.OnServed]
// then reports Completed=false.
package mockllm
