package manifests

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	credentialv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/credential_injector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	genericv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/generic/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	extv1alpha1 "istio.io/api/extensions/v1alpha1"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/tokenbudget/tokenbudget/shared/config"
)

// ingressGateway is the workload Istio's default ingress gateway runs: its pod labels and the
// container port of its HTTP listener.
var ingressGateway = struct {
	labels map[string]string
	port   uint32
}{map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway"}, 8080}

func TestIstiosSelectionRuleForWasmPlugins(t *testing.T) {
	match := func(mode typev1beta1.WorkloadMode, ports ...uint32) *extv1alpha1.WasmPlugin_TrafficSelector {
		ts := &extv1alpha1.WasmPlugin_TrafficSelector{Mode: mode}
		for _, p := range ports {
			ts.Ports = append(ts.Ports, &typev1beta1.PortSelector{Number: p})
		}
		return ts
	}
	cases := []struct {
		name     string
		match    []*extv1alpha1.WasmPlugin_TrafficSelector
		class    ListenerClass
		attaches bool
	}{
		{"no match: a gateway", nil, Gateway, true},
		{"no match: a sidecar inbound", nil, SidecarInbound, true},
		{"SERVER never selects a gateway", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_SERVER)}, Gateway, false},
		{"SERVER selects a sidecar inbound", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_SERVER)}, SidecarInbound, true},
		{"CLIENT selects a gateway", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_CLIENT)}, Gateway, true},
		{"CLIENT selects a sidecar outbound", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_CLIENT)}, SidecarOutbound, true},
		{"CLIENT does not select a sidecar inbound", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_CLIENT)}, SidecarInbound, false},
		{"CLIENT_AND_SERVER selects a gateway", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_CLIENT_AND_SERVER)}, Gateway, true},
		{"UNDEFINED selects a gateway", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_UNDEFINED)}, Gateway, true},
		{"the port must be listed", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_CLIENT, 8443)}, Gateway, false},
		{"a listed port", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_CLIENT, 8443, 8080)}, Gateway, true},
		{"one entry of several", []*extv1alpha1.WasmPlugin_TrafficSelector{match(typev1beta1.WorkloadMode_SERVER), match(typev1beta1.WorkloadMode_CLIENT)}, Gateway, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.attaches, WasmPluginAttaches(&extv1alpha1.WasmPlugin{Match: c.match}, c.class, 8080))
		})
	}
	require.True(t, SelectsLabels(&extv1alpha1.WasmPlugin{}, nil), "no selector: every workload of the namespace")
	require.False(t, SelectsLabels(&extv1alpha1.WasmPlugin{Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"istio": "egressgateway"}}},
		ingressGateway.labels))
}

// RequireAttachesToTheIngressGateway holds a WasmPlugin manifest to what it must do: decode
// strictly into istio.io/api, select the ingress gateway, and be applied to its listener by
// Istio's rule; its plugin config loads and holds no secret.
func requireAttachesToTheIngressGateway(t *testing.T, raw []byte) (*extv1alpha1.WasmPlugin, *config.Config) {
	t.Helper()
	_, wp := loadWasmPlugin(t, raw)
	require.True(t, SelectsLabels(wp, ingressGateway.labels), "the WasmPlugin selects the ingress gateway")
	require.True(t, WasmPluginAttaches(wp, Gateway, ingressGateway.port),
		"Istio applies it to the gateway's listener (a gateway is CLIENT: no match, or mode CLIENT)")
	pc, err := protojson.Marshal(wp.GetPluginConfig())
	require.NoError(t, err)
	c := requireLoadsCleanly(t, pc)
	requireHashedKeys(t, c)
	if r := c.RateLimiting.Redis; r != nil {
		require.Empty(t, r.Token, "no token in the WasmPlugin")
		if r.TokenEnv != "" {
			var fromHost bool
			for _, e := range wp.GetVmConfig().GetEnv() {
				if e.GetName() == r.TokenEnv {
					fromHost = e.GetValueFrom() == extv1alpha1.EnvValueSource_HOST
				}
			}
			require.True(t, fromHost, "vmConfig.env passes %s from the gateway's container (valueFrom: HOST)", r.TokenEnv)
		}
	}
	return wp, c
}

