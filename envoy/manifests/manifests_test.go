package manifests

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	wasmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	extv1alpha1 "istio.io/api/extensions/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	// The extensions the bootstraps name in typed_config, so their Any types resolve. An
	// extension a bootstrap uses without its import here fails the decode ("unable to resolve").
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/credential_injector/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/generic/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/tokenbudget/tokenbudget/shared/config"
)

const root = "../.."

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	return b
}

// validator is what protoc-gen-validate generates on every go-control-plane message.
type validator interface{ ValidateAll() error }

// resolveAnys walks m and every message inside it; each Any is unpacked into its registered
// type (an unregistered type fails), validated, and walked in turn. Bootstrap.ValidateAll stops
// at an Any, so without this a typed_config would be checked only for being well-formed.
func resolveAnys(t *testing.T, m protoreflect.Message, path string) int {
	t.Helper()
	n := 0
	if a, ok := m.Interface().(*anypb.Any); ok {
		inner, err := a.UnmarshalNew()
		require.NoError(t, err, "%s: %s", path, a.GetTypeUrl())
		if v, ok := inner.(validator); ok {
			require.NoError(t, v.ValidateAll(), "%s: %s", path, a.GetTypeUrl())
		}
		return 1 + resolveAnys(t, inner.ProtoReflect(), path+"("+a.GetTypeUrl()+")")
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := path + "." + string(fd.Name())
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				n += resolveAnys(t, v.List().Get(i).Message(), p+"["+strconv.Itoa(i)+"]")
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				n += resolveAnys(t, mv.Message(), p+"["+k.String()+"]")
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			n += resolveAnys(t, v.Message(), p)
		}
		return true
	})
	return n
}

// loadBootstrap decodes a bootstrap YAML strictly (unknown fields fail) into the v3 API and
// validates it with every typed_config resolved.
func loadBootstrap(t *testing.T, rel string) *bootstrapv3.Bootstrap {
	t.Helper()
	j, err := yaml.YAMLToJSON(readFile(t, rel))
	require.NoError(t, err)
	var b bootstrapv3.Bootstrap
	require.NoError(t, protojson.Unmarshal(j, &b), rel)
	require.NoError(t, b.ValidateAll(), rel)
	require.Positive(t, resolveAnys(t, b.ProtoReflect(), "bootstrap"), "%s has typed_configs", rel)
	return &b
}

// wasmFilters returns every envoy.filters.http.wasm config of the bootstrap's listeners.
func wasmFilters(t *testing.T, b *bootstrapv3.Bootstrap) []*wasmv3.Wasm {
	t.Helper()
	var out []*wasmv3.Wasm
	for _, l := range b.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				var hcm hcmv3.HttpConnectionManager
				if f.GetTypedConfig().MessageIs(&hcm) {
					require.NoError(t, f.GetTypedConfig().UnmarshalTo(&hcm))
					hf := hcm.GetHttpFilters()
					require.Equal(t, "envoy.filters.http.router", hf[len(hf)-1].GetName(), "the router is last")
					for _, h := range hf {
						var w wasmv3.Wasm
						if h.GetTypedConfig().MessageIs(&w) {
							require.NoError(t, h.GetTypedConfig().UnmarshalTo(&w))
							out = append(out, &w)
						}
					}
				}
			}
		}
	}
	return out
}

// requireLoadsCleanly runs the filter's own config code on a plugin config: no error, and none
// of the warnings `tbconfig validate` prints.
func requireLoadsCleanly(t *testing.T, raw []byte) *config.Config {
	t.Helper()
	c, err := config.Check(raw)
	require.NoError(t, err, string(raw))
	_, err = c.Compile()
	require.NoError(t, err)
	require.Empty(t, c.Warnings(), string(raw))
	_, _, err = config.Load(raw)
	require.NoError(t, err)
	return c
}

