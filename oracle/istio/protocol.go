package main

import "kfmesh.test/oracle/istio/envoy"

// Input is one platform and the questions asked of it.
type Input struct {
	// Objects is the platform: YAML documents separated by `---` lines (every kind; the ones Istio does
	// not read are left out).
	Objects string `json:"objects"`
	// Mesh is the mesh configuration (the `mesh` key of istio-system/istio), empty for Istio's defaults.
	Mesh string `json:"mesh"`
	// CRDs are files of CustomResourceDefinitions whose schema defaults the API server applies to the
	// custom objects (the real CRDs the platform runs with).
	CRDs    []string    `json:"crds"`
	Proxies []ProxyIn   `json:"proxies"`
	Queries []RequestIn `json:"requests"`
}

// ProxyIn is one proxy of the platform: a pod's sidecar, a gateway's pod, or a waypoint's pod.
type ProxyIn struct {
	ID string `json:"id"`
	// Type is sidecar, router (a gateway) or waypoint.
	Type      string            `json:"type"`
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	IP        string            `json:"ip"`
	Labels    map[string]string `json:"labels"`
	// ServiceAccount names the pod's service account (its identity).
	ServiceAccount string `json:"serviceAccount"`
}

// RequestIn is one request as the proxy sees it.
type RequestIn struct {
	ID    string `json:"id"`
	Proxy string `json:"proxy"`
	// Direction is outbound (a sidecar's own client sends it), inbound (a sidecar receives it for its
	// workload), gateway (a gateway receives it), waypoint (a waypoint receives it over HBONE: Address
	// and Port are the service address the client called, Principal the client's identity) or ztunnel
	// (the destination pod's ztunnel
	// receives the connection: Address is the pod's, SourceIP and, over HBONE, Principal the sender's;
	// Proxy is not used) or ztunnel-outbound (a client's ztunnel captures a connection to Address).
	Direction string `json:"direction"`
	// Address and Port are the destination the connection was opened to (the original destination).
	Address string `json:"address"`
	Port    uint32 `json:"port"`
	// Protocol is http, http2, grpc or tcp.
	Protocol string `json:"protocol"`
	// TLS is none, tls (TLS without a client certificate) or mtls (Istio's mutual TLS).
	TLS       string            `json:"tls"`
	SNI       string            `json:"sni,omitempty"`
	ALPN      []string          `json:"alpn,omitempty"`
	Authority string            `json:"authority,omitempty"`
	Path      string            `json:"path,omitempty"`
	Method    string            `json:"method,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	SourceIP  string            `json:"sourceIP,omitempty"`
	// Principal is the client's identity when the connection is mutual TLS.
	Principal string `json:"principal,omitempty"`
	// Authn is what request authentication established (the istio_authn metadata: request.auth.*).
	Authn map[string]any `json:"authn,omitempty"`
}

// Output answers every request, in order.
type Output struct {
	// Rejected lists configuration Istio's validation refuses (an API server with Istio's webhook would
	// not have stored it), as "Kind namespace/name: reason"; it takes no part in the answers.
	Rejected []string `json:"rejected,omitempty"`
	Answers  []Answer `json:"answers"`
}

// Answer is what one proxy does with one request.
type Answer struct {
	ID          string `json:"id"`
	Listener    string `json:"listener,omitempty"`
	FilterChain string `json:"filterChain,omitempty"`
	RouteConfig string `json:"routeConfig,omitempty"`
	VirtualHost string `json:"virtualHost,omitempty"`
	Route       string `json:"route,omitempty"`
	envoy.Action
	// Outcome is forwarded, or why the proxy stopped the request: no_listener, no_filter_chain,
	// tls_error, mtls_required, protocol_error, rbac_denied, no_virtual_host, no_route, tls_redirect,
	// redirect, direct_response.
	Outcome string `json:"outcome"`
	// Code is the status the proxy answers itself with (404 no route, 403 RBAC, 301 TLS redirect, ...).
	Code int `json:"code,omitempty"`
	// RBAC is each RBAC filter's decision, in filter order.
	RBAC []envoy.Decision `json:"rbac,omitempty"`
	// Custom names the external authorizer a CUSTOM policy sends the request to.
	Custom bool `json:"custom,omitempty"`
	// Unreachable lists the clusters of a weighted split that would not take a request (the proxy lacks
	// the cluster, or it has no host): Envoy answers those shares itself (NC or UH).
	Unreachable []string `json:"unreachable,omitempty"`
	// Error says why the oracle could not answer (a construct package envoy does not evaluate).
	Error string `json:"error,omitempty"`
}