func TestEveryShippedWasmPluginAttachesToTheGatewayItSelects(t *testing.T) {
	// What make oci generated, when it ran, too; envoy/cmd/ociimage's test holds a freshly
	// generated one to the same rule.
	files, err := filepath.Glob(filepath.Join(root, "envoy", "istio", "*.yaml"))
	require.NoError(t, err)
	generated, err := filepath.Glob(filepath.Join(root, "build", "istio", "*.yaml"))
	require.NoError(t, err)
	files = append(files, generated...)
	n := 0
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		for _, d := range documents(t, rel) {
			if !bytes.Contains(d, []byte("\nkind: WasmPlugin")) {
				continue
			}
			n++
			requireAttachesToTheIngressGateway(t, d)
		}
	}
	require.Positive(t, n, "envoy/istio ships a WasmPlugin")

	// The manifest as it was (mode SERVER) fails the check: it is the rule that holds it.
	old := bytes.Replace(readFile(t, "envoy/istio/wasmplugin.yaml"), []byte("  type: HTTP\n"), []byte("  type: HTTP\n  match:\n  - mode: SERVER\n"), 1)
	_, wp := loadWasmPlugin(t, old)
	require.False(t, WasmPluginAttaches(wp, Gateway, ingressGateway.port))
}

// istioObject is one decoded document of envoy/istio/providers.yaml.
type istioObjects struct {
	gateways       []*networkingv1alpha3.Gateway
	serviceEntries []*networkingv1alpha3.ServiceEntry
	destRules      []*networkingv1alpha3.DestinationRule
	virtualSvcs    []*networkingv1alpha3.VirtualService
	envoyFilters   []*networkingv1alpha3.EnvoyFilter
}

func loadIstioProviders(t *testing.T) istioObjects {
	t.Helper()
	var o istioObjects
	for _, d := range documents(t, "envoy/istio/providers.yaml") {
		var obj k8sObject
		require.NoError(t, yaml.UnmarshalStrict(d, &obj))
		var m proto.Message
		switch obj.APIVersion + "/" + obj.Kind {
		case "networking.istio.io/v1/Gateway":
			g := &networkingv1alpha3.Gateway{}
			o.gateways, m = append(o.gateways, g), g
		case "networking.istio.io/v1/ServiceEntry":
			s := &networkingv1alpha3.ServiceEntry{}
			o.serviceEntries, m = append(o.serviceEntries, s), s
		case "networking.istio.io/v1/DestinationRule":
			s := &networkingv1alpha3.DestinationRule{}
			o.destRules, m = append(o.destRules, s), s
		case "networking.istio.io/v1/VirtualService":
			s := &networkingv1alpha3.VirtualService{}
			o.virtualSvcs, m = append(o.virtualSvcs, s), s
		case "networking.istio.io/v1alpha3/EnvoyFilter":
			s := &networkingv1alpha3.EnvoyFilter{}
			o.envoyFilters, m = append(o.envoyFilters, s), s
		default:
			t.Fatalf("unexpected object %s %s", obj.APIVersion, obj.Kind)
		}
		require.NoError(t, protojson.Unmarshal(obj.Spec, m), "%s %s decodes strictly into istio.io/api", obj.Kind, obj.Metadata.Name)
		require.Equal(t, "istio-system", obj.Metadata.Namespace, "beside the gateway and the WasmPlugin")
	}
	return o
}

// patchValue decodes an EnvoyFilter patch value strictly into the Envoy type it patches (an
// unknown field or type fails, in typed_configs too); with validate, every typed_config inside
// is also validated whole, which only a patch that sets a typed_config completely can pass (a
// MERGE into Istio's HTTP connection manager sets a part of it).
func patchValue(t *testing.T, p *networkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch, into proto.Message, validate bool) {
	t.Helper()
	j, err := protojson.Marshal(p.GetPatch().GetValue())
	require.NoError(t, err)
	require.NoError(t, protojson.Unmarshal(j, into), "%s patch decodes into %T", p.GetApplyTo(), into)
	if validate {
		resolveAnys(t, into.ProtoReflect(), p.GetApplyTo().String())
	}
}