func TestEnvoyBootstrapsDecodeIntoTheV3APIAndTheirPluginConfigsLoad(t *testing.T) {
	tests := []struct {
		file    string
		storage string
	}{
		{"envoy/envoy.yaml", config.StorageMemory},
		{"envoy/envoy-fleet.yaml", config.StorageRedis},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			b := loadBootstrap(t, tc.file)
			clusters := map[string]bool{}
			for _, c := range b.GetStaticResources().GetClusters() {
				clusters[c.GetName()] = true
			}
			require.True(t, clusters["llm"], "the route's cluster")
			ws := wasmFilters(t, b)
			require.Len(t, ws, 1)
			w := ws[0].GetConfig()
			require.Equal(t, "tokenbudget", w.GetRootId())
			require.False(t, w.GetFailOpen(), "a failed VM answers 503")
			require.Equal(t, "envoy.wasm.runtime.v8", w.GetVmConfig().GetRuntime())
			require.Equal(t, "build/filter.wasm", w.GetVmConfig().GetCode().GetLocal().GetFilename(), "what make build writes")

			var sv wrapperspb.StringValue
			require.NoError(t, w.GetConfiguration().UnmarshalTo(&sv), "the configuration is a StringValue of JSON")
			c := requireLoadsCleanly(t, []byte(sv.GetValue()))
			require.Equal(t, tc.storage, c.RateLimiting.Storage)
			requireHashedKeys(t, c)
			if tc.storage == config.StorageRedis {
				r := c.RateLimiting.Redis
				require.True(t, clusters[r.Cluster], "redis.cluster %q names a cluster of the bootstrap", r.Cluster)
				require.Empty(t, r.Token, "no secret in the bootstrap")
				require.NotEmpty(t, r.TokenEnv)
				env := w.GetVmConfig().GetEnvironmentVariables()
				require.Contains(t, env.GetHostEnvKeys(), r.TokenEnv, "the VM gets the token from Envoy's environment")
				require.NotContains(t, env.GetKeyValues(), r.TokenEnv, "not written into the bootstrap")
			}
		})
	}
}

func TestABootstrapWithAnUnknownFieldOrUnresolvableTypeIsRejected(t *testing.T) {
	// The checks above must be able to fail: an unknown field and an unregistered type.
	for name, doc := range map[string]string{
		"unknown field": `{"admin":{"adress":{}}}`,
		"unknown type": `{"static_resources":{"listeners":[{"name":"l","address":{"socket_address":{"address":"127.0.0.1","port_value":1}},` +
			`"filter_chains":[{"filters":[{"name":"x","typed_config":{"@type":"type.googleapis.com/envoy.extensions.filters.network.no_such.v3.Filter"}}]}]}]}}`,
	} {
		var b bootstrapv3.Bootstrap
		require.Error(t, protojson.Unmarshal([]byte(doc), &b), name)
	}
	var b bootstrapv3.Bootstrap
	require.NoError(t, protojson.Unmarshal([]byte(`{"static_resources":{"clusters":[{"name":""}]}}`), &b))
	require.Error(t, b.ValidateAll(), "a cluster needs a name")
}

// k8sObject is the envelope of one manifest, decoded strictly.
type k8sObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       json.RawMessage   `json:"spec"`
}

// documents splits a multi-document YAML file.
func documents(t *testing.T, rel string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(readFile(t, rel)), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(d, "")) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

// sharedstore decodes examples/kubernetes/sharedstore.yaml strictly into k8s.io/api types.
type sharedstore struct {
	deploy  appsv1.Deployment
	service corev1.Service
	pdb     policyv1.PodDisruptionBudget
}

