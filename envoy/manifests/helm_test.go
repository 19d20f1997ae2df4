package manifests

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	extv1alpha1 "istio.io/api/extensions/v1alpha1"
	netv1alpha3 "istio.io/api/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tokenbudget/tokenbudget/shared/config"
)

const chartDir = "examples/helm/tokenbudget"

// testDigest stands for the module image's digest make oci prints.
const testDigest = "5f2b8c0a3d4e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"

// rendered is the chart's output, every object decoded strictly into its API type.
type rendered struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	pdbs        map[string]*policyv1.PodDisruptionBudget
	jobs        map[string]*batchv1.Job
	plugins     map[string]*extv1alpha1.WasmPlugin
	pluginMeta  map[string]*k8sObject
	filters     map[string]*netv1alpha3.EnvoyFilter
	raw         string // every document, for the secret scan
}

// renderChart renders the chart with Helm's own loader and engine, as `helm template` would
// for an install named tokenbudget in namespace tokenbudget.
func renderChart(t *testing.T, values map[string]any) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(filepath.Join(root, chartDir))
	require.NoError(t, err)
	require.NoError(t, ch.Validate())
	vals, err := chartutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: "tokenbudget", Namespace: "tokenbudget", IsInstall: true}, nil)
	require.NoError(t, err)
	return engine.Engine{Strict: true}.Render(ch, vals)
}

func decodeChart(t *testing.T, values map[string]any) rendered {
	t.Helper()
	files, err := renderChart(t, values)
	require.NoError(t, err)
	r := rendered{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, jobs: map[string]*batchv1.Job{},
		plugins: map[string]*extv1alpha1.WasmPlugin{}, pluginMeta: map[string]*k8sObject{}, filters: map[string]*netv1alpha3.EnvoyFilter{}}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(files[n], -1) {
			if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(d, "")) == "" {
				continue
			}
			r.raw += d + "\n---\n"
			var meta metav1.TypeMeta
			require.NoError(t, yaml.Unmarshal([]byte(d), &meta), n)
			var om struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(d), &om), n)
			name := om.Metadata.Name
			strict := func(target any) {
				require.NoError(t, yaml.UnmarshalStrict([]byte(d), target), "%s: %s %s", n, meta.Kind, name)
			}
			switch meta.APIVersion + "/" + meta.Kind {
			case "apps/v1/Deployment":
				r.deployments[name] = &appsv1.Deployment{}
				strict(r.deployments[name])
			case "v1/Service":
				r.services[name] = &corev1.Service{}
				strict(r.services[name])
			case "policy/v1/PodDisruptionBudget":
				r.pdbs[name] = &policyv1.PodDisruptionBudget{}
				strict(r.pdbs[name])
			case "batch/v1/Job":
				r.jobs[name] = &batchv1.Job{}
				strict(r.jobs[name])
			case "extensions.istio.io/v1alpha1/WasmPlugin":
				r.pluginMeta[name], r.plugins[name] = loadWasmPlugin(t, []byte(d))
			case "networking.istio.io/v1alpha3/EnvoyFilter":
				var obj k8sObject
				strict(&obj)
				var f netv1alpha3.EnvoyFilter
				require.NoError(t, protojson.Unmarshal(obj.Spec, &f), "the EnvoyFilter's spec decodes strictly into istio.io/api")
				r.filters[name] = &f
			default:
				t.Fatalf("%s: unexpected object %s %s", n, meta.APIVersion, meta.Kind)
			}
		}
	}
	return r
}

func pinned() map[string]any {
	return map[string]any{"wasmPlugin": map[string]any{"sha256": testDigest}}
}

