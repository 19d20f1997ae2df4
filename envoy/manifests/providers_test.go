package manifests

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	credentialv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/credential_injector/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	genericv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/generic/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"sigs.k8s.io/yaml"

	"github.com/tokenbudget/tokenbudget/shared/config"
)

// provider is what a bootstrap or an Istio example must do to reach one provider.
type provider struct {
	host, header string
}

var providers = map[string]provider{
	"openai":    {"api.openai.com", "Authorization"},
	"anthropic": {"api.anthropic.com", "x-api-key"},
	"azure":     {"my-resource.openai.azure.com", "api-key"},
}

// hcmOf returns the bootstrap's one listener and its HTTP connection manager.
func hcmOf(t *testing.T, b *bootstrapv3.Bootstrap) (*listenerv3.Listener, *hcmv3.HttpConnectionManager) {
	t.Helper()
	ls := b.GetStaticResources().GetListeners()
	require.Len(t, ls, 1)
	var hcm hcmv3.HttpConnectionManager
	require.NoError(t, ls[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm))
	return ls[0], &hcm
}

// upstreamFilters returns a cluster's upstream HTTP filters (HttpProtocolOptions.http_filters).
func upstreamFilters(t *testing.T, c *clusterv3.Cluster) []*hcmv3.HttpFilter {
	t.Helper()
	a, ok := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
	require.True(t, ok, "%s has HttpProtocolOptions", c.GetName())
	var o upstreamhttpv3.HttpProtocolOptions
	require.NoError(t, a.UnmarshalTo(&o))
	return o.GetHttpFilters()
}

func TestTheProvidersBootstrapReachesEachProviderOverTLSWithAnInjectedKey(t *testing.T) {
	b := loadBootstrap(t, "envoy/envoy-providers.yaml")
	l, hcm := hcmOf(t, b)

	// The plugin: keys only as hashes, stripped before upstream, only listed keys pass, and a
	// body limit equal to the listener's buffer.
	ws := wasmFilters(t, b)
	require.Len(t, ws, 1)
	var sv wrapperspb.StringValue
	require.NoError(t, ws[0].GetConfig().GetConfiguration().UnmarshalTo(&sv))
	c := requireLoadsCleanly(t, []byte(sv.GetValue()))
	require.True(t, c.Identity.StripAPIKeyHeaders, "a gateway key never reaches a provider")
	require.Equal(t, config.UnknownKeyRefuse, c.Identity.UnknownAPIKeys, "an open gateway would spend the provider key for anyone")
	require.Equal(t, config.MissingKeyRefuse, c.Identity.MissingAPIKey)
	require.Equal(t, int64(l.GetPerConnectionBufferLimitBytes().GetValue()), int64(*c.TokenBudget.MaxBodyBytes),
		"max_body_bytes and Envoy's buffer limit are set together")
	require.Equal(t, int64(50<<20), int64(*c.TokenBudget.MaxBodyBytes), "50 MiB, as Envoy AI Gateway sets for images")
	requireHashedKeys(t, c)
	for name, p := range providers {
		require.Contains(t, c.Identity.APIKeyHeaders, strings.ToLower(p.header),
			"a gateway key sent in %s's own header is read and stripped", name)
	}

	// Envoy's 413 for a body past the buffer is a JSON error naming the limit.
	mappers := hcm.GetLocalReplyConfig().GetMappers()
	require.Len(t, mappers, 1)
	require.Equal(t, uint32(413), mappers[0].GetFilter().GetStatusCodeFilter().GetComparison().GetValue().GetDefaultValue())
	format := mappers[0].GetBodyFormatOverride()
	require.Equal(t, "application/json", format.GetContentType())
	require.True(t, jsonValid(format.GetTextFormatSource().GetInlineString()), format.GetTextFormatSource().GetInlineString())
	require.Contains(t, format.GetTextFormatSource().GetInlineString(), "52428800")

	// Every route to a provider rewrites Host to the provider's host.
	routes := hcm.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()
	routed := map[string]bool{}
	for _, r := range routes {
		cl := r.GetRoute().GetCluster()
		p, ok := providers[cl]
		require.True(t, ok, "route to %q", cl)
		require.Equal(t, p.host, r.GetRoute().GetHostRewriteLiteral(), "route to %s rewrites Host", cl)
		require.Zero(t, r.GetRoute().GetTimeout().AsDuration(), "streams may run for minutes")
		routed[cl] = true
	}
	require.Len(t, routed, len(providers))
	requireRoutesAsDocumented(t, routes)

	// Each provider cluster: TLS to the host with it as SNI and checked SAN, and its own key
	// injected from SDS by the upstream credential injector, before the codec.
	clusters := b.GetStaticResources().GetClusters()
	require.Len(t, clusters, len(providers))
	for _, cl := range clusters {
		p, ok := providers[cl.GetName()]
		require.True(t, ok, cl.GetName())
		ep := cl.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		require.Equal(t, p.host, ep.GetAddress())
		require.Equal(t, uint32(443), ep.GetPortValue())
		var tls tlsv3.UpstreamTlsContext
		require.NoError(t, cl.GetTransportSocket().GetTypedConfig().UnmarshalTo(&tls))
		require.Equal(t, p.host, tls.GetSni())
		vc := tls.GetCommonTlsContext().GetValidationContext()
		require.NotEmpty(t, vc.GetTrustedCa().GetFilename(), "the certificate is verified")
		require.Len(t, vc.GetMatchTypedSubjectAltNames(), 1)
		require.Equal(t, p.host, vc.GetMatchTypedSubjectAltNames()[0].GetMatcher().GetExact())

		fs := upstreamFilters(t, cl)
		require.Len(t, fs, 2)
		require.True(t, fs[1].GetTypedConfig().MessageIs(&upstreamcodecv3.UpstreamCodec{}), "the codec ends the upstream chain")
		var ci credentialv3.CredentialInjector
		require.NoError(t, fs[0].GetTypedConfig().UnmarshalTo(&ci))
		require.True(t, ci.GetOverwrite(), "whatever the client sent is replaced")
		require.False(t, ci.GetAllowRequestWithoutCredential(), "no request goes out without the key")
		var g genericv3.Generic
		require.NoError(t, ci.GetCredential().GetTypedConfig().UnmarshalTo(&g))
		require.Equal(t, p.header, g.GetHeader())
		require.Equal(t, cl.GetName()+"-api-key", g.GetCredential().GetName())
		src := g.GetCredential().GetSdsConfig().GetPathConfigSource()
		require.Equal(t, "/etc/envoy/secrets/"+cl.GetName()+".yaml", src.GetPath(), "the key comes from a file, never from this bootstrap")
		require.Equal(t, "/etc/envoy/secrets", src.GetWatchedDirectory().GetPath(), "a rotated key is re-read")
	}
	require.NotContains(t, string(readFile(t, "envoy/envoy-providers.yaml")), `"sk-`, "no key is written in the bootstrap")
}