func loadSharedstore(t *testing.T) sharedstore {
	t.Helper()
	var s sharedstore
	kinds := map[string]int{}
	for _, d := range documents(t, "examples/kubernetes/sharedstore.yaml") {
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(d, &meta))
		kinds[meta.APIVersion+"/"+meta.Kind]++
		var target any
		switch meta.APIVersion + "/" + meta.Kind {
		case "apps/v1/Deployment":
			target = &s.deploy
		case "v1/Service":
			target = &s.service
		case "policy/v1/PodDisruptionBudget":
			target = &s.pdb
		default:
			t.Fatalf("unexpected object %s %s", meta.APIVersion, meta.Kind)
		}
		require.NoError(t, yaml.UnmarshalStrict(d, target), meta.Kind)
	}
	require.Equal(t, map[string]int{"apps/v1/Deployment": 1, "v1/Service": 1, "policy/v1/PodDisruptionBudget": 1}, kinds)
	return s
}

func selects(sel map[string]string, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestSharedstoreKubernetesManifestsAreValidAndConsistent(t *testing.T) {
	s := loadSharedstore(t)
	pod := s.deploy.Spec.Template
	ns := s.deploy.Namespace
	require.NotEmpty(t, ns)
	require.Equal(t, ns, s.service.Namespace)
	require.Equal(t, ns, s.pdb.Namespace)

	require.True(t, selects(s.deploy.Spec.Selector.MatchLabels, pod.Labels), "the Deployment selects its pods")
	require.True(t, selects(s.service.Spec.Selector, pod.Labels), "the Service selects the pods")
	require.True(t, selects(s.pdb.Spec.Selector.MatchLabels, pod.Labels), "the PDB covers the pods")
	require.NotNil(t, s.deploy.Spec.Replicas)
	require.NotNil(t, s.pdb.Spec.MinAvailable)
	require.Less(t, s.pdb.Spec.MinAvailable.IntValue(), int(*s.deploy.Spec.Replicas), "a drain can still evict one pod")

	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	probe := func(p *corev1.Probe) (string, int32) {
		require.NotNil(t, p)
		require.NotNil(t, p.HTTPGet)
		port := p.HTTPGet.Port.IntVal
		if p.HTTPGet.Port.StrVal != "" {
			var ok bool
			port, ok = ports[p.HTTPGet.Port.StrVal]
			require.True(t, ok, "probe port %q is a container port", p.HTTPGet.Port.StrVal)
		}
		return p.HTTPGet.Path, port
	}
	livePath, livePort := probe(c.LivenessProbe)
	readyPath, readyPort := probe(c.ReadinessProbe)
	require.Equal(t, "/healthz", livePath)
	require.Equal(t, "/readyz", readyPath)
	require.Contains(t, c.Args, "--listen=0.0.0.0:"+strconv.Itoa(int(livePort)), "sharedstore listens where it is probed")
	require.Equal(t, livePort, readyPort)

	// Secrets by reference: the token and the Redis and PostgreSQL URLs (which may hold a
	// password) come from a Secret, and no argument spells a URL out.
	requireSecretEnv(t, c, "SHAREDSTORE_TOKEN", "REDIS_URL", "DATABASE_URL")
	require.Contains(t, c.Args, "--redis=$(REDIS_URL)")
	require.Contains(t, c.Args, "--database=$(DATABASE_URL)")
	for _, a := range c.Args {
		require.NotContains(t, a, "--token-file=", "the token comes from the environment")
	}
	// The admin token is a file from the Secret, and only that key is mounted.
	adminFile := ""
	for _, a := range c.Args {
		if f, ok := strings.CutPrefix(a, "--admin-token-file="); ok {
			adminFile = f
		}
	}
	require.NotEmpty(t, adminFile, "sharedstore serves the admin API")
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if strings.HasPrefix(adminFile, m.MountPath+"/") {
			mount = &c.VolumeMounts[i]
		}
	}
	require.NotNil(t, mount, "%s is in a mounted volume", adminFile)
	require.True(t, mount.ReadOnly)
	var vol *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Name == mount.Name {
			vol = &pod.Spec.Volumes[i]
		}
	}
	require.NotNil(t, vol)
	require.NotNil(t, vol.Secret, "the admin token comes from a Secret")
	require.Equal(t, []corev1.KeyToPath{{Key: "admin-token", Path: strings.TrimPrefix(adminFile, mount.MountPath+"/")}}, vol.Secret.Items)
	require.NotNil(t, pod.Spec.SecurityContext.FSGroup, "the non-root user reads the token through its group")
	require.Equal(t, int32(0o440), *vol.Secret.DefaultMode, "readable by the pod's group, not the world")
	requireMigratesFirst(t, pod.Spec, c.Image)

	require.Len(t, s.service.Spec.Ports, 1)
	sp := s.service.Spec.Ports[0]
	require.Equal(t, "http", sp.Name, "Istio takes the protocol from the port name")
	require.Equal(t, ports[sp.TargetPort.StrVal], livePort, "the Service targets the container port")
}

