package usage

// API names the wire shape of a text-generation route. The shape decides where
// a response reports its usage, which stream event ends it normally, and which
// request field asks a streamed response to report usage at all.
type API uint8

// The zero API is no route, so a forgotten assignment never parses as OpenAI.
const (
	// OpenAIChat is /v1/chat/completions.
	OpenAIChat API = iota + 1
	// OpenAICompletions is the legacy /v1/completions.
	OpenAICompletions
	// OpenAIResponses is /v1/responses and /v1/responses/compact.
	OpenAIResponses
	// AnthropicMessages is /v1/messages and /anthropic/v1/messages.
	AnthropicMessages
)

// String names the API for logs and metric labels.
func (a API) String() string {
	switch a {
	case OpenAIChat:
		return "openai_chat"
	case OpenAICompletions:
		return "openai_completions"
	case OpenAIResponses:
		return "openai_responses"
	case AnthropicMessages:
		return "anthropic_messages"
	}
	return "none"
}

// Route reports which API a request path belongs to, so only the seed's
// estimated and charged routes take a token reservation.
//
// The query string and fragment are ignored. The remaining path must match a
// route exactly (case-sensitive, no prefix or suffix match, so
// /v1/messages/count_tokens is not a route), except that trailing slashes are
// ignored: a backend that redirects or tolerates /v1/chat/completions/ must
// not become a way around the budget, and charging a path the backend then
// rejects costs nothing, because a response without usage releases its hold.
// Other normalization (merged slashes, percent-encoding, dot segments) is
// Envoy's job (normalize_path, merge_slashes) before the filter runs.
func Route(path string) (API, bool) {
	for i := 0; i < len(path); i++ {
		if path[i] == '?' || path[i] == '#' {
			path = path[:i]
			break
		}
	}
	for len(path) > 1 && path[len(path)-1] == '/' {
		path = path[:len(path)-1]
	}
	switch path {
	case "/v1/chat/completions":
		return OpenAIChat, true
	case "/v1/completions":
		return OpenAICompletions, true
	case "/v1/responses", "/v1/responses/compact":
		return OpenAIResponses, true
	case "/v1/messages", "/anthropic/v1/messages":
		return AnthropicMessages, true
	}
	return 0, false
}
