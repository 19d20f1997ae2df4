package exchange

import (
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/ipaddr"
)

// identify resolves who the request is for. User and team come from the
// API-key table, or from headers only the operator declared trusted (set by
// an auth filter in front): a client cannot name another tenant's bucket.
// Every header entry is read at once: the key headers must be seen whole (a
// repeated key header is refused, see identity.Lookup), and the other
// identity headers are found in the same pairs. conflict reports key
// headers that carry two different keys.
func (x *Exchange) identify(req Request) (conflict bool) {
	rt := x.rt
	pairs := req.Headers()
	raw, ok, conflict := identity.Lookup(pairs, rt.APIKeyHeaders)
	if ok {
		x.who.APIKeyHash = x.env.Keys.Hash(raw)
		x.who.Key = rt.Key(x.who.APIKeyHash)
	}
	x.who.User, x.who.Team = x.who.Key.User, x.who.Key.Team
	if v, ok := firstValue(pairs, rt.TrustedUserHeader); ok {
		x.who.User = v
	}
	if v, ok := firstValue(pairs, rt.TrustedTeamHeader); ok {
		x.who.Team = v
	}
	if v, ok := trustedProperty(req, rt.TrustedUserMetadata); ok {
		x.who.User = v
	}
	if v, ok := trustedProperty(req, rt.TrustedTeamMetadata); ok {
		x.who.Team = v
	}
	if rt.UsesClientAddress() {
		x.addr, x.who.Client = clientAddr(req)
	}
	if v, ok := firstValue(pairs, rt.ModelHeader); ok {
		x.who.Model = v
	}
	return conflict
}

// stripKeyHeaders applies identity.strip_api_key_headers: once the caller
// is identified, every key header the config names that the request
// carries is removed, so a gateway key never reaches the provider (whose
// own credential Envoy injects). It runs on every route, metered or not:
// a key must not leak through a path the filter does not meter either.
func (x *Exchange) stripKeyHeaders(rt *config.Runtime, req Request) {
	if !rt.StripAPIKeyHeaders {
		return
	}
	pairs := req.Headers()
	for _, name := range rt.APIKeyHeaders {
		if hasHeader(pairs, name) {
			x.fx.RemoveRequestHeader(name)
		}
	}
}

// hasHeader says whether pairs hold header name, whatever its value (the
// host lists names in lower case, as HTTP/2 writes them and Envoy's codecs
// store them).
func hasHeader(pairs [][2]string, name string) bool {
	for i := range pairs {
		if pairs[i][0] == name {
			return true
		}
	}
	return false
}

// firstValue is the first non-empty value of header name ("" = none
// configured) among pairs, as Envoy's own header lookup answers.
func firstValue(pairs [][2]string, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	for i := range pairs {
		if pairs[i][0] == name {
			return pairs[i][1], pairs[i][1] != ""
		}
	}
	return "", false
}

// keyRefused applies identity.missing_api_key and identity.unknown_api_keys
// "refuse": without them a request with no key skips the per-key budget and
// every unknown key gets a fresh one, so an operator who sells per-key
// budgets can require keys. Exempt clients and bypass keys were let
// through before this check.
func (x *Exchange) keyRefused() (msg string, refuse bool) {
	switch {
	case x.who.APIKeyHash == "" && x.rt.RefuseMissingKeys:
		return "This gateway requires an API key (Authorization: Bearer <key> or x-api-key).", true
	case x.who.APIKeyHash != "" && !x.who.Key.Known && x.rt.RefuseUnknownKeys:
		return "The API key is not known to this gateway.", true
	}
	return "", false
}

// maxIdentityLen bounds an identity read from metadata; a longer value is
// not a user or team name and is ignored.
const maxIdentityLen = 256

// trustedProperty reads an identity an auth filter in front put in Envoy
// metadata (a path under metadata or filter_state, checked by the config).
func trustedProperty(req Request, path []string) (string, bool) {
	if len(path) == 0 {
		return "", false
	}
	v, ok := req.Property(path...)
	if !ok || len(v) == 0 || len(v) > maxIdentityLen {
		return "", false
	}
	return string(v), true
}

// sourceAddress is the peer's property path, one slice for every request:
// a path written at the call would be a new slice per request, since it
// goes through an interface.
var sourceAddress = []string{"source", "address"}

// clientAddr is the peer address the host reports, without its port, and
// its text form (empty when the address is not valid).
func clientAddr(req Request) (ipaddr.Addr, string) {
	v, ok := req.Property(sourceAddress...)
	if !ok {
		return ipaddr.Addr{}, ""
	}
	// The host handed v over for good and nothing writes it again, so its
	// text can be read, and kept, without a copy.
	text := unsafe.String(unsafe.SliceData(v), len(v))
	a, ok := ipaddr.ParseAddrPort(text)
	if !ok {
		a, _ = ipaddr.ParseAddr(text)
	}
	a = a.Unmap()
	if !a.IsValid() {
		return a, ""
	}
	return a, addrText(a, text)
}

// addrText is a.String(), taken from the text the host sent when it
// already spells the address that way (an IPv4 peer always does: the
// parser takes only the canonical dotted quad), so the common peer costs no
// string.
func addrText(a ipaddr.Addr, text string) string {
	var buf [64]byte
	canon := a.AppendTo(buf[:0])
	if len(text) > 0 && text[0] == '[' {
		text = text[1:]
	}
	if len(text) >= len(canon) && string(canon) == text[:len(canon)] {
		return text[:len(canon)]
	}
	return a.String()
}
