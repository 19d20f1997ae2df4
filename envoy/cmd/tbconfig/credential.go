package main

import "github.com/tokenbudget/tokenbudget/shared/config"

// flagInjectsCredential is validate's hint that Envoy injects the provider's credential. The
// plugin config cannot tell: the credential injector is Envoy's, configured beside the filter,
// and a filter in front of the mock or of a provider reached with the callers' own keys needs
// neither warning.
const flagInjectsCredential = "--injects-credential"

// credentialWarnings are the problems of a config in front of a provider whose credential the
// gateway supplies: the caller's key would travel on to the provider, and any caller would
// spend the operator's credential.
func credentialWarnings(c *config.Config) []string {
	var w []string
	if !c.Identity.StripAPIKeyHeaders {
		w = append(w, "identity.strip_api_key_headers: false, and Envoy injects the provider's credential: "+
			"the callers' gateway keys reach the provider beside it (and, where the injector does not overwrite, "+
			"instead of it); set it to true")
	}
	if c.Identity.UnknownAPIKeys != config.UnknownKeyRefuse || c.Identity.MissingAPIKey != config.MissingKeyRefuse {
		w = append(w, "identity: a request without a key, or with a key not in api_keys, is forwarded with the "+
			"provider's credential; set identity.missing_api_key and identity.unknown_api_keys to \"refuse\"")
	}
	return w
}
