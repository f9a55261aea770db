package main

import (
	"fmt"
	"sort"
	"strings"

	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pkg/util/sets"
	"istio.io/istio/pkg/workloadapi"
	"istio.io/istio/pkg/workloadapi/security"

	"kfmesh.test/oracle/istio/envoy"
	"kfmesh.test/oracle/istio/ztunnel"
)

// A destination ztunnel's authorization of one connection. istiod's ambient index (the one the fake
// discovery server builds with PILOT_ENABLE_AMBIENT) gives the policies it sends to ztunnel, already
// converted: L7 parts dropped or turned into denials, PeerAuthentication STRICT turned into policies, and
// the list of policies each workload carries. The policies of the workload's namespace, of the root
// namespace (global scope) and the ones the workload lists apply; package ztunnel evaluates them.

// ztunnelPolicies are the converted policies by key (namespace/name), and those of global or namespace
// scope in key order.
type ztunnelPolicies struct {
	byKey  map[string]*security.Authorization
	scoped []*security.Authorization
}

// policies reads the ambient index's policies once per platform.
func (w *world) policies() *ztunnelPolicies {
	if w.ztunnel != nil {
		return w.ztunnel
	}
	p := &ztunnelPolicies{byKey: map[string]*security.Authorization{}}
	for _, wa := range w.server.Env().AmbientIndexes.Policies(nil) {
		p.byKey[wa.ResourceName()] = wa.Authorization
	}
	keys := make([]string, 0, len(p.byKey))
	for k := range p.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if scope := p.byKey[k].GetScope(); scope == security.Scope_GLOBAL || scope == security.Scope_NAMESPACE {
			p.scoped = append(p.scoped, p.byKey[k])
		}
	}
	w.ztunnel = p
	return p
}

// addressInfo is what the ambient index knows of an address of the default network.
func (w *world) addressInfo(address string) []model.AddressInfo {
	infos, _ := w.server.Env().AmbientIndexes.AddressInformation(sets.New("/" + address))
	return infos
}

// ztunnelAnswer answers a connection to q.Address:q.Port from q.SourceIP with q.Principal (none unless
// the connection is HBONE, which carries the sender's identity).
func (w *world) ztunnelAnswer(q RequestIn) Answer {
	var wl *workloadapi.Workload
	for _, info := range w.addressInfo(q.Address) {
		if wl = info.GetWorkload(); wl != nil {
			break
		}
	}
	if wl == nil {
		return Answer{Outcome: "no_workload", Error: fmt.Sprintf("no workload at %s in istiod's ambient index", q.Address)}
	}
	p := w.policies()
	var applied []*security.Authorization
	seen := map[string]bool{}
	add := func(a *security.Authorization) {
		if key := a.GetNamespace() + "/" + a.GetName(); !seen[key] {
			seen[key] = true
			applied = append(applied, a)
		}
	}
	for _, a := range p.scoped {
		if a.GetScope() == security.Scope_GLOBAL || a.GetNamespace() == wl.GetNamespace() {
			add(a)
		}
	}
	for _, k := range wl.GetAuthorizationPolicies() {
		if a := p.byKey[k]; a != nil {
			add(a)
		}
	}
	c, err := ztunnel.NewConn(q.SourceIP, q.Address, q.Port, q.Principal)
	if err != nil {
		return Answer{Outcome: "error", Error: err.Error()}
	}
	v := ztunnel.Decide(applied, c)
	a := Answer{Listener: "ztunnel", Outcome: "forwarded"}
	for _, p := range v.Denying {
		a.RBAC = append(a.RBAC, envoy.Decision{Action: "DENY", Allowed: false, Policy: p})
	}
	if !v.Allowed {
		a.Outcome = "rbac_denied"
		if len(v.Denying) == 0 {
			a.RBAC = []envoy.Decision{{Action: "ALLOW", Allowed: false}}
		}
	} else if v.AllowedBy != "" {
		a.RBAC = []envoy.Decision{{Action: "ALLOW", Allowed: true, Policy: v.AllowedBy}}
	}
	return a
}

// ztunnelOutbound answers where a client's ztunnel sends a connection to q.Address: to the waypoint the
// address uses (a Service's, else the addressed pod's), named "connect_originate (NAMESPACE/NAME)" after
// the waypoint's Service, or straight to the destination (no cluster).
func (w *world) ztunnelOutbound(q RequestIn) Answer {
	a := Answer{Listener: "ztunnel", Outcome: "forwarded"}
	var waypoint *workloadapi.GatewayAddress
	for _, info := range w.addressInfo(q.Address) {
		if s := info.GetService(); s != nil {
			waypoint = s.GetWaypoint()
			break
		}
		if wl := info.GetWorkload(); wl != nil && waypoint == nil {
			waypoint = wl.GetWaypoint()
		}
	}
	if waypoint == nil {
		return a
	}
	if h := waypoint.GetHostname(); h != nil {
		name, _, _ := strings.Cut(h.GetHostname(), ".")
		a.Cluster = fmt.Sprintf("connect_originate (%s/%s)", h.GetNamespace(), name)
		return a
	}
	return Answer{Outcome: "error", Error: fmt.Sprintf("the waypoint of %s is given by address, which the oracle does not name", q.Address)}
}