func TestTheIstioProvidersExampleReachesEachProviderOverTLSWithAnInjectedKey(t *testing.T) {
	o := loadIstioProviders(t)
	require.Len(t, o.gateways, 1)
	require.Equal(t, "ingressgateway", o.gateways[0].GetSelector()["istio"])

	tlsPort := map[string]uint32{}
	for _, se := range o.serviceEntries {
		require.Len(t, se.GetHosts(), 1)
		require.Equal(t, networkingv1alpha3.ServiceEntry_MESH_EXTERNAL, se.GetLocation())
		require.Len(t, se.GetPorts(), 1)
		require.Equal(t, uint32(443), se.GetPorts()[0].GetTargetPort(), "dialled on 443")
		tlsPort[se.GetHosts()[0]] = se.GetPorts()[0].GetNumber()
	}
	originated := map[string]bool{}
	for _, dr := range o.destRules {
		for _, pl := range dr.GetTrafficPolicy().GetPortLevelSettings() {
			require.Equal(t, tlsPort[dr.GetHost()], pl.GetPort().GetNumber())
			require.Equal(t, networkingv1alpha3.ClientTLSSettings_SIMPLE, pl.GetTls().GetMode(), "TLS originated by the gateway")
			require.Equal(t, dr.GetHost(), pl.GetTls().GetSni())
			originated[dr.GetHost()] = true
		}
	}
	require.Len(t, o.virtualSvcs, 1)
	routed := map[string]bool{}
	for _, r := range o.virtualSvcs[0].GetHttp() {
		require.Len(t, r.GetRoute(), 1)
		dest := r.GetRoute()[0].GetDestination()
		require.True(t, originated[dest.GetHost()], "%s: a TLS-originated provider", r.GetName())
		require.Equal(t, tlsPort[dest.GetHost()], dest.GetPort().GetNumber())
		require.Equal(t, dest.GetHost(), r.GetRewrite().GetAuthority(), "%s rewrites Host to the provider's", r.GetName())
		routed[dest.GetHost()] = true
	}

	injected := map[string]string{}
	var bufferLimit uint32
	for _, ef := range o.envoyFilters {
		require.Equal(t, "ingressgateway", ef.GetWorkloadSelector().GetLabels()["istio"])
		for _, p := range ef.GetConfigPatches() {
			require.Equal(t, networkingv1alpha3.EnvoyFilter_GATEWAY, p.GetMatch().GetContext())
			switch p.GetApplyTo() {
			case networkingv1alpha3.EnvoyFilter_CLUSTER:
				var c clusterv3.Cluster
				patchValue(t, p, &c, true)
				host := p.GetMatch().GetCluster().GetService()
				require.Equal(t, tlsPort[host], p.GetMatch().GetCluster().GetPortNumber(), "the cluster Istio builds for the ServiceEntry")
				fs := upstreamFilters(t, &c)
				require.Len(t, fs, 2)
				var ci credentialv3.CredentialInjector
				require.NoError(t, fs[0].GetTypedConfig().UnmarshalTo(&ci))
				require.True(t, ci.GetOverwrite())
				var g genericv3.Generic
				require.NoError(t, ci.GetCredential().GetTypedConfig().UnmarshalTo(&g))
				require.NotNil(t, g.GetCredential().GetSdsConfig().GetPathConfigSource(), "the key comes from a mounted file")
				injected[host] = g.GetHeader()
			case networkingv1alpha3.EnvoyFilter_LISTENER:
				var l listenerv3.Listener
				patchValue(t, p, &l, true)
				bufferLimit = l.GetPerConnectionBufferLimitBytes().GetValue()
			case networkingv1alpha3.EnvoyFilter_NETWORK_FILTER:
				var f listenerv3.Filter
				patchValue(t, p, &f, false)
				var hcm hcmv3.HttpConnectionManager
				require.NoError(t, f.GetTypedConfig().UnmarshalTo(&hcm))
				require.NoError(t, hcm.GetLocalReplyConfig().ValidateAll(), "the part the MERGE sets")
				require.Equal(t, uint32(413), hcm.GetLocalReplyConfig().GetMappers()[0].GetFilter().GetStatusCodeFilter().GetComparison().GetValue().GetDefaultValue())
			default:
				t.Fatalf("unexpected patch %s", p.GetApplyTo())
			}
		}
	}
	for name, p := range providers {
		require.True(t, routed[p.host], "%s is routed", name)
		require.Equal(t, p.header, injected[p.host], "%s gets its key in %s", name, p.header)
	}

	// The WasmPlugin in front of them: keys stripped, only listed keys, and a body limit equal to
	// the buffer the EnvoyFilter sets.
	_, c := requireAttachesToTheIngressGateway(t, readFile(t, "envoy/istio/wasmplugin.yaml"))
	require.True(t, c.Identity.StripAPIKeyHeaders)
	require.Equal(t, config.UnknownKeyRefuse, c.Identity.UnknownAPIKeys)
	require.Equal(t, config.MissingKeyRefuse, c.Identity.MissingAPIKey)
	require.Equal(t, int64(bufferLimit), int64(*c.TokenBudget.MaxBodyBytes), "max_body_bytes and the gateway's buffer are set together")
	require.False(t, strings.Contains(string(readFile(t, "envoy/istio/providers.yaml")), `"sk-`), "no key in the example")
}