func TestTheHelmChartRendersObjectsThatDecodeStrictlyIntoTheKubernetesAndIstioAPIs(t *testing.T) {
	r := decodeChart(t, pinned())
	require.Len(t, r.deployments, 2)
	require.Contains(t, r.deployments, "sharedstore")
	require.Contains(t, r.deployments, "sharedstore-worker")
	require.Len(t, r.services, 1)
	require.Len(t, r.pdbs, 1)
	require.Len(t, r.jobs, 1)
	require.Contains(t, r.jobs, "sharedstore-migrate")
	require.Len(t, r.plugins, 1)
	require.Len(t, r.filters, 1)

	s := sharedstore{deploy: *r.deployments["sharedstore"], service: *r.services["sharedstore"], pdb: *r.pdbs["sharedstore"]}
	pod := s.deploy.Spec.Template
	require.Equal(t, "tokenbudget", s.deploy.Namespace, "the release namespace")
	require.True(t, selects(s.deploy.Spec.Selector.MatchLabels, pod.Labels))
	require.True(t, selects(s.service.Spec.Selector, pod.Labels))
	require.True(t, selects(s.pdb.Spec.Selector.MatchLabels, pod.Labels))
	require.Less(t, s.pdb.Spec.MinAvailable.IntValue(), int(*s.deploy.Spec.Replicas))
	c := pod.Spec.Containers[0]
	requireSecretEnv(t, c, "SHAREDSTORE_TOKEN", "REDIS_URL", "DATABASE_URL")
	require.Contains(t, c.Args, "--listen=0.0.0.0:8081")
	require.Contains(t, c.Args, "--admin-token-file=/etc/sharedstore-admin/token")
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "admin-token", pod.Spec.Volumes[0].Secret.Items[0].Key)
	require.Equal(t, "http", s.service.Spec.Ports[0].Name, "Istio takes the protocol from the port name")

	w := r.deployments["sharedstore-worker"]
	require.False(t, selects(s.service.Spec.Selector, w.Spec.Template.Labels), "the Service sends workers no traffic")
	require.False(t, selects(w.Spec.Selector.MatchLabels, pod.Labels), "nor does the worker adopt sharedstore pods")
	wc := w.Spec.Template.Spec.Containers[0]
	require.Equal(t, c.Image, wc.Image, "the worker is a subcommand of the sharedstore image")
	require.Equal(t, "worker", wc.Args[0])
	requireSecretEnv(t, wc, "DATABASE_URL", "REDIS_URL")

	// The schema comes first: a hook Job of the same image, before install and upgrade.
	j := r.jobs["sharedstore-migrate"]
	require.Equal(t, "pre-install,pre-upgrade", j.Annotations["helm.sh/hook"])
	jc := j.Spec.Template.Spec.Containers[0]
	require.Equal(t, c.Image, jc.Image)
	require.Equal(t, []string{"migrate", "--database=$(DATABASE_URL)"}, jc.Args)
	requireSecretEnv(t, jc, "DATABASE_URL")
	require.Equal(t, corev1.RestartPolicyNever, j.Spec.Template.Spec.RestartPolicy)

	for _, spec := range []corev1.PodSpec{pod.Spec, w.Spec.Template.Spec, j.Spec.Template.Spec} {
		require.True(t, *spec.SecurityContext.RunAsNonRoot)
		require.Equal(t, int64(65532), *spec.SecurityContext.RunAsUser, "the image's non-root user")
		for _, k := range spec.Containers {
			require.False(t, *k.SecurityContext.AllowPrivilegeEscalation, k.Name)
			require.True(t, *k.SecurityContext.ReadOnlyRootFilesystem, k.Name)
			require.NotNil(t, k.Resources.Limits.Memory(), k.Name)
		}
	}
}

