// Package manifests checks the shipped deployment manifests against the real APIs in its tests:
// the Envoy bootstraps (envoy/envoy.yaml, envoy/envoy-fleet.yaml) against go-control-plane's
// Bootstrap with every typed_config resolved and validated, the Istio WasmPlugin against
// istio.io/api, the Kubernetes manifests (examples/kubernetes) against k8s.io/api, and every plugin
// configuration inside them against the filter's own config code. Its only code is Istio's rule
// for where a WasmPlugin attaches (istio.go), which the tests of every WasmPlugin the project
// ships or generates (envoy/cmd/ociimage) hold the manifests to. Nothing under filter/ or shared/
// imports it, so those heavy API modules never reach the .wasm:
//
//	go test ./envoy/manifests/
package manifests