// requireSecretEnv checks that each variable comes from a Secret, and that no argument of the
// container spells a URL out.
func requireSecretEnv(t *testing.T, c corev1.Container, names ...string) {
	t.Helper()
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for _, name := range names {
		e, ok := env[name]
		require.True(t, ok, "%s: %s", c.Name, name)
		require.Empty(t, e.Value, "%s is not written into the manifest", name)
		require.NotNil(t, e.ValueFrom, name)
		require.NotNil(t, e.ValueFrom.SecretKeyRef, "%s comes from a Secret", name)
		require.Equal(t, "sharedstore", e.ValueFrom.SecretKeyRef.Name, "the Secret examples/kubernetes/sharedstore.yaml describes")
	}
	for _, a := range c.Args {
		require.NotContains(t, a, "redis://", "no Redis URL in the arguments")
		require.NotContains(t, a, "postgres://", "no PostgreSQL URL in the arguments")
	}
}

// requireMigratesFirst checks that a pod applies the ledger's schema in an init container of
// the main container's image before it starts.
func requireMigratesFirst(t *testing.T, spec corev1.PodSpec, image string) {
	t.Helper()
	require.Len(t, spec.InitContainers, 1)
	m := spec.InitContainers[0]
	require.Equal(t, image, m.Image, "the schema of the release it runs")
	require.Equal(t, []string{"migrate", "--database=$(DATABASE_URL)"}, m.Args)
	requireSecretEnv(t, m, "DATABASE_URL")
}

func TestWorkerKubernetesManifestIsValidAndApartFromTheService(t *testing.T) {
	docs := documents(t, "examples/kubernetes/worker.yaml")
	require.Len(t, docs, 1)
	var w appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict(docs[0], &w))
	require.Equal(t, "apps/v1", w.APIVersion)
	require.Equal(t, "Deployment", w.Kind)
	s := loadSharedstore(t)
	pod := w.Spec.Template
	require.Equal(t, s.deploy.Namespace, w.Namespace)
	require.True(t, selects(w.Spec.Selector.MatchLabels, pod.Labels), "the Deployment selects its pods")
	require.False(t, selects(s.service.Spec.Selector, pod.Labels), "the sharedstore Service sends no traffic to workers")
	require.False(t, selects(s.deploy.Spec.Selector.MatchLabels, pod.Labels), "nor does its Deployment adopt them")
	require.False(t, selects(s.pdb.Spec.Selector.MatchLabels, pod.Labels))
	require.False(t, selects(w.Spec.Selector.MatchLabels, s.deploy.Spec.Template.Labels), "the worker does not adopt sharedstore pods")

	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	require.Equal(t, s.deploy.Spec.Template.Spec.Containers[0].Image, c.Image, "the worker is a subcommand of the sharedstore image")
	require.Equal(t, "worker", c.Args[0])
	require.Contains(t, c.Args, "--database=$(DATABASE_URL)")
	require.Contains(t, c.Args, "--redis=$(REDIS_URL)")
	requireSecretEnv(t, c, "DATABASE_URL", "REDIS_URL")
	requireMigratesFirst(t, pod.Spec, c.Image)
	require.Len(t, c.Ports, 1, "metrics only: it serves no traffic")
	require.Equal(t, "metrics", c.Ports[0].Name)
	require.NotNil(t, c.LivenessProbe)
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "metrics", c.LivenessProbe.HTTPGet.Port.StrVal)
	port := strconv.Itoa(int(c.Ports[0].ContainerPort))
	require.Contains(t, c.Args, "--listen=0.0.0.0:"+port, "the worker serves /healthz and /metrics where it is probed")
	require.Equal(t, port, pod.Annotations["prometheus.io/port"])

	sc := pod.Spec.SecurityContext
	require.NotNil(t, sc)
	require.True(t, *sc.RunAsNonRoot)
	for _, k := range append(pod.Spec.InitContainers, c) {
		require.False(t, *k.SecurityContext.AllowPrivilegeEscalation, k.Name)
		require.True(t, *k.SecurityContext.ReadOnlyRootFilesystem, k.Name)
		require.NotNil(t, k.Resources.Limits.Memory(), k.Name)
	}
}