// pluginConfigOf is a WasmPlugin's pluginConfig as the filter reads it.
func pluginConfigOf(t *testing.T, wp *extv1alpha1.WasmPlugin) map[string]any {
	t.Helper()
	raw, err := protojson.Marshal(wp.GetPluginConfig())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// requireChartConfigLoads runs the filter's own config code on the chart's plugin config.
func requireChartConfigLoads(t *testing.T, cfg map[string]any) *config.Config {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	return requireLoadsCleanly(t, raw)
}

func TestTheChartsWasmPluginAttachesToTheGatewayAndReachesSharedstoreWithNoSecretInIt(t *testing.T) {
	r := decodeChart(t, pinned())
	wp := r.plugins["tokenbudget"]
	require.NotNil(t, wp)
	require.Equal(t, "istio-system", r.pluginMeta["tokenbudget"].Metadata.Namespace)
	require.Equal(t, map[string]string{"istio": "ingressgateway"}, wp.GetSelector().GetMatchLabels())
	require.Empty(t, wp.GetMatch(), "no match: a gateway's listeners are CLIENT, and mode SERVER never attaches to one")
	require.True(t, WasmPluginAttaches(wp, Gateway, ingressGateway.port), "Istio's selection rule attaches it to the gateway")
	require.Equal(t, testDigest, wp.GetSha256())
	require.Equal(t, extv1alpha1.FailStrategy_FAIL_CLOSE, wp.GetFailStrategy())
	require.Equal(t, "tokenbudget", wp.GetPluginName())
	require.True(t, strings.HasPrefix(wp.GetUrl(), "oci://"))

	cfg := pluginConfigOf(t, wp)
	redis := cfg["rate_limiting"].(map[string]any)["redis"].(map[string]any)
	require.NotContains(t, redis, "token", "no token in the plugin config")
	require.Equal(t, "TOKENBUDGET_SHAREDSTORE_TOKEN", redis["token_env"])
	env := wp.GetVmConfig().GetEnv()
	require.Len(t, env, 1)
	require.Equal(t, redis["token_env"], env[0].GetName(), "the variable token_env names is the VM's")
	require.Equal(t, extv1alpha1.EnvValueSource_HOST, env[0].GetValueFrom(), "copied from the proxy's environment, not written here")
	require.Empty(t, env[0].GetValue())
	keys, _ := cfg["api_keys"].([]any)
	for _, k := range keys {
		require.True(t, strings.HasPrefix(k.(map[string]any)["key"].(string), "sha256:"), "keys by hash only")
	}

	c := requireChartConfigLoads(t, cfg)
	require.Equal(t, config.StorageRedis, c.RateLimiting.Storage)
	svc := r.services["sharedstore"]
	require.Equal(t, istioCluster(svc), c.RateLimiting.Redis.Cluster, "the cluster Istio gives the chart's Service")
	require.Equal(t, svc.Name+"."+svc.Namespace+".svc.cluster.local", c.RateLimiting.Redis.Authority)
}

func TestTheChartSpellsNoSecretAndRefusesAnUnpinnedModule(t *testing.T) {
	r := decodeChart(t, pinned())
	for _, bad := range []string{"sk-", "redis://", "rediss://", "postgres://", "postgresql://", "password", "replace-with", "kind: Secret"} {
		require.NotContains(t, strings.ToLower(r.raw), bad, "the chart references Secrets, it never holds one")
	}
	require.Regexp(t, `(?m)^\s+token_env: TOKENBUDGET_SHAREDSTORE_TOKEN$`, r.raw)
	require.NotRegexp(t, `(?m)^\s+token: `, r.raw)

	_, err := renderChart(t, nil)
	require.ErrorContains(t, err, "wasmPlugin.sha256", "the default values do not deploy a module no digest pins")
}

func TestTheChartsStatsBootstrapPatchIsEnvoysStatsTags(t *testing.T) {
	r := decodeChart(t, pinned())
	f := r.filters["tokenbudget-stats-tags"]
	require.NotNil(t, f)
	require.Equal(t, map[string]string{"istio": "ingressgateway"}, f.GetWorkloadSelector().GetLabels(), "the gateway the plugin is on")
	require.Len(t, f.GetConfigPatches(), 1)
	p := f.GetConfigPatches()[0]
	require.Equal(t, netv1alpha3.EnvoyFilter_BOOTSTRAP, p.GetApplyTo())
	require.Equal(t, netv1alpha3.EnvoyFilter_Patch_MERGE, p.GetPatch().GetOperation())
	raw, err := protojson.Marshal(p.GetPatch().GetValue())
	require.NoError(t, err)
	var b bootstrapv3.Bootstrap
	require.NoError(t, protojson.Unmarshal(raw, &b), "the patch is a part of a v3 Bootstrap")
	require.NoError(t, b.ValidateAll())
	want := loadBootstrap(t, "envoy/envoy.yaml").GetStatsConfig()
	require.NotEmpty(t, want.GetStatsTags())
	require.True(t, proto.Equal(want, b.GetStatsConfig()), "the same stats_tags as envoy/envoy.yaml")
}

func TestTheChartsOptionalPartsCanBeLeftOut(t *testing.T) {
	r := decodeChart(t, map[string]any{"worker": map[string]any{"enabled": false}, "migrate": map[string]any{"enabled": false},
		"wasmPlugin": map[string]any{"enabled": false}, "statsTags": map[string]any{"enabled": false},
		"sharedstore": map[string]any{"adminAPI": false}})
	require.Len(t, r.deployments, 1)
	require.Empty(t, r.jobs)
	require.Empty(t, r.plugins)
	require.Empty(t, r.filters)
	c := r.deployments["sharedstore"].Spec.Template.Spec.Containers[0]
	for _, a := range c.Args {
		require.NotContains(t, a, "--admin-token-file")
	}
	require.Empty(t, c.VolumeMounts)
}

// The image make images builds is the one every manifest and the chart run.
func TestTheManifestsAndTheChartNameTheImageMakeImagesBuilds(t *testing.T) {
	m := regexp.MustCompile(`(?m)^SHAREDSTORE_REF\s*\?=\s*(\S+)$`).FindStringSubmatch(string(readFile(t, "Makefile")))
	require.NotNil(t, m, "the Makefile's SHAREDSTORE_REF")
	ref := m[1]
	s := loadSharedstore(t)
	require.Equal(t, ref, s.deploy.Spec.Template.Spec.Containers[0].Image)
	for _, c := range s.deploy.Spec.Template.Spec.InitContainers {
		require.Equal(t, ref, c.Image)
	}
	docs := documents(t, "examples/kubernetes/worker.yaml")
	var w appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict(docs[0], &w))
	require.Equal(t, ref, w.Spec.Template.Spec.Containers[0].Image)
	r := decodeChart(t, pinned())
	require.Equal(t, ref, r.deployments["sharedstore"].Spec.Template.Spec.Containers[0].Image, "the chart's default image")
}

