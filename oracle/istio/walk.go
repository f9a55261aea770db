package main

import (
	"fmt"
	"os"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbacnet "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"kfmesh.test/oracle/istio/envoy"
)

// Envoy's names for the filters the walk reads.
const (
	tlsInspector  = "envoy.filters.listener.tls_inspector"
	httpInspector = "envoy.filters.listener.http_inspector"
	hcmFilter     = "envoy.filters.network.http_connection_manager"
	tcpProxy      = "envoy.filters.network.tcp_proxy"
	rbacNetwork   = "envoy.filters.network.rbac"
	rbacHTTP      = "envoy.filters.http.rbac"
)

func answer(input Input) (Output, error) {
	t := &failer{}
	defer t.close()
	w, err := newWorld(t, input)
	if err != nil {
		return Output{}, err
	}
	if id := os.Getenv("ORACLE_DUMP"); id != "" {
		w.dump(id)
	}
	out := Output{Rejected: w.rejected, Answers: make([]Answer, 0, len(input.Queries))}
	for _, q := range input.Queries {
		var a Answer
		switch q.Direction {
		case "ztunnel":
			a = w.ztunnelAnswer(q)
		case "ztunnel-outbound":
			a = w.ztunnelOutbound(q)
		default:
			pc, ok := w.proxies[q.Proxy]
			if !ok {
				return Output{}, fmt.Errorf("request %s: no proxy %q", q.ID, q.Proxy)
			}
			a = pc.walk(q)
		}
		a.ID = q.ID
		out.Answers = append(out.Answers, a)
	}
	return out, nil
}

// walk follows one request through one proxy's configuration.
func (pc *proxyConfig) walk(q RequestIn) Answer {
	a := Answer{}
	l := pc.listenerFor(q)
	if l == nil {
		a.Outcome = "no_listener"
		return a
	}
	a.Listener = l.GetName()
	conn := envoy.Connection{DestinationIP: q.Address, Port: q.Port, SourceIP: q.SourceIP}
	// A waypoint ends the HBONE tunnel (mutual TLS) before its internal listener, which reads the
	// plaintext inside.
	waypoint := q.Direction == "waypoint"
	tls := (q.TLS == "tls" || q.TLS == "mtls") && !waypoint
	if envoy.HasListenerFilter(l, tlsInspector, q.Port) && tls {
		conn.TLS, conn.SNI, conn.ALPN = true, q.SNI, q.ALPN
		if q.TLS == "mtls" && len(conn.ALPN) == 0 {
			// Istio's client sidecars offer these for mutual TLS.
			conn.ALPN = []string{"istio-http/1.1", "istio", "http/1.1"}
			if q.Protocol == "http2" || q.Protocol == "grpc" {
				conn.ALPN = []string{"istio-h2", "istio", "h2"}
			}
		}
	}
	if !tls && isHTTP(q.Protocol) && envoy.HasListenerFilter(l, httpInspector, q.Port) {
		conn.HTTP = "http/1.1"
		if q.Protocol != "http" {
			conn.HTTP = "h2c"
		}
	}
	fc, err := envoy.MatchFilterChain(l, conn)
	if err != nil {
		return failed(a, err)
	}
	if fc == nil {
		a.Outcome = "no_filter_chain"
		return a
	}
	a.FilterChain = fc.GetName()
	if ts := fc.GetTransportSocket(); ts != nil {
		ctx := &tlsv3.DownstreamTlsContext{}
		if err := ts.GetTypedConfig().UnmarshalTo(ctx); err != nil {
			return failed(a, fmt.Errorf("filter chain %s: transport socket: %w", fc.GetName(), err))
		}
		switch {
		case !tls:
			a.Outcome = "tls_error"
			return a
		case ctx.GetRequireClientCertificate().GetValue() && q.TLS != "mtls":
			a.Outcome = "mtls_required"
			return a
		}
	} else if tls && hasFilter(fc, hcmFilter) {
		// TLS bytes into a plaintext HTTP connection manager: the codec fails.
		a.Outcome = "protocol_error"
		return a
	}
	peer := envoy.Peer{
		DirectRemoteIP:  q.SourceIP,
		DestinationIP:   q.Address,
		DestinationPort: q.Port,
		SNI:             conn.SNI,
		Metadata:        map[string]map[string]any{"istio_authn": q.Authn},
	}
	if q.TLS == "mtls" && fc.GetTransportSocket() != nil {
		peer.Principal = q.Principal
	}
	if waypoint && q.Principal != "" {
		peer.FilterState = map[string]string{"io.istio.peer_principal": q.Principal}
	}
	for _, f := range fc.GetFilters() {
		switch f.GetName() {
		case rbacNetwork:
			cfg := &rbacnet.RBAC{}
			if err := f.GetTypedConfig().UnmarshalTo(cfg); err != nil {
				return failed(a, err)
			}
			d, err := envoy.Evaluate(cfg.GetRules(), nil, peer)
			if err != nil {
				return failed(a, err)
			}
			if cfg.GetRules() != nil {
				a.RBAC = append(a.RBAC, d)
			}
			if !d.Allowed {
				a.Outcome = "rbac_denied"
				return a
			}
		case hcmFilter:
			m := &hcm.HttpConnectionManager{}
			if err := f.GetTypedConfig().UnmarshalTo(m); err != nil {
				return failed(a, err)
			}
			if !isHTTP(q.Protocol) {
				a.Outcome = "protocol_error"
				return a
			}
			return pc.http(a, m, q, peer, tls)
		case tcpProxy:
			tp := &tcpproxy.TcpProxy{}
			if err := f.GetTypedConfig().UnmarshalTo(tp); err != nil {
				return failed(a, err)
			}
			a.Cluster = tp.GetCluster()
			for _, wc := range tp.GetWeightedClusters().GetClusters() {
				a.Weighted = append(a.Weighted, envoy.WeightedCluster{Name: wc.GetName(), Weight: wc.GetWeight()})
			}
			a.Outcome, a.Code = pc.upstream(a.Cluster, 503)
			return a
		}
	}
	return failed(a, fmt.Errorf("filter chain %s ends without a terminal filter the oracle reads", fc.GetName()))
}