// istioCluster is the Envoy cluster Istio builds for a Kubernetes Service port.
func istioCluster(svc *corev1.Service) string {
	return "outbound|" + strconv.Itoa(int(svc.Spec.Ports[0].Port)) + "||" + svc.Name + "." + svc.Namespace + ".svc.cluster.local"
}

func loadWasmPlugin(t *testing.T, raw []byte) (*k8sObject, *extv1alpha1.WasmPlugin) {
	t.Helper()
	var obj k8sObject
	require.NoError(t, yaml.UnmarshalStrict(raw, &obj))
	var wp extv1alpha1.WasmPlugin
	require.NoError(t, protojson.Unmarshal(obj.Spec, &wp), "the spec decodes strictly into istio.io/api")
	return &obj, &wp
}

func TestIstioWasmPluginDecodesIntoTheIstioAPIAndReachesSharedstore(t *testing.T) {
	obj, wp := loadWasmPlugin(t, readFile(t, "envoy/istio/wasmplugin.yaml"))
	require.Equal(t, "extensions.istio.io/v1alpha1", obj.APIVersion)
	require.Equal(t, "WasmPlugin", obj.Kind)
	require.Equal(t, extv1alpha1.FailStrategy_FAIL_CLOSE, wp.GetFailStrategy())
	require.Equal(t, extv1alpha1.PluginType_HTTP, wp.GetType())
	require.Equal(t, "tokenbudget", wp.GetPluginName(), "the filter's root_id")
	require.True(t, strings.HasPrefix(wp.GetUrl(), "oci://"), wp.GetUrl())
	require.Equal(t, strings.Repeat("0", 64), wp.GetSha256(), "the placeholder make oci replaces")

	raw, err := protojson.Marshal(wp.GetPluginConfig())
	require.NoError(t, err)
	c := requireLoadsCleanly(t, raw)
	require.Equal(t, config.StorageRedis, c.RateLimiting.Storage)
	svc := loadSharedstore(t).service
	require.Equal(t, istioCluster(&svc), c.RateLimiting.Redis.Cluster, "the cluster Istio gives the sharedstore Service")
	require.Equal(t, svc.Name+"."+svc.Namespace+".svc.cluster.local", c.RateLimiting.Redis.Authority)
}

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	src := readFile(t, "envoy/istio/wasmplugin.yaml")
	bad := bytes.Replace(src, []byte("  failStrategy:"), []byte("  failStrategyy:"), 1)
	require.NotEqual(t, src, bad)
	var obj k8sObject
	require.NoError(t, yaml.UnmarshalStrict(bad, &obj))
	require.Error(t, protojson.Unmarshal(obj.Spec, &extv1alpha1.WasmPlugin{}), "a misspelt spec field")
	require.Error(t, yaml.UnmarshalStrict([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: x, labelz: {}}\n"), &obj))
	var svc corev1.Service
	require.Error(t, yaml.UnmarshalStrict([]byte("apiVersion: v1\nkind: Service\nspec: {selectorr: {}}\n"), &svc))
}
