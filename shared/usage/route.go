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

// Route reports which API a request path belongs to, so only the
// estimated and charged routes (chat completions, completions, Responses
// and Anthropic messages) take a token reservation.
//
// It matches the path's canonical form (see canonicalPath), not its bytes:
// Envoy's defaults leave percent-encoding, case, merged slashes, dot
// segments and ";params" alone, while common backends decode or ignore them
// (uvicorn decodes %2F, Express routes case-insensitively, Tomcat strips
// ";params"), so any spelling a backend could serve as a metered route must
// be metered. Matching a spelling the backend then rejects costs nothing: an
// answer without usage releases its hold. Outside that, matching is exact
// (no prefix match: /v1/messages/count_tokens is not a route).
func Route(path string) (API, bool) {
	// A route spelled canonically, what clients send, is its own canonical
	// form: matched without building one.
	if api, ok := routeOf(path); ok {
		return api, true
	}
	var buf [64]byte
	return routeOf(canonicalPath(buf[:0], path))
}

// routeOf matches a canonical path against the route table.
func routeOf(path string) (API, bool) {
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

// maxRoutePath bounds the canonical form while it is built (a segment that a
// later ".." cancels still counts), so a hostile path costs bounded work; a
// path beyond it is not a route.
const maxRoutePath = 4096

// canonicalPath appends the path's canonical form to dst: query and fragment
// cut, every %XX decoded (once), lower-cased, ";params" of each segment
// dropped, empty and "." segments removed, ".." resolved, no trailing slash.
// It returns "" for a path whose form would exceed maxRoutePath.
func canonicalPath(dst []byte, path string) string {
	for i := 0; i < len(path); i++ {
		if path[i] == '?' || path[i] == '#' {
			path = path[:i]
			break
		}
	}
	segStart := len(dst)
	inParams := false
	// flush ends the segment that began at segStart (just after its slash):
	// an empty or "." segment is removed with its slash, ".." also removes
	// the segment before it.
	flush := func() bool {
		seg := dst[segStart:]
		dot := len(seg) == 1 && seg[0] == '.'
		dotdot := len(seg) == 2 && seg[0] == '.' && seg[1] == '.'
		if len(seg) == 0 || dot || dotdot {
			dst = dst[:max(segStart-1, 0)]
			if dotdot {
				for len(dst) > 0 && dst[len(dst)-1] != '/' {
					dst = dst[:len(dst)-1]
				}
				dst = dst[:max(len(dst)-1, 0)]
			}
		}
		return len(dst) <= maxRoutePath
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '%' && i+2 < len(path) {
			if h, ok := unhex(path[i+1]); ok {
				if l, ok := unhex(path[i+2]); ok {
					c = h<<4 | l
					i += 2
				}
			}
		}
		switch {
		case c == '/':
			if !flush() {
				return ""
			}
			inParams = false
			dst = append(dst, '/')
			segStart = len(dst)
		case inParams:
		case c == ';':
			inParams = true
		default:
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			if len(dst) > maxRoutePath+3 {
				return ""
			}
		}
	}
	if !flush() {
		return ""
	}
	for len(dst) > 1 && dst[len(dst)-1] == '/' {
		dst = dst[:len(dst)-1]
	}
	return string(dst)
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
