// Package manifests checks the shipped deployment manifests against the real APIs in its tests:
// the Envoy bootstraps (envoy/envoy.yaml, envoy/envoy-fleet.yaml) against go-control-plane's
// Bootstrap with every typed_config resolved and validated, the Istio WasmPlugin against
// istio.io/api, the Kubernetes manifests (examples/kubernetes) against k8s.io/api, and every plugin
// configuration inside them against the filter's own config code. It has no code of its own, so
// those heavy API modules are test dependencies only and never reach the .wasm:
//
//	go test ./envoy/manifests/
package manifests