// listenerFor finds the listener a connection lands on: for a sidecar's outbound traffic the one its
// original destination names (else the virtual outbound listener that catches the rest), for inbound
// traffic the virtual inbound listener, for a gateway the listener bound to the port.
func (pc *proxyConfig) listenerFor(q RequestIn) *listener.Listener {
	switch q.Direction {
	case "outbound":
		if l := envoy.ListenerByAddress(pc.listeners, q.Address, q.Port); l != nil {
			return l
		}
		return envoy.ListenerNamed(pc.listeners, "virtualOutbound")
	case "inbound":
		return envoy.ListenerNamed(pc.listeners, "virtualInbound")
	case "waypoint":
		// HBONE to port 15008 ends at connect_terminate, whose CONNECT route hands the tunnel's payload to
		// the internal listener main_internal with the tunnel's target (the service address the client
		// called) as its destination: the walk starts there.
		if envoy.ListenerNamed(pc.listeners, "connect_terminate") == nil {
			return nil
		}
		return envoy.ListenerNamed(pc.listeners, "main_internal")
	}
	return envoy.ListenerByAddress(pc.listeners, "0.0.0.0", q.Port)
}

// http follows a request through an HTTP connection manager: its RBAC filters, then route selection.
func (pc *proxyConfig) http(a Answer, m *hcm.HttpConnectionManager, q RequestIn, peer envoy.Peer, tls bool) Answer {
	r := envoy.Request{
		Authority: q.Authority,
		Path:      q.Path,
		Method:    q.Method,
		Headers:   lowerKeys(q.Headers),
		Scheme:    "http",
	}
	if r.Path == "" {
		r.Path = "/"
	}
	if r.Method == "" {
		r.Method = "GET"
	}
	if tls {
		r.Scheme = "https"
	}
	if q.Protocol == "grpc" {
		if _, ok := r.Headers["content-type"]; !ok {
			r.Headers["content-type"] = "application/grpc"
		}
	}
	var rc *route.RouteConfiguration
	if inline := m.GetRouteConfig(); inline != nil {
		rc = inline
	} else {
		a.RouteConfig = m.GetRds().GetRouteConfigName()
		rc = pc.routes[a.RouteConfig]
	}
	// HTTP filters run before the router: an RBAC denial answers 403 whatever the route.
	customShadow := false
	for _, f := range m.GetHttpFilters() {
		if f.GetName() != rbacHTTP {
			continue
		}
		cfg := &rbachttp.RBAC{}
		if err := f.GetTypedConfig().UnmarshalTo(cfg); err != nil {
			return failed(a, err)
		}
		if cfg.GetShadowRules() != nil && envoy.IsExtAuthzShadow(cfg.GetShadowRulesStatPrefix()) {
			d, err := envoy.Evaluate(cfg.GetShadowRules(), &r, peer)
			if err != nil {
				return failed(a, err)
			}
			if d.Policy != "" {
				customShadow = true
			}
		}
		if cfg.GetRules() == nil {
			continue
		}
		d, err := envoy.Evaluate(cfg.GetRules(), &r, peer)
		if err != nil {
			return failed(a, err)
		}
		a.RBAC = append(a.RBAC, d)
		if !d.Allowed {
			a.Outcome, a.Code = "rbac_denied", 403
			return a
		}
	}
	a.Custom = customShadow
	if rc == nil {
		a.Outcome, a.Code = "no_route", 404
		return a
	}
	// The port of the Host header takes no part when the route configuration ignores it, or the connection
	// manager strips any port (strip_matching_host_port only strips the listener's own port).
	strip := rc.GetIgnorePortInHostMatching() || m.GetStripAnyHostPort() ||
		(m.GetStripMatchingHostPort() && strings.HasSuffix(r.Authority, fmt.Sprintf(":%d", q.Port)))
	vh := envoy.MatchVirtualHost(rc, r.Authority, strip)
	if vh == nil {
		a.Outcome, a.Code = "no_virtual_host", 404
		return a
	}
	a.VirtualHost = vh.GetName()
	if vh.GetRequireTls() == route.VirtualHost_ALL && !tls {
		a.Outcome, a.Code = "tls_redirect", 301
		return a
	}
	rt, err := envoy.MatchRoute(vh, r)
	if err != nil {
		return failed(a, err)
	}
	if rt == nil {
		a.Outcome, a.Code = "no_route", 404
		return a
	}
	a.Route = rt.GetName()
	action, err := envoy.ActionOf(rt, r)
	if err != nil {
		return failed(a, err)
	}
	a.Action = action
	switch {
	case action.Redirect != "":
		a.Outcome, a.Code = "redirect", action.RedirectCode
	case action.DirectCode != 0:
		a.Outcome, a.Code = "direct_response", action.DirectCode
	default:
		a.Outcome, a.Code = pc.upstream(action.Cluster, action.NotFoundCode)
		for _, wc := range action.Weighted {
			if outcome, _ := pc.upstream(wc.Name, action.NotFoundCode); outcome != "forwarded" {
				a.Unreachable = append(a.Unreachable, wc.Name)
			}
		}
	}
	return a
}