// The README's install command sets values the chart has, and its commands name the chart's
// objects as they render.
func TestTheReadmesProductionWalkThroughMatchesTheChart(t *testing.T) {
	readme := string(readFile(t, "README.md"))
	i := strings.Index(readme, "\n## Production on Istio\n")
	require.GreaterOrEqual(t, i, 0)
	sec := readme[i:]
	sec = sec[:strings.Index(sec, "\n## Layout\n")]
	require.Contains(t, sec, "helm install tokenbudget "+chartDir+" -n tokenbudget")
	sets := regexp.MustCompile(`--set ([a-zA-Z0-9.]+)=`).FindAllStringSubmatch(sec, -1)
	require.NotEmpty(t, sets)
	var values map[string]any
	require.NoError(t, yaml.Unmarshal(readFile(t, chartDir+"/values.yaml"), &values))
	for _, m := range sets {
		v := any(values)
		for _, k := range strings.Split(m[1], ".") {
			mv, ok := v.(map[string]any)
			require.True(t, ok, "--set %s", m[1])
			v, ok = mv[k]
			require.True(t, ok, "--set %s: the chart has no %s", m[1], k)
		}
	}
	r := decodeChart(t, pinned())
	require.Contains(t, r.jobs, "sharedstore-migrate")
	require.Contains(t, sec, "`sharedstore-migrate`")
	require.Contains(t, r.filters, "tokenbudget-stats-tags")
	require.Contains(t, sec, "`tokenbudget-stats-tags`")
	require.Contains(t, sec, "svc/sharedstore 8081:8081")
	require.Equal(t, int32(8081), r.services["sharedstore"].Spec.Ports[0].Port)
	require.Contains(t, sec, "secret generic sharedstore ")
	require.Contains(t, sec, "secret generic sharedstore-token ")
	var vals struct {
		WasmPlugin struct {
			TokenEnv    string `json:"tokenEnv"`
			TokenSecret struct {
				Name, Key string
			} `json:"tokenSecret"`
		} `json:"wasmPlugin"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, chartDir+"/values.yaml"), &vals))
	require.Contains(t, sec, `"name":"`+vals.WasmPlugin.TokenEnv+`"`, "the patch gives the proxy the variable token_env names")
	require.Contains(t, sec, `"secretKeyRef":{"name":"`+vals.WasmPlugin.TokenSecret.Name+`","key":"`+vals.WasmPlugin.TokenSecret.Key+`"}`)
	for _, k := range []string{"token", "admin-token", "redis-url", "database-url"} {
		require.Contains(t, sec, "--from-literal="+k+"=", "the Secret holds the key the chart reads")
	}
}