// requireRoutesAsDocumented checks the routing the bootstrap's comment promises, by matching
// each request against the routes in order as Envoy does (prefix, path and exact headers only).
func requireRoutesAsDocumented(t *testing.T, routes []*routev3.Route) {
	t.Helper()
	pick := func(path string, headers map[string]string) *routev3.RouteAction {
		for _, r := range routes {
			m := r.GetMatch()
			if p := m.GetPath(); p != "" && p != path {
				continue
			}
			if p := m.GetPrefix(); !strings.HasPrefix(path, p) {
				continue
			}
			ok := true
			for _, h := range m.GetHeaders() {
				ok = ok && headers[h.GetName()] == h.GetStringMatch().GetExact()
			}
			if ok {
				return r.GetRoute()
			}
		}
		return nil
	}
	cases := []struct {
		path    string
		headers map[string]string
		cluster string
		rewrite string
	}{
		{"/v1/chat/completions", nil, "openai", ""},
		{"/v1/responses", nil, "openai", ""},
		{"/v1/messages", nil, "anthropic", ""},
		{"/anthropic/v1/messages", nil, "anthropic", "/v1/"},
		{"/v1/chat/completions", map[string]string{"x-llm-provider": "azure"}, "azure", "/openai/v1/"},
	}
	for _, c := range cases {
		r := pick(c.path, c.headers)
		require.NotNil(t, r, c.path)
		require.Equal(t, c.cluster, r.GetCluster(), "%s %v", c.path, c.headers)
		require.Equal(t, c.rewrite, r.GetPrefixRewrite(), "%s %v", c.path, c.headers)
	}
}

func TestTheProviderSecretExampleIsTheSDSFileTheBootstrapReads(t *testing.T) {
	j, err := yaml.YAMLToJSON(readFile(t, "envoy/provider-secret.example.yaml"))
	require.NoError(t, err)
	// A DiscoveryResponse's resources, each an Any (the file holds nothing else: strict).
	var res struct {
		Resources []json.RawMessage `json:"resources"`
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&res))
	require.Len(t, res.Resources, 1)
	var a anypb.Any
	require.NoError(t, protojson.Unmarshal(res.Resources[0], &a))
	var s tlsv3.Secret
	require.NoError(t, a.UnmarshalTo(&s))
	require.NoError(t, s.ValidateAll())
	require.Equal(t, "openai-api-key", s.GetName(), "the name envoy-providers.yaml's openai cluster asks for")
	require.True(t, strings.HasPrefix(s.GetGenericSecret().GetSecret().GetInlineString(), "Bearer "),
		"the injector writes the value as is: OpenAI's Authorization wants the scheme")
}

// requireHashedKeys checks that a shipped config names its keys only by their SHA-256.
func requireHashedKeys(t *testing.T, c *config.Config) {
	t.Helper()
	for i, k := range c.APIKeys {
		require.True(t, strings.HasPrefix(k.Key, "sha256:"), "api_keys[%d] is written as a sha256: hash", i)
	}
	for i, k := range c.RateLimiting.BypassKeys {
		require.True(t, strings.HasPrefix(k, "sha256:"), "bypass_keys[%d] is written as a sha256: hash", i)
	}
}

func jsonValid(s string) bool { return json.Valid([]byte(s)) }