// staticHosts counts the hosts a static cluster lists inline.
func staticHosts(c *clusterv3.Cluster) int {
	n := 0
	for _, l := range c.GetLoadAssignment().GetEndpoints() {
		n += len(l.GetLbEndpoints())
	}
	return n
}

// upstream is what sending to a cluster gives: a cluster the proxy does not have is Envoy's NC with the
// route's cluster-not-found code (503 unless the route says 404 or 500), an EDS cluster without endpoints
// or a static one without hosts its 503 UH; otherwise the request is forwarded. (A weighted split is
// forwarded: which cluster takes it is not one answer.)
func (pc *proxyConfig) upstream(name string, notFound int) (string, int) {
	if name == "" {
		return "forwarded", 0
	}
	c, ok := pc.clusters[name]
	if !ok {
		return "no_cluster", notFound
	}
	if c.GetType() == clusterv3.Cluster_EDS && pc.endpoints[name] == 0 {
		return "no_healthy_upstream", 503
	}
	// A static cluster with no hosts (BlackHoleCluster) has no upstream either.
	if c.GetType() == clusterv3.Cluster_STATIC && staticHosts(c) == 0 {
		return "no_healthy_upstream", 503
	}
	return "forwarded", 0
}

func failed(a Answer, err error) Answer {
	a.Outcome, a.Error = "unknown", err.Error()
	return a
}

func hasFilter(fc *listener.FilterChain, name string) bool {
	for _, f := range fc.GetFilters() {
		if f.GetName() == name {
			return true
		}
	}
	return false
}

func isHTTP(protocol string) bool {
	return protocol == "http" || protocol == "http2" || protocol == "grpc"
}

func lowerKeys(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[strings.ToLower(k)] = v
	}
	return out
}
