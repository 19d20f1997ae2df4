package manifests

import (
	extv1alpha1 "istio.io/api/extensions/v1alpha1"
	typev1beta1 "istio.io/api/type/v1beta1"
)

// ListenerClass is how Istio classes the listener a WasmPlugin may attach to.
type ListenerClass int

const (
	// Gateway is any listener of a gateway workload (ingress or egress).
	Gateway ListenerClass = iota
	// SidecarInbound is a sidecar's listener for traffic to its workload.
	SidecarInbound
	// SidecarOutbound is a sidecar's listener for traffic from its workload.
	SidecarOutbound
)

// workloadMode is the WorkloadMode a listener class answers to. Istio's documentation of
// WorkloadMode (istio.io/docs/reference/config/type/workload-selector, "CLIENT: Selects for
// scenarios when the workload is the source of the network traffic. In addition, if the
// workload is a gateway, selects this.") and its source (istio/istio pilot/pkg/model, the
// WasmPlugin matcher and its test "gateway is not matched with workloadMode SERVER") class every
// gateway listener as CLIENT, a sidecar's inbound listener as SERVER and its outbound one as
// CLIENT.
func (c ListenerClass) workloadMode() typev1beta1.WorkloadMode {
	if c == SidecarInbound {
		return typev1beta1.WorkloadMode_SERVER
	}
	return typev1beta1.WorkloadMode_CLIENT
}

// WasmPluginAttaches reports whether Istio applies wp to a listener of class c on port, for a
// workload its selector already picked: with no match entry every listener matches; otherwise
// one entry must match both the mode (UNDEFINED and CLIENT_AND_SERVER match every class) and the
// port (an empty port list matches every port). This is the rule a WasmPlugin with
// "mode: SERVER" on a gateway falls foul of: it is accepted, and never applied.
func WasmPluginAttaches(wp *extv1alpha1.WasmPlugin, c ListenerClass, port uint32) bool {
	if len(wp.GetMatch()) == 0 {
		return true
	}
	for _, m := range wp.GetMatch() {
		mode := m.GetMode()
		if mode != typev1beta1.WorkloadMode_UNDEFINED && mode != typev1beta1.WorkloadMode_CLIENT_AND_SERVER && mode != c.workloadMode() {
			continue
		}
		if len(m.GetPorts()) == 0 {
			return true
		}
		for _, p := range m.GetPorts() {
			if p.GetNumber() != 0 && p.GetNumber() == port {
				return true
			}
		}
	}
	return false
}

// SelectsLabels reports whether a WasmPlugin's selector picks a workload with these labels:
// every matchLabels pair must be among them. (A WasmPlugin with no selector and no targetRefs
// applies to every workload of its namespace, or the mesh from the root namespace.)
func SelectsLabels(wp *extv1alpha1.WasmPlugin, labels map[string]string) bool {
	sel := wp.GetSelector().GetMatchLabels()
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0 || len(wp.GetTargetRefs()) == 0 && wp.GetTargetRef() == nil
}
